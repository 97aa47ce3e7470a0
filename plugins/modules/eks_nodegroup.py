#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: eks_nodegroup
short_description: Manage EKS managed node groups, Trainium ones included
version_added: 0.2.0
description:
  - Creates, updates and deletes an Amazon EKS managed node group.
  - Unlike M(community.aws.eks_nodegroup) it takes every AMI type of the current
    EKS API (V(AL2023_x86_64_NEURON) and V(AL2023_x86_64_STANDARD) among them),
    the V(CAPACITY_BLOCK) capacity type, and a launch template that carries the AMI.
  - Only the options that are set are compared with the node group, so values
    that EKS fills in by itself (remote access, AMI type, Kubernetes version,
    update config) never cause an update.
  - Scaling, labels, taints and the update config are changed in place with
    C(UpdateNodegroupConfig); a different launch template version or release
    version with C(UpdateNodegroupVersion); tags with C(TagResource) and
    C(UntagResource). A difference in anything EKS cannot change in place
    (subnets, node role, AMI type, capacity type, instance types, launch
    template ID or name) fails the task and lists every such difference.
  - With only O(cluster_name) and O(name) set, the module reports the node group
    and changes nothing (handy for polling its status).
author:
  - trainium.eks developers (@trainium-eks)
options:
  cluster_name:
    description:
      - Name of the EKS cluster.
      - When the cluster does not exist, O(state=absent) reports no change and
        O(state=present) fails naming the cluster (in check mode it reports a change and warns).
    type: str
    required: true
  name:
    description:
      - Name of the node group.
      - Required with O(state=present); with O(state=absent) either O(name) or O(match_tags).
    type: str
  state:
    description:
      - V(present) creates or updates the node group, V(absent) deletes it.
      - EKS refuses to delete a node group that is C(CREATING) or C(UPDATING) (a run interrupted
        during creation). With V(absent) the module first waits, whatever O(wait) says and for at
        most O(wait_timeout) in all, until each node group leaves those states, and retries a delete
        refused with C(ResourceInUseException) with backoff within the same bound.
    type: str
    choices: [present, absent]
    default: present
  match_tags:
    description:
      - Only with O(state=absent) and without O(name) - delete every node group of
        O(cluster_name) whose tags include all of these.
    type: dict
  node_role_arn:
    description:
      - ARN of the IAM role of the nodes. Required to create; cannot be changed.
    type: str
  subnets:
    description:
      - IDs of the subnets of the nodes. Required to create; cannot be changed.
    type: list
    elements: str
  launch_template:
    description:
      - Launch template of the nodes, by ID or by name. Only the version can be changed.
    type: dict
    suboptions:
      id:
        description: ID of the launch template.
        type: str
      name:
        description: Name of the launch template.
        type: str
      version:
        description:
          - Version of the launch template, for example V(3). Unset uses the template's default version at creation
            and is not compared afterwards.
        type: str
  ami_type:
    description:
      - AMI type of the nodes. Leave it unset when the launch template names the AMI.
      - Cannot be changed.
    type: str
    choices:
      - AL2_x86_64
      - AL2_x86_64_GPU
      - AL2_ARM_64
      - CUSTOM
      - BOTTLEROCKET_ARM_64
      - BOTTLEROCKET_x86_64
      - BOTTLEROCKET_ARM_64_FIPS
      - BOTTLEROCKET_x86_64_FIPS
      - BOTTLEROCKET_ARM_64_NVIDIA
      - BOTTLEROCKET_x86_64_NVIDIA
      - BOTTLEROCKET_ARM_64_NVIDIA_FIPS
      - BOTTLEROCKET_x86_64_NVIDIA_FIPS
      - WINDOWS_CORE_2019_x86_64
      - WINDOWS_FULL_2019_x86_64
      - WINDOWS_CORE_2022_x86_64
      - WINDOWS_FULL_2022_x86_64
      - WINDOWS_CORE_2025_x86_64
      - WINDOWS_FULL_2025_x86_64
      - AL2023_x86_64_STANDARD
      - AL2023_ARM_64_STANDARD
      - AL2023_x86_64_NEURON
      - AL2023_x86_64_NVIDIA
      - AL2023_ARM_64_NVIDIA
  release_version:
    description:
      - AMI release version of an EKS optimized AMI, for example V(1.34.2-20251120). Changed with C(UpdateNodegroupVersion).
    type: str
  capacity_type:
    description:
      - How the instances are bought. V(CAPACITY_BLOCK) needs a launch template that targets the Capacity Block.
      - Cannot be changed.
    type: str
    choices: [ON_DEMAND, SPOT, CAPACITY_BLOCK]
  instance_types:
    description:
      - Instance types of the nodes. Only when the launch template names no instance type. Cannot be changed.
    type: list
    elements: str
  scaling_config:
    description:
      - Sizes of the node group; V(min_size) <= V(desired_size) <= V(max_size) and V(max_size) >= 1.
      - Sizes left unset keep their current value (EKS picks defaults at creation).
    type: dict
    suboptions:
      min_size:
        description: Minimum number of nodes.
        type: int
      max_size:
        description: Maximum number of nodes.
        type: int
      desired_size:
        description: Desired number of nodes.
        type: int
  update_config:
    description:
      - How many nodes may be unavailable during a version update; set one of the two.
    type: dict
    suboptions:
      max_unavailable:
        description: Number of nodes.
        type: int
      max_unavailable_percentage:
        description: Percentage of the nodes, 1 to 100.
        type: int
  labels:
    description:
      - Kubernetes labels of the nodes. When set, labels not listed are removed.
    type: dict
  taints:
    description:
      - Kubernetes taints of the nodes. When set, taints not listed are removed.
        A taint is identified by its key and effect.
    type: list
    elements: dict
    suboptions:
      key:
        description: Taint key.
        type: str
        required: true
      value:
        description: Taint value.
        type: str
      effect:
        description:
          - Taint effect, in the EKS spelling or the Kubernetes one (converted).
        type: str
        required: true
        choices: [NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE, NoSchedule, NoExecute, PreferNoSchedule]
  wait:
    description:
      - Wait until the node group is V(ACTIVE) (or gone with O(state=absent)).
        A node group that goes V(CREATE_FAILED) or V(DEGRADED) fails the task with its health issues.
      - With O(state=absent) the wait before the delete, for a node group that is C(CREATING) or
        C(UPDATING), always happens; this option only decides whether to wait afterwards until it is gone.
    type: bool
    default: false
  replace_failed:
    description:
      - What to do with a node group of this name that ended V(CREATE_FAILED) (short quota or capacity,
        for example). V(true) reports its health issues as a warning, deletes it, waits until it is gone
        and creates it again; V(false) fails with its health issues and leaves it.
      - A node group that failed never becomes V(ACTIVE) and EKS cannot update it, so taking it as
        existing would only fail later.
      - Only a task that gives what creating needs (O(node_role_arn), O(subnets)) replaces; a task that
        names the node group only reads it, so a wait sees V(CREATE_FAILED).
    type: bool
    default: true
    version_added: 0.4.0
  wait_timeout:
    description:
      - Seconds to wait. A Trainium node group takes about 5 minutes to become active.
    type: int
    default: 1200
notes:
  - Needs C(eks:DescribeCluster), C(eks:DescribeNodegroup), C(eks:ListNodegroups), C(eks:CreateNodegroup),
    C(eks:UpdateNodegroupConfig), C(eks:UpdateNodegroupVersion), C(eks:DeleteNodegroup), C(eks:TagResource),
    C(eks:UntagResource) and C(iam:PassRole) for the node role.
  - EKS accepts one update at a time; when both the configuration and the version change, the module waits
    for the first update to finish before it starts the second.
  - On a Capacity Block (O(capacity_type=CAPACITY_BLOCK)) EKS updates the version only at desired size 0; the
    module scales the node group to 0 first, updates it, then scales it back, with a warning (its pods stop).
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.tags
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Two trn1.32xlarge nodes from a launch template that carries the Neuron AMI
  trainium.eks.eks_nodegroup:
    cluster_name: trn-rehearsal
    name: trn-rehearsal-trn1
    node_role_arn: arn:aws:iam::123456789012:role/trn-rehearsal-node
    subnets: [subnet-0123456789abcdef0]
    launch_template:
      id: lt-0123456789abcdef0
      version: "1"
    capacity_type: ON_DEMAND
    scaling_config:
      min_size: 2
      max_size: 2
      desired_size: 2
    labels:
      trainium.eks/pool: trn1
    taints:
      - key: aws.amazon.com/neuron
        effect: NoSchedule
    tags:
      trainium.eks/cluster: trn-rehearsal
    wait: true

- name: EKS picks the AL2023 Neuron AMI itself
  trainium.eks.eks_nodegroup:
    cluster_name: trn-rehearsal
    name: trn-rehearsal-small
    node_role_arn: arn:aws:iam::123456789012:role/trn-rehearsal-node
    subnets: [subnet-0123456789abcdef0]
    ami_type: AL2023_x86_64_NEURON
    instance_types: [trn1.2xlarge]
    scaling_config: {min_size: 0, max_size: 4, desired_size: 1}

- name: Read the node group's status
  trainium.eks.eks_nodegroup:
    cluster_name: trn-rehearsal
    name: trn-rehearsal-trn1
  register: trn_nodegroup

- name: Delete every node group of the cluster tagged for it
  trainium.eks.eks_nodegroup:
    cluster_name: trn-rehearsal
    state: absent
    match_tags:
      trainium.eks/cluster: trn-rehearsal
    wait: true
"""

RETURN = r"""
replaced:
  description:
    - The node group that was V(CREATE_FAILED) and was replaced (or would be, in check mode), with its health issues.
  returned: when a failed node group was replaced
  type: dict
  sample: {"name": "trn-rehearsal-trn1", "status": "CREATE_FAILED",
           "health": "AsgInstanceLaunchFailures: Could not launch On-Demand Instances. InsufficientInstanceCapacity ..."}
  version_added: 0.4.0
nodegroup:
  description:
    - The node group (after the change; in check mode as it would be). Empty when it does not exist.
    - Keys are those of C(DescribeNodegroup) in snake case; labels and tags keep their keys.
  returned: always
  type: dict
  contains:
    name:
      description: Node group name.
      type: str
      sample: trn-rehearsal-trn1
    arn:
      description: Node group ARN.
      type: str
      sample: arn:aws:eks:us-west-2:123456789012:nodegroup/trn-rehearsal/trn-rehearsal-trn1/0ec7a0b4-5c1b-4a2e-9b7e-6a0d1f0e9a11
    cluster_name:
      description: Cluster name.
      type: str
      sample: trn-rehearsal
    status:
      description: C(CREATING), C(ACTIVE), C(UPDATING), C(DELETING), C(CREATE_FAILED), C(DELETE_FAILED) or C(DEGRADED).
      type: str
      sample: ACTIVE
    capacity_type:
      description: Capacity type.
      type: str
      sample: ON_DEMAND
    ami_type:
      description: AMI type (C(CUSTOM) when the launch template names the AMI).
      type: str
      sample: AL2023_x86_64_NEURON
    instance_types:
      description: Instance types.
      type: list
      elements: str
      sample: [trn1.32xlarge]
    subnets:
      description: Subnet IDs.
      type: list
      elements: str
      sample: [subnet-0123456789abcdef0]
    node_role:
      description: ARN of the node role.
      type: str
      sample: arn:aws:iam::123456789012:role/trn-rehearsal-node
    scaling_config:
      description: Sizes.
      type: dict
      sample: {min_size: 2, max_size: 2, desired_size: 2}
    update_config:
      description: Update config.
      type: dict
      returned: when set
      sample: {max_unavailable: 1}
    labels:
      description: Kubernetes labels.
      type: dict
      sample: {trainium.eks/pool: trn1}
    taints:
      description: Kubernetes taints, effects in the EKS spelling.
      type: list
      elements: dict
      sample: [{key: aws.amazon.com/neuron, effect: NO_SCHEDULE}]
    launch_template:
      description: Launch template reference.
      type: dict
      returned: when the node group uses one
      sample: {id: lt-0123456789abcdef0, name: trn-rehearsal-trn1, version: "1"}
    release_version:
      description: AMI release version.
      type: str
      sample: 1.34.2-20251120
    version:
      description: Kubernetes version of the nodes.
      type: str
      sample: "1.34"
    health:
      description: Health issues reported by EKS.
      type: dict
      sample: {issues: []}
    resources:
      description: Auto Scaling groups and remote access security group.
      type: dict
    tags:
      description: Tags.
      type: dict
      sample: {trainium.eks/cluster: trn-rehearsal}
deleted:
  description: Names of the node groups deleted (or that would be, in check mode).
  returned: when O(state=absent)
  type: list
  elements: str
  sample: [trn-rehearsal-trn1]
updates:
  description: The EKS updates started (C(UpdateNodegroupConfig), C(UpdateNodegroupVersion)), as EKS returned them.
  returned: when O(state=present)
  type: list
  elements: dict
diff:
  description: Node group before and after, when run with C(--diff).
  returned: when diff mode is on
  type: dict
"""

import time

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_nodegroup as ng


def _absent(module, client):
    params = module.params
    cluster, name = params["cluster_name"], params["name"]
    if ng.describe_cluster(client, cluster) is None:
        module.exit_json(changed=False, nodegroup={}, deleted=[])
        return
    if name:
        candidates = [name]
    else:
        candidates = ng.list_nodegroups(client, cluster)
    targets = []
    before = {}
    for candidate in candidates:
        current = ng.describe_nodegroup(client, cluster, candidate)
        if current is None:
            continue
        if params["match_tags"] and any((current.get("tags") or {}).get(k) != str(v) for k, v in params["match_tags"].items()):
            continue
        targets.append(current)
        before[candidate] = ng.summarize(current)
    if not module.check_mode:
        deadline = time.monotonic() + params["wait_timeout"]
        for current in targets:
            status = current.get("status")
            if status in ng.BUSY_STATES:
                # EKS refuses DeleteNodegroup while it is CREATING/UPDATING (a run interrupted
                # during creation): wait that out whatever wait says.
                settled = ng.wait_until_settled(client, cluster, current["nodegroupName"], max(1, deadline - time.monotonic()))
                status = settled.get("status") if settled else "DELETING"
            if status != "DELETING":
                ng.delete_nodegroup(client, cluster, current["nodegroupName"], timeout=max(0, deadline - time.monotonic()))
        if params["wait"]:
            for current in targets:
                ng.wait_for_nodegroup(client, cluster, current["nodegroupName"], gone=True, timeout=params["wait_timeout"])
    result = dict(changed=bool(targets), nodegroup={}, deleted=[t["nodegroupName"] for t in targets])
    if name and targets:
        result["nodegroup"] = dict(ng.summarize(targets[0]), status="DELETING")
    if module._diff:
        result["diff"] = {"before": before, "after": {}}
    module.exit_json(**result)


def _present(module, client, desired):
    params = module.params
    cluster, name = params["cluster_name"], params["name"]
    if ng.describe_cluster(client, cluster) is None:
        message = f"cluster_name: EKS cluster {cluster} does not exist in {module.region}; allowed: the name of an existing cluster"
        if module.check_mode:
            common.warn(module, f"{message} (check mode: the node group {name} would be created with the cluster)")
            module.exit_json(changed=True, nodegroup={}, updates=[])
            return
        module.fail_json(msg=message)
        return
    current = ng.describe_nodegroup(client, cluster, name)
    if current is None:
        _create(module, client, desired)
        return
    if current.get("status") == "DELETING":
        module.fail_json(msg=f"node group {name} of cluster {cluster} is being deleted; run again once it is gone", nodegroup=ng.summarize(current))
        return
    # A task that names the node group only (the waits) reads it; replacing needs what creating needs.
    if current.get("status") == "CREATE_FAILED" and not ng.creation_errors(desired):
        _replace_failed(module, client, desired, current)
        return
    plan = ng.plan_changes(current, desired, purge_tags=params["purge_tags"])
    if plan["errors"]:
        module.fail_json(
            msg=f"node group {name} of cluster {cluster} differs in what EKS cannot change in place - "
                + " | ".join(plan["errors"])
                + " - delete it (state=absent) or choose another name",
            nodegroup=ng.summarize(current),
        )
        return
    updates = []
    after = ng.predict(current, plan)
    steps = ng.update_steps(current, desired, plan)
    sizes = current.get("scalingConfig") or {}
    if ng.block_version_update(current, plan) and int(sizes.get("desiredSize") or 0) > 0:
        common.warn(module, f"node group {name} of cluster {cluster} is on a Capacity Block, where EKS updates versions only at desired size 0 "
                            f"(EKS User Guide, \"Create a managed node group with Capacity Blocks for ML\"): "
                            + ("check mode: it would be scaled from" if module.check_mode else "scaling it from")
                            + f" {sizes.get('desiredSize')} nodes to 0, updating it, then scaling it back; its running pods stop")
    if plan["changed"] and not module.check_mode:
        for index, (kind, request) in enumerate(steps):
            if index:
                # EKS runs one update at a time.
                ng.wait_for_nodegroup(client, cluster, name, timeout=params["wait_timeout"])
            update = ng.update_nodegroup_config if kind == "config" else ng.update_nodegroup_version
            updates.append(update(client, request, timeout=params["wait_timeout"]))
        common.update_tags(client, current["nodegroupArn"], plan["tags_to_set"], plan["tags_to_remove"])
        after = ng.describe_nodegroup(client, cluster, name) or after
    if params["wait"] and not module.check_mode and after.get("status") != "ACTIVE":
        after = ng.wait_for_nodegroup(client, cluster, name, timeout=params["wait_timeout"])
    result = dict(changed=plan["changed"], nodegroup=ng.summarize(after), updates=updates)
    if module._diff:
        result["diff"] = {"before": ng.summarize(current), "after": ng.summarize(ng.predict(current, plan))}
    module.exit_json(**result)


def _replace_failed(module, client, desired, current):
    """A node group that ended CREATE_FAILED: report it, and delete and create it again (or fail, replace_failed=false)."""
    params = module.params
    cluster, name = params["cluster_name"], params["name"]
    health = ng.health_message(current)
    if not params["replace_failed"]:
        module.fail_json(msg=f"node group {name} of cluster {cluster} is CREATE_FAILED ({health}); fix the cause, then delete it "
                             "or run again with replace_failed=true", nodegroup=ng.summarize(current))
        return
    common.warn(module, f"node group {name} of cluster {cluster} is CREATE_FAILED ({health}); "
                + ("check mode: it would be deleted and created again" if module.check_mode else "deleting it and creating it again"))
    if not module.check_mode:
        ng.delete_nodegroup(client, cluster, name, timeout=params["wait_timeout"])
        ng.wait_for_nodegroup(client, cluster, name, gone=True, timeout=params["wait_timeout"])
    _create(module, client, desired, replaced={"name": name, "status": current.get("status"), "health": health},
            before=ng.summarize(current))


def _create(module, client, desired, replaced=None, before=None):
    params = module.params
    errors = ng.creation_errors(desired)
    if errors:
        module.fail_json(msg=f"node group {params['name']} of cluster {params['cluster_name']} does not exist - " + " | ".join(errors))
        return
    request = ng.create_request(params["cluster_name"], params["name"], desired)
    if module.check_mode:
        nodegroup = ng.predict_new(request)
    else:
        nodegroup = ng.create_nodegroup(client, request)
        if params["wait"]:
            nodegroup = ng.wait_for_nodegroup(client, params["cluster_name"], params["name"], timeout=params["wait_timeout"])
    result = dict(changed=True, nodegroup=ng.summarize(nodegroup), updates=[])
    if replaced:
        result["replaced"] = replaced
    if module._diff:
        result["diff"] = {"before": before or {}, "after": ng.summarize(ng.predict_new(request))}
    module.exit_json(**result)


def main():
    argument_spec = dict(
        cluster_name=dict(type="str", required=True),
        name=dict(type="str"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        match_tags=dict(type="dict"),
        node_role_arn=dict(type="str"),
        subnets=dict(type="list", elements="str"),
        launch_template=dict(type="dict", options=dict(
            id=dict(type="str"),
            name=dict(type="str"),
            version=dict(type="str"),
        )),
        ami_type=dict(type="str", choices=list(ng.AMI_TYPES)),
        release_version=dict(type="str"),
        capacity_type=dict(type="str", choices=list(common.CAPACITY_TYPES)),
        instance_types=dict(type="list", elements="str"),
        scaling_config=dict(type="dict", options=dict(
            min_size=dict(type="int"),
            max_size=dict(type="int"),
            desired_size=dict(type="int"),
        )),
        update_config=dict(type="dict", options=dict(
            max_unavailable=dict(type="int"),
            max_unavailable_percentage=dict(type="int"),
        )),
        labels=dict(type="dict"),
        taints=dict(type="list", elements="dict", options=dict(
            key=dict(type="str", required=True, no_log=False),
            value=dict(type="str"),
            effect=dict(type="str", required=True, choices=list(common.TAINT_EFFECT_CHOICES)),
        )),
        replace_failed=dict(type="bool", default=True),
        **common.tags_and_wait_options(wait_timeout=1200),
    )
    module = AnsibleAWSModule(
        argument_spec=argument_spec,
        supports_check_mode=True,
        required_if=[("state", "present", ["name"])],
        required_one_of=[("name", "match_tags")],
        mutually_exclusive=[("name", "match_tags")],
    )
    params = module.params
    errors = ng.validate_params(params)
    if params["match_tags"] is not None and params["state"] == "present":
        module.fail_json(msg="match_tags: set with state=present; allowed: only with state=absent")
    elif errors:
        module.fail_json(msg=f"{len(errors)} problem(s) in the parameters: " + " | ".join(errors))
    elif params["state"] == "absent":
        common.fail_on_aws_error(module, _absent, module, module.client("eks"))
    else:
        common.fail_on_aws_error(module, _present, module, module.client("eks"), ng.desired_state(params))


if __name__ == "__main__":
    main()
