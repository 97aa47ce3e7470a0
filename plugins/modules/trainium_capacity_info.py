#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trainium_capacity_info
short_description: Report where Trainium instance types are offered and what they hold
version_added: 0.1.0
description:
  - For one region and a list of instance types, reports the availability zones
    (by name and by zone ID) that offer each type, with the figures that sizing a
    Trainium node pool needs, read from C(ec2:DescribeInstanceTypes) -
    Neuron devices, NeuronCores, Neuron device memory, the maximum number of
    EFA interfaces, network cards, vCPUs and memory.
  - Optionally looks up capacity reservations (On-Demand Capacity Reservations
    and Capacity Blocks for ML), either by ID or all usable ones for the types.
  - A type that the region does not know, or that no zone offers, is reported
    with RV(instance_types.offered=false) rather than
    failing, so that the caller can explain the problem.
  - Reads only; it never changes anything and runs the same in check mode.
author:
  - trainium.eks developers (@trainium-eks)
options:
  instance_types:
    description:
      - EC2 instance types to report on, for example V(trn1.32xlarge).
    type: list
    elements: str
    required: true
  capacity_reservation_ids:
    description:
      - IDs of capacity reservations (or Capacity Blocks) to look up.
      - An ID that does not exist is left out of RV(capacity_reservations)
        instead of failing the task.
    type: list
    elements: str
    default: []
  quotas:
    description:
      - When V(true), also report the account's EC2 vCPU quotas of Trainium instances
        (C(Running On-Demand Trn instances), L-2C3B7624, and C(All Trn Spot Instance Requests),
        found by name) and how many vCPUs live Trainium instances outside O(cluster_name) use,
        as RV(vcpu_quotas).
    type: bool
    default: false
    version_added: 0.4.0
  cluster_name:
    description:
      - With O(quotas=true), the EKS cluster whose own nodes (tag C(eks:cluster-name)) are not
        counted as used by others.
    type: str
    version_added: 0.4.0
  lookup_capacity_reservations:
    description:
      - When V(true) and O(capacity_reservation_ids) is empty, report every
        capacity reservation of the region for O(instance_types) whose state is
        C(active) or C(scheduled).
    type: bool
    default: false
notes:
  - Needs C(ec2:DescribeInstanceTypes), C(ec2:DescribeInstanceTypeOfferings), C(ec2:DescribeRegions) (only when a type is not offered),
    C(servicequotas:ListServiceQuotas), C(servicequotas:GetServiceQuota) and C(ec2:DescribeInstances) (with O(quotas=true)),
    C(ec2:DescribeAvailabilityZones) and, for reservations,
    C(ec2:DescribeCapacityReservations).
  - The standard AWS endpoint and credential settings apply (O(endpoint_url),
    C(AWS_ENDPOINT_URL), profiles), so the module runs against any endpoint
    that speaks the EC2 API.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Find the zones of us-west-2 that offer trn1 and trn1n
  trainium.eks.trainium_capacity_info:
    region: us-west-2
    instance_types:
      - trn1.32xlarge
      - trn1n.32xlarge
  register: trn_capacity

- name: Show the zones that offer trn1.32xlarge
  ansible.builtin.debug:
    msg: "{{ trn_capacity.instance_types['trn1.32xlarge'].availability_zones }}"

- name: Check a capacity block before placing a node group on it
  trainium.eks.trainium_capacity_info:
    region: us-east-2
    instance_types: [trn2.48xlarge]
    capacity_reservation_ids: [cr-0123456789abcdef0]
  register: trn2_capacity
"""

RETURN = r"""
vcpu_quotas:
  description:
    - With O(quotas=true), per purchase option (V(ON_DEMAND), V(SPOT)) the quota's C(code), C(name),
      C(value) (vCPUs) and C(used_by_others) (vCPUs of live Trainium instances not in O(cluster_name));
      null for a quota that could not be read.
  returned: when O(quotas=true)
  type: dict
  sample: {"ON_DEMAND": {"code": "L-2C3B7624", "name": "Running On-Demand Trn instances", "value": 256, "used_by_others": 0}}
instance_types:
  description: One entry per requested instance type, keyed by type.
  returned: always
  type: dict
  contains:
    instance_type:
      description: The instance type.
      type: str
      sample: trn1.32xlarge
    known:
      description: Whether C(DescribeInstanceTypes) knows the type in this region.
      type: bool
      sample: true
    offered:
      description: Whether at least one availability zone of the region offers the type.
      type: bool
      sample: true
    offered_in:
      description:
        - For a type that no zone of this region offers, the regions that do (one
          C(DescribeInstanceTypeOfferings) call per enabled region).
      type: list
      elements: str
      returned: when RV(instance_types.offered=false)
      sample: [us-east-1, us-east-2, us-west-2]
    availability_zones:
      description: Names of the zones that offer the type, sorted.
      type: list
      elements: str
      sample: [us-west-2b, us-west-2d]
    availability_zone_ids:
      description: Zone IDs of the same zones, in the same order.
      type: list
      elements: str
      sample: [usw2-az1, usw2-az4]
    neuron_device_name:
      description: Name of the Neuron accelerator.
      type: str
      returned: when known
      sample: Trainium
    neuron_devices:
      description: Number of Neuron devices.
      type: int
      returned: when known
      sample: 16
    neuron_cores:
      description: Number of NeuronCores (devices times cores per device).
      type: int
      returned: when known
      sample: 32
    neuron_cores_per_device:
      description: NeuronCores on one device.
      type: int
      returned: when known
      sample: 2
    neuron_device_memory_mib:
      description: Neuron device memory of the whole instance, in MiB.
      type: int
      returned: when known
      sample: 524288
    efa_supported:
      description: Whether the type supports Elastic Fabric Adapter.
      type: bool
      returned: when known
      sample: true
    max_efa_interfaces:
      description: Maximum number of EFA interfaces (one per network card).
      type: int
      returned: when known
      sample: 8
    network_cards:
      description: Maximum number of network cards.
      type: int
      returned: when known
      sample: 8
    max_network_interfaces:
      description: Maximum number of network interfaces.
      type: int
      returned: when known
      sample: 40
    ipv4_addresses_per_interface:
      description: IPv4 addresses per network interface (EC2 C(Ipv4AddressesPerInterface)); the subnet check of the network role uses it.
      type: int
      returned: when known
      sample: 50
    vcpus:
      description: Default vCPUs.
      type: int
      returned: when known
      sample: 128
    memory_mib:
      description: Memory in MiB.
      type: int
      returned: when known
      sample: 524288
availability_zones:
  description: The availability zones of the region.
  returned: always
  type: list
  elements: dict
  contains:
    zone_name:
      description: Zone name.
      type: str
      sample: us-west-2d
    zone_id:
      description: Zone ID, the same physical zone in every account.
      type: str
      sample: usw2-az4
    state:
      description: Zone state.
      type: str
      sample: available
capacity_reservations:
  description: The capacity reservations found; empty unless asked for.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Reservation ID.
      type: str
      sample: cr-0123456789abcdef0
    instance_type:
      description: Instance type reserved.
      type: str
      sample: trn1.32xlarge
    availability_zone:
      description: Zone of the reservation.
      type: str
      sample: us-west-2d
    availability_zone_id:
      description: Zone ID of the reservation.
      type: str
      sample: usw2-az4
    state:
      description: Reservation state.
      type: str
      sample: active
    reservation_type:
      description: C(default) for an On-Demand Capacity Reservation, C(capacity-block) for a Capacity Block.
      type: str
      sample: capacity-block
    total_instance_count:
      description: Instances the reservation holds.
      type: int
      sample: 2
    available_instance_count:
      description: Instances of the reservation not in use now.
      type: int
      sample: 2
    instance_match_criteria:
      description: C(open) or C(targeted).
      type: str
      sample: targeted
    start_date:
      description: Start of the reservation, when it has one.
      type: str
    end_date:
      description: End of the reservation, when it has one.
      type: str
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils.trainium_capacity import gather_capacity
from ansible_collections.trainium.eks.plugins.module_utils.trainium_capacity import gather_quotas
from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import fail_on_aws_error


def main():
    argument_spec = dict(
        instance_types=dict(type="list", elements="str", required=True),
        capacity_reservation_ids=dict(type="list", elements="str", default=[]),
        lookup_capacity_reservations=dict(type="bool", default=False),
        quotas=dict(type="bool", default=False),
        cluster_name=dict(type="str"),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    if not module.params["instance_types"]:
        module.fail_json(msg="instance_types: got an empty list; allowed: one or more EC2 instance types such as trn1.32xlarge")
    else:
        facts = fail_on_aws_error(
            module, gather_capacity, module.client("ec2"), module.params["instance_types"],
            reservation_ids=module.params["capacity_reservation_ids"],
            lookup_reservations=module.params["lookup_capacity_reservations"],
            regional_client=lambda region: module.client("ec2", region=region),
        )
        if facts is not None and module.params["quotas"]:
            vcpus = {itype: entry.get("vcpus", 0) for itype, entry in facts["instance_types"].items()}
            facts["vcpu_quotas"] = fail_on_aws_error(
                module, gather_quotas, module.client("ec2"), module.client("service-quotas"), module.params["cluster_name"], vcpus)
            if facts["vcpu_quotas"] is None:
                return
        if facts is not None:
            module.exit_json(changed=False, **facts)


if __name__ == "__main__":
    main()
