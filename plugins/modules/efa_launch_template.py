#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: efa_launch_template
short_description: Manage an EC2 launch template with one EFA-only interface per network card
version_added: 0.2.0
description:
  - Creates, updates or deletes an EC2 launch template for Trainium (or other
    EFA-capable) nodes of an EKS managed node group.
  - The template holds EC2's layout for instances with several network cards
    (EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with
    multiple network cards") - an ENA primary interface at card 0 device 0, an
    EFA-only interface (C(efa-only), no IP address) at card 0 device 1 and at
    device 0 of every other card - which M(amazon.aws.ec2_launch_template) cannot
    express; a node takes one IP address of its subnet, not one per card. Also the instance type; IMDSv2
    required with a hop limit; an encrypted gp3 root volume; optionally an AMI,
    user data, a placement group and a capacity reservation or Capacity Block.
  - The desired launch template data is compared with the data of the
    template's default version (interface order, base64 user data and value
    types do not count). When they differ the module adds a version and makes
    it the default; otherwise it leaves the template alone.
  - Supports check mode and diff mode (the launch template data before and after).
author:
  - trainium.eks developers (@trainium-eks)
options:
  name:
    description:
      - Name of the launch template.
    type: str
    required: true
  state:
    description:
      - V(present) creates the template or adds a new default version when the data changed.
      - V(absent) deletes the template with all its versions; a missing template is fine.
    type: str
    default: present
    choices: [present, absent]
  efa_interfaces:
    description:
      - Number of EFA interfaces, one per network card, 1 to 32. Use the
        instance type's maximum (C(EfaInfo.MaximumEfaInterfaces)), 8 for
        trn1.32xlarge and 16 for trn1n.32xlarge and trn2.48xlarge.
      - V(0) for a type without EFA (trn1.2xlarge) gives one plain primary
        interface with O(security_group_ids).
      - Required when O(state=present).
    type: int
  security_group_ids:
    description:
      - Security groups of every EFA interface. EFA needs a group that allows all
        traffic from itself.
      - Required when O(state=present).
    type: list
    elements: str
    default: []
  instance_type:
    description:
      - Instance type of the nodes (C(InstanceType) of the launch template data),
        for example C(trn1.32xlarge). A managed node group whose launch template
        has no instance type and that lists no C(instanceTypes) launches C(t3.medium).
      - Unset leaves the instance type to the node group.
    type: str
  image_id:
    description:
      - AMI of the nodes. Leave it unset when the node group picks the AMI
        (an AMI type such as C(AL2023_x86_64_NEURON)).
    type: str
  user_data:
    description:
      - User data as plain text (for example a MIME multipart document with an
        AL2023 C(nodeadm) NodeConfig); the module base64-encodes it.
    type: str
  root_volume_size:
    description:
      - Size of the encrypted gp3 root volume in GiB, 20 to 16384. The device
        is the AMI's root device when O(image_id) is set, C(/dev/xvda) otherwise.
    type: int
    default: 500
  root_volume_iops:
    description:
      - gp3 IOPS of the root volume, 3000 to 80000. Unset uses the gp3 baseline.
    type: int
  root_volume_throughput:
    description:
      - gp3 throughput of the root volume in MiB/s, 125 to 2000. Unset uses the gp3 baseline.
    type: int
  placement_group:
    description:
      - Name of the (cluster) placement group the instances launch into.
    type: str
  placement_group_strategy:
    description:
      - When set, the module also creates the placement group O(placement_group)
        with this strategy if it is missing, and gives it the tags O(tags)
        (removing others), so that one call places a node pool.
      - A group of that name with another strategy is an error (EC2 cannot change
        the strategy). The module never deletes placement groups; use
        M(amazon.aws.ec2_placement_group) with O(amazon.aws.ec2_placement_group#module:state=absent).
      - Unset leaves the group alone (it must exist when instances launch).
    type: str
    choices: [cluster, partition, spread]
    version_added: 0.4.0
  capacity_reservation_id:
    description:
      - Capacity reservation or Capacity Block to launch into (C(CapacityReservationSpecification) target).
    type: str
  capacity_block:
    description:
      - Launch as a Capacity Block for ML (market type C(capacity-block)).
        Needs O(capacity_reservation_id).
    type: bool
    default: false
  metadata_hop_limit:
    description:
      - Hop limit of IMDSv2 responses, 1 to 64.
      - V(1) (the default) keeps the instance metadata service, and with it the
        credentials of the node's IAM role, away from pods that do not run in the
        host network namespace (EKS Best Practices Guide, "Restrict access to the
        instance profile assigned to the worker node"); pods get AWS credentials
        from IAM roles for service accounts or EKS Pod Identity instead.
      - V(2) lets every pod reach the metadata service through the node, and with
        it the node role's credentials.
    type: int
    default: 1
  tags:
    description:
      - Tags of the template itself and of the instances, volumes and network
        interfaces launched from it.
      - Tags of the template that are not listed here are removed.
    type: dict
    default: {}
notes:
  - Needs C(ec2:DescribeLaunchTemplates), C(ec2:DescribeLaunchTemplateVersions),
    C(ec2:CreateLaunchTemplate), C(ec2:CreateLaunchTemplateVersion),
    C(ec2:ModifyLaunchTemplate), C(ec2:DeleteLaunchTemplate), C(ec2:CreateTags),
    C(ec2:DeleteTags) and, with O(image_id), C(ec2:DescribeImages).
  - Old versions are kept; EC2 allows 10000 versions per template.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Launch template for trn1.32xlarge nodes (8 EFA interfaces)
  trainium.eks.efa_launch_template:
    name: trn-rehearsal-trn1
    instance_type: trn1.32xlarge
    efa_interfaces: 8
    security_group_ids: [sg-0123456789abcdef0]
    root_volume_size: 500
    placement_group: trn-rehearsal-trn1
    user_data: "{{ lookup('ansible.builtin.template', 'nodeadm.j2') }}"
    tags:
      trainium.eks/cluster: trn-rehearsal
  register: trn1_template

- name: Launch template for trn2.48xlarge nodes on a Capacity Block
  trainium.eks.efa_launch_template:
    name: trn-prod-trn2
    instance_type: trn2.48xlarge
    efa_interfaces: 16
    security_group_ids: [sg-0123456789abcdef0]
    capacity_reservation_id: cr-0123456789abcdef0
    capacity_block: true

- name: Delete the launch template
  trainium.eks.efa_launch_template:
    name: trn-rehearsal-trn1
    state: absent
"""

RETURN = r"""
placement_group:
  description:
    - The placement group as the task leaves it (would leave it, in check mode) - name, strategy and tags.
    - Null without O(placement_group_strategy).
  returned: always
  type: dict
  sample: {"name": "trn-prod-trn1", "strategy": "cluster", "tags": {"ManagedBy": "trainium.eks"}}
launch_template:
  description: The launch template; empty after O(state=absent) or when check mode would create it.
  returned: always
  type: dict
  contains:
    id:
      description: Launch template ID.
      type: str
      sample: lt-0123456789abcdef0
    name:
      description: Launch template name.
      type: str
      sample: trn-rehearsal-trn1
    default_version:
      description: Default version number; the one node groups use.
      type: int
      sample: 2
    latest_version:
      description: Latest version number.
      type: int
      sample: 2
    efa_interfaces:
      description: Number of EFA interfaces (EFA-only, or EFA with an IP address in a template made before 0.5.0) in the default version.
      type: int
      sample: 8
    tags:
      description: Tags of the template.
      type: dict
      sample: {"trainium.eks/cluster": "trn-rehearsal"}
launch_template_data:
  description: The launch template data of the default version, normalized (user data decoded).
  returned: when O(state=present)
  type: dict
diff:
  description: Launch template data before and after, normalized.
  returned: in diff mode
  type: dict
  contains:
    before:
      description: Data of the default version before the task.
      type: dict
    after:
      description: Data of the default version after the task.
      type: dict
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import fail_on_aws_error
from ansible_collections.trainium.eks.plugins.module_utils.trainium_launch_template import diff_view
from ansible_collections.trainium.eks.plugins.module_utils.trainium_launch_template import ensure_absent
from ansible_collections.trainium.eks.plugins.module_utils.trainium_launch_template import ensure_placement_group
from ansible_collections.trainium.eks.plugins.module_utils.trainium_launch_template import ensure_present
from ansible_collections.trainium.eks.plugins.module_utils.trainium_launch_template import template_result
from ansible_collections.trainium.eks.plugins.module_utils.trainium_launch_template import validation_errors


def main():
    argument_spec = dict(
        name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        efa_interfaces=dict(type="int"),
        security_group_ids=dict(type="list", elements="str", default=[]),
        instance_type=dict(type="str"),
        image_id=dict(type="str"),
        user_data=dict(type="str"),
        root_volume_size=dict(type="int", default=500),
        root_volume_iops=dict(type="int"),
        root_volume_throughput=dict(type="int"),
        placement_group=dict(type="str"),
        placement_group_strategy=dict(type="str", choices=["cluster", "partition", "spread"]),
        capacity_reservation_id=dict(type="str"),
        capacity_block=dict(type="bool", default=False),
        metadata_hop_limit=dict(type="int", default=1),
        tags=dict(type="dict", default={}),
    )
    module = AnsibleAWSModule(
        argument_spec=argument_spec,
        required_if=[("state", "present", ["efa_interfaces"])],
        required_by={"placement_group_strategy": "placement_group"},
        supports_check_mode=True,
    )
    errors = validation_errors(module.params)
    if errors:
        module.fail_json(msg=" | ".join(errors), errors=errors)
    elif module.params["state"] == "absent":
        absent(module, module.client("ec2"))
    else:
        present(module, module.client("ec2"))


def absent(module, client):
    outcome = fail_on_aws_error(module, ensure_absent, client, module.params["name"], module.check_mode)
    if outcome is None:
        return
    changed, before = outcome
    result = dict(changed=changed, launch_template={})
    if module._diff:
        result["diff"] = dict(before=diff_view(before), after={})
    module.exit_json(**result)


def present(module, client):
    params = module.params
    group = (False, None, None)
    if params["placement_group_strategy"]:
        group = fail_on_aws_error(module, ensure_placement_group, client, params["placement_group"],
                                  params["placement_group_strategy"], params["tags"], module.check_mode)
        if group is None:
            return
    outcome = fail_on_aws_error(module, ensure_present, client, params, module.check_mode)
    if outcome is None:
        return
    changed, before, after, template, data = outcome
    result = dict(
        changed=changed or group[0],
        launch_template=template_result(template, data),
        launch_template_data=diff_view(data),
        placement_group=group[2],
    )
    if module._diff:
        result["diff"] = dict(before=diff_view(before), after=diff_view(after))
        if params["placement_group_strategy"]:
            result["diff"]["before"]["placement_group"] = group[1]
            result["diff"]["after"]["placement_group"] = group[2]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
