# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The network role against moto server: a cut-short run, bring your own, bad input, per-zone NAT gateways.

The role flow (converge, idempotence, check mode, absent) is owned by the Molecule scenario molecule/network.
Every assertion lists what really exists in the account (boto3), against the
baseline of a fresh moto.
"""

from __future__ import annotations

import re

import pytest

CLUSTER = "trn-rehearsal"
OWNED = [{"Name": "tag:trainium.eks/cluster", "Values": [CLUSTER]}, {"Name": "tag:ManagedBy", "Values": ["trainium.eks"]}]
PLAYBOOK = """
- name: Network
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.preflight
      when: network_state | default('present') == 'present'
    - role: trainium.eks.network
      vars:
        network_wait_delay: 1
  post_tasks:
    - name: Print the network facts
      ansible.builtin.debug:
        msg: "NETWORK_FACTS {{ network_facts | default({}) | to_json }}"
"""


def network_resources(aws):
    """The VPC resources of the account (defaults left out), by kind."""
    ec2 = aws.client("ec2")
    return {
        "vpcs": sorted(v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")),
        "subnets": sorted(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if not s.get("DefaultForAz")),
        "internet_gateways": sorted(g["InternetGatewayId"] for g in ec2.describe_internet_gateways()["InternetGateways"]),
        "nat_gateways": sorted(n["NatGatewayId"] for n in ec2.describe_nat_gateways()["NatGateways"] if n["State"] != "deleted"),
        "addresses": sorted(a["AllocationId"] for a in ec2.describe_addresses()["Addresses"]),
        "route_tables": sorted(r["RouteTableId"] for r in ec2.describe_route_tables()["RouteTables"]),
        "security_groups": sorted(g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]),
    }


@pytest.fixture()
def network_playbook(tmp_path):
    path = tmp_path / "network.yml"
    path.write_text(PLAYBOOK)
    return str(path)


def test_absent_after_a_cut_short_run(aws, run_playbook, network_playbook):
    """Only the VPC, a subnet, a detached internet gateway and an Elastic IP exist, tagged as the role tags them."""
    baseline = network_resources(aws)
    ec2 = aws.client("ec2")

    def tags(name):
        return [{"ResourceType": kind, "Tags": [{"Key": "trainium.eks/cluster", "Value": CLUSTER}, {"Key": "ManagedBy", "Value": "trainium.eks"},
                                                {"Key": "Name", "Value": name}]} for kind in ("vpc", "subnet", "internet-gateway", "elastic-ip")]

    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=tags(f"{CLUSTER}-vpc")[:1])["Vpc"]["VpcId"]
    ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.0.0.0/19", AvailabilityZone="us-west-2a", TagSpecifications=tags("p")[1:2])
    ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.0.64.0/24", AvailabilityZone="us-west-2a", TagSpecifications=tags("q")[1:2])
    ec2.create_internet_gateway(TagSpecifications=tags(f"{CLUSTER}-igw")[2:3])
    ec2.allocate_address(Domain="vpc", TagSpecifications=tags(f"{CLUSTER}-nat-us-west-2a")[3:])
    foreign_vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    assert network_resources(aws) != baseline

    removed = run_playbook(network_playbook, extra_vars={"network_state": "absent"})
    assert removed.rc == 0, removed
    left = network_resources(aws)
    # The untagged VPC with the same range is not ours and stays.
    assert left["vpcs"] == sorted(baseline["vpcs"] + [foreign_vpc])
    assert {kind: ids for kind, ids in left.items() if kind not in ("vpcs", "route_tables", "security_groups")} == {
        kind: ids for kind, ids in baseline.items() if kind not in ("vpcs", "route_tables", "security_groups")
    }
    assert ec2.describe_vpcs(Filters=OWNED)["Vpcs"] == []


def test_bring_your_own_missing_zone_fails_and_creates_nothing(aws, run_playbook, network_playbook):
    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    only_a = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.0.0/20", AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    before = network_resources(aws)
    result = run_playbook(network_playbook, extra_vars={"network_vpc_id": vpc_id, "network_private_subnet_ids": [only_a]})
    assert result.rc != 0, result
    assert ("network_private_subnet_ids: the cluster needs a private subnet in every zone of us-west-2a, us-west-2b; "
            "the subnets given cover us-west-2a; missing: us-west-2b") in result.text
    assert network_resources(aws) == before

    # Both zones given: accepted, nothing created; absent leaves the user's VPC alone.
    in_b = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.16.0/20", AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
    before = network_resources(aws)
    byo = {"network_vpc_id": vpc_id, "network_private_subnet_ids": [only_a, in_b]}
    accepted = run_playbook(network_playbook, extra_vars=byo)
    assert accepted.rc == 0, accepted
    assert accepted.recap["changed"] == 0
    assert f'"private_subnet_ids": ["{only_a}", "{in_b}"]' in accepted.text and '"created": false' in accepted.text
    untouched = run_playbook(network_playbook, extra_vars=dict(byo, network_state="absent"))
    assert untouched.rc == 0, untouched
    assert network_resources(aws) == before


def test_subnets_too_small_for_the_pools_are_refused_before_anything_is_created(aws, run_playbook, network_playbook, local_vars):
    """The inventory's trn1 pool (2 x trn1.32xlarge, 2 x 50 addresses each with the VPC CNI's defaults) needs 200
    addresses in its zone: a /25 (123 usable) is refused naming the prefix that holds them, a brought /26 too."""
    before = network_resources(aws)
    pool = local_vars["trainium_node_pools"][0]
    need = 2 * 50 * pool.get("max_count", pool["count"])
    result = run_playbook(network_playbook, extra_vars={"network_private_subnet_prefix": 25})
    assert result.rc != 0, result
    assert "1 problem(s) with the subnet sizes; the network was not created or changed" in result.text
    assert re.search(rf"network_private_subnet_prefix: the private subnet 10\.0\.\d+\.\d+/25 of us-west-2\w has 123 usable addresses "
                     rf"and its node pools need up to {need} \(trn1 \d+ x trn1\.32xlarge x 100; VPC CNI defaults", result.text), result.text
    assert "allowed: 24 or shorter" in result.text
    assert network_resources(aws) == before

    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
    brought = [ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
               for cidr, zone in (("10.30.0.0/26", "us-west-2a"), ("10.30.1.0/26", "us-west-2b"),
                                  ("10.30.2.0/26", "us-west-2c"), ("10.30.3.0/26", "us-west-2d"))]
    before = network_resources(aws)
    result = run_playbook(network_playbook, extra_vars={"network_vpc_id": vpc_id, "network_private_subnet_ids": brought})
    assert result.rc != 0, result
    assert re.search(r"network_private_subnet_ids: subnet-\w+ \(10\.30\.\d\.0/26\) of us-west-2\w has 59 usable addresses", result.text), result.text
    assert "allowed: a private subnet of /24 or wider in us-west-2" in result.text
    assert network_resources(aws) == before


def test_bad_input_fails_before_any_call(aws, run_playbook, network_playbook):
    before = network_resources(aws)
    result = run_playbook(network_playbook, extra_vars={"network_nat_gateways": "many"})
    assert result.rc != 0, result
    assert "value of network_nat_gateways must be one of: single, per_zone, got: many" in result.text
    result = run_playbook(network_playbook, extra_vars={"network_vpc_cidr": "10.0.0.0/8"})
    assert result.rc != 0, result
    assert "network_vpc_cidr: got '10.0.0.0/8' (str); allowed: an IPv4 network in CIDR notation with a prefix from /16 to /24" in result.text
    assert network_resources(aws) == before


def test_per_zone_nat_gateways(aws, run_playbook, network_playbook):
    baseline = network_resources(aws)
    ec2 = aws.client("ec2")
    created = run_playbook(network_playbook, extra_vars={"network_nat_gateways": "per_zone"})
    assert created.rc == 0, created
    nats = {n["SubnetId"]: n["NatGatewayId"] for n in ec2.describe_nat_gateways(Filters=OWNED)["NatGateways"] if n["State"] == "available"}
    assert len(nats) == 2 and len(ec2.describe_addresses(Filters=OWNED)["Addresses"]) == 2
    for table in ec2.describe_route_tables(Filters=OWNED)["RouteTables"]:
        name = {t["Key"]: t["Value"] for t in table["Tags"]}["Name"]
        if name.startswith(f"{CLUSTER}-private-"):
            zone = name.rsplit("-private-", 1)[1]
            (public,) = ec2.describe_subnets(Filters=OWNED + [{"Name": "tag:Name", "Values": [f"{CLUSTER}-public-{zone}"]}])["Subnets"]
            assert [r["NatGatewayId"] for r in table["Routes"] if r.get("NatGatewayId")] == [nats[public["SubnetId"]]]
    removed = run_playbook(network_playbook, extra_vars={"network_state": "absent"})
    assert removed.rc == 0, removed
    assert network_resources(aws) == baseline
