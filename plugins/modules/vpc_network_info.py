#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: vpc_network_info
short_description: Read a cluster's VPC network in one call and say whether it is already in place
version_added: 0.4.0
description:
  - Reads the VPC named O(vpc_name) with its subnets, internet gateway, the
    Elastic IPs and NAT gateways of the cluster and its route tables, with a
    handful of describe calls, and compares them with what the caller wants.
  - RV(in_place=true) means every resource exists with the CIDR, zone, tags,
    associations and routes asked for, so the tasks that would create or
    update them can be skipped. Otherwise RV(differences) says, one sentence
    each, what is missing or different.
  - Tags are compared as a subset (extra tags on a resource are not a
    difference); routes and subnet associations of the route tables are
    compared exactly, apart from the VPC's local route.
  - Reads only; it never changes anything and runs the same in check mode.
  - The trainium.eks.network role calls it first, so that a rerun on a
    converged network makes one call instead of about ten.
author:
  - trainium.eks developers (@trainium-eks)
options:
  cluster_name:
    description:
      - Name of the cluster; the Elastic IPs are looked up by the tag
        C(trainium.eks/cluster) with this value.
    type: str
    required: true
  vpc_name:
    description:
      - Value of the C(Name) tag of the VPC.
    type: str
    required: true
  vpc_cidr:
    description:
      - IPv4 CIDR block of the VPC.
    type: str
    required: true
  vpc_tags:
    description:
      - Tags the VPC must carry.
    type: dict
    default: {}
  subnets:
    description:
      - The subnets the VPC must hold, found by CIDR block.
    type: list
    elements: dict
    default: []
    suboptions:
      key:
        description:
          - Name the caller gives the subnet, for example V(us-west-2a/private); the key of RV(subnet_ids).
        type: str
        required: true
      cidr:
        description:
          - IPv4 CIDR block of the subnet.
        type: str
        required: true
      availability_zone:
        description:
          - Zone of the subnet.
        type: str
        required: true
      tags:
        description:
          - Tags the subnet must carry.
        type: dict
        default: {}
  internet_gateway_tags:
    description:
      - Tags the internet gateway attached to the VPC must carry.
    type: dict
    default: {}
  nat_gateways:
    description:
      - The NAT gateways the VPC must hold, one per zone, each with an Elastic IP.
    type: list
    elements: dict
    default: []
    suboptions:
      zone:
        description:
          - Zone of the NAT gateway; the key of RV(nat_gateway_ids).
        type: str
        required: true
      subnet_key:
        description:
          - O(subnets[].key) of the public subnet the NAT gateway sits in.
        type: str
        required: true
      eip_tags:
        description:
          - Tags that identify its Elastic IP.
        type: dict
        required: true
      tags:
        description:
          - Tags the NAT gateway must carry.
        type: dict
        default: {}
  route_tables:
    description:
      - The route tables the VPC must hold, found by their C(Name) tag.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description:
          - Value of the C(Name) tag.
        type: str
        required: true
      tags:
        description:
          - Tags the route table must carry.
        type: dict
        default: {}
      subnet_keys:
        description:
          - O(subnets[].key) of the subnets associated with it, exactly.
        type: list
        elements: str
        default: []
      target:
        description:
          - Where 0.0.0.0/0 goes, its only route besides the local one -
            V(internet_gateway), or V(nat:<zone>) for the NAT gateway of a zone.
        type: str
        required: true
notes:
  - Needs C(ec2:DescribeVpcs), C(ec2:DescribeVpcAttribute), C(ec2:DescribeSubnets),
    C(ec2:DescribeInternetGateways), C(ec2:DescribeAddresses),
    C(ec2:DescribeNatGateways) and C(ec2:DescribeRouteTables).
  - A NAT gateway that is still C(pending) is a difference.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Read the network of trn-prod
  trainium.eks.vpc_network_info:
    cluster_name: trn-prod
    vpc_name: trn-prod-vpc
    vpc_cidr: 10.0.0.0/16
    subnets:
      - {key: us-west-2a/private, cidr: 10.0.0.0/18, availability_zone: us-west-2a}
      - {key: us-west-2a/public, cidr: 10.0.128.0/22, availability_zone: us-west-2a}
    nat_gateways:
      - {zone: us-west-2a, subnet_key: us-west-2a/public, eip_tags: {Name: trn-prod-nat-us-west-2a}}
    route_tables:
      - {name: trn-prod-public, subnet_keys: [us-west-2a/public], target: internet_gateway}
      - {name: trn-prod-private-us-west-2a, subnet_keys: [us-west-2a/private], target: "nat:us-west-2a"}
  register: network_now

- name: Create what is missing
  ansible.builtin.include_tasks: create.yml
  when: not network_now.in_place
"""

RETURN = r"""
in_place:
  description: Whether every resource asked for exists as asked.
  returned: always
  type: bool
  sample: true
differences:
  description: One sentence per missing or different resource; empty when RV(in_place=true).
  returned: always
  type: list
  elements: str
  sample: ["NAT gateway in us-west-2b does not exist"]
vpc_id:
  description: ID of the VPC, or null.
  returned: always
  type: str
  sample: vpc-0123456789abcdef0
subnet_ids:
  description: Subnet IDs by O(subnets[].key), for the subnets found.
  returned: always
  type: dict
  sample: {"us-west-2a/private": "subnet-0123456789abcdef0"}
internet_gateway_id:
  description: ID of the internet gateway attached to the VPC, or null.
  returned: always
  type: str
nat_gateway_ids:
  description: NAT gateway IDs by zone, for the NAT gateways found.
  returned: always
  type: dict
eip_allocation_ids:
  description: Allocation IDs of the NAT gateways' Elastic IPs by zone.
  returned: always
  type: dict
route_table_ids:
  description: Route table IDs by name, for the route tables found.
  returned: always
  type: dict
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import fail_on_aws_error
from ansible_collections.trainium.eks.plugins.module_utils.trainium_network import network_differences
from ansible_collections.trainium.eks.plugins.module_utils.trainium_network import read_network


def main():
    argument_spec = dict(
        cluster_name=dict(type="str", required=True),
        vpc_name=dict(type="str", required=True),
        vpc_cidr=dict(type="str", required=True),
        vpc_tags=dict(type="dict", default={}),
        subnets=dict(type="list", elements="dict", default=[], options=dict(
            key=dict(type="str", required=True, no_log=False),
            cidr=dict(type="str", required=True),
            availability_zone=dict(type="str", required=True),
            tags=dict(type="dict", default={}),
        )),
        internet_gateway_tags=dict(type="dict", default={}),
        nat_gateways=dict(type="list", elements="dict", default=[], options=dict(
            zone=dict(type="str", required=True),
            subnet_key=dict(type="str", required=True, no_log=False),
            eip_tags=dict(type="dict", required=True),
            tags=dict(type="dict", default={}),
        )),
        route_tables=dict(type="list", elements="dict", default=[], options=dict(
            name=dict(type="str", required=True),
            tags=dict(type="dict", default={}),
            subnet_keys=dict(type="list", elements="str", default=[], no_log=False),
            target=dict(type="str", required=True),
        )),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    for table in params["route_tables"]:
        target = table["target"]
        if target != "internet_gateway" and not (target.startswith("nat:") and len(target) > 4):
            module.fail_json(msg=f"route_tables[].target: got {target!r} (str); allowed: internet_gateway or nat:<zone>")
    found = fail_on_aws_error(module, read_network, module.client("ec2"), params["vpc_name"], params["vpc_cidr"], params["cluster_name"])
    if found is None:
        return
    differences, ids = network_differences(params, found)
    module.exit_json(changed=False, in_place=not differences, differences=differences, **ids)


if __name__ == "__main__":
    main()
