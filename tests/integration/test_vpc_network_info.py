# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""vpc_network_info and efa_launch_template's placement_group_strategy against moto server.

The network comes from the network role (preflight first, like
tests/integration/test_network.py); vpc_network_info is then asked about it
with what the role asks (the network_desired filter on the deployment's tags),
before and after the account is changed behind the role's back with boto3.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

CLUSTER = "trn-rehearsal"
ZONES = ["us-west-2a", "us-west-2b"]
PLAYBOOK = """
- name: Network
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.preflight
    - role: trainium.eks.network
      vars:
        network_wait_delay: 1
"""


@pytest.fixture()
def network_playbook(tmp_path):
    path = tmp_path / "network.yml"
    path.write_text(PLAYBOOK)
    return str(path)


@pytest.fixture()
def network_info(run_module, local_vars):
    """vpc_network_info with the options the network role gives it for the local deployment (single NAT gateway)."""
    if str(ROOT / ".collections") not in sys.path:
        sys.path.insert(0, str(ROOT / ".collections"))
    # pylint: disable=import-outside-toplevel
    from ansible_collections.trainium.eks.plugins.filter.network import network_desired
    from ansible_collections.trainium.eks.plugins.filter.network import network_subnet_plan
    from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import base_tags

    tags = base_tags(CLUSTER, local_vars["trainium_tags"])
    options = dict(network_desired(network_subnet_plan("10.0.0.0/16", ZONES), CLUSTER, ZONES[:1], tags),
                   cluster_name=CLUSTER, vpc_cidr="10.0.0.0/16", region="us-west-2")

    def run(check=False):
        result = run_module("trainium.eks.vpc_network_info", options, check=check)
        assert not result.get("failed"), result
        assert result["changed"] is False, result
        return result

    return run


def test_network_in_place_then_broken_then_converged(aws, run_playbook, network_playbook, network_info):
    ec2 = aws.client("ec2")
    assert network_info()["differences"] == [f"VPC {CLUSTER}-vpc (10.0.0.0/16) does not exist"]

    created = run_playbook(network_playbook)
    assert created.rc == 0, created

    result = network_info()
    assert (result["in_place"], result["differences"]) == (True, []), result
    (vpc,) = ec2.describe_vpcs(Filters=[{"Name": "tag:Name", "Values": [f"{CLUSTER}-vpc"]}])["Vpcs"]
    assert result["vpc_id"] == vpc["VpcId"]
    subnets = {s["CidrBlock"]: s["SubnetId"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["Subnets"]}
    assert result["subnet_ids"] == {"us-west-2a/private": subnets["10.0.0.0/19"], "us-west-2b/private": subnets["10.0.32.0/19"],
                                    "us-west-2a/public": subnets["10.0.64.0/24"], "us-west-2b/public": subnets["10.0.65.0/24"]}
    (nat,) = [n for n in ec2.describe_nat_gateways()["NatGateways"] if n["State"] == "available"]
    assert result["nat_gateway_ids"] == {"us-west-2a": nat["NatGatewayId"]}
    assert result["eip_allocation_ids"] == {"us-west-2a": nat["NatGatewayAddresses"][0]["AllocationId"]}
    (igw,) = ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [vpc["VpcId"]]}])["InternetGateways"]
    assert result["internet_gateway_id"] == igw["InternetGatewayId"]
    assert sorted(result["route_table_ids"]) == [f"{CLUSTER}-private-us-west-2a", f"{CLUSTER}-private-us-west-2b", f"{CLUSTER}-public"]
    assert network_info(check=True)["in_place"] is True

    # Behind the role's back: zone b loses its way out, its public subnet a tag load balancers need.
    private_b = result["route_table_ids"][f"{CLUSTER}-private-us-west-2b"]
    ec2.delete_route(RouteTableId=private_b, DestinationCidrBlock="0.0.0.0/0")
    ec2.delete_tags(Resources=[subnets["10.0.65.0/24"]], Tags=[{"Key": "kubernetes.io/role/elb"}])
    broken = network_info()
    assert broken["in_place"] is False
    assert broken["differences"] == [
        "subnet us-west-2b/public (10.0.65.0/24): tags kubernetes.io/role/elb differ",
        f"route table {CLUSTER}-private-us-west-2b: routes [], not ['0.0.0.0/0 -> {nat['NatGatewayId']}']",
    ]

    repaired = run_playbook(network_playbook)
    assert repaired.rc == 0, repaired
    assert repaired.recap["changed"] > 0, repaired
    assert f"route table {CLUSTER}-private-us-west-2b: routes []" in repaired.text
    assert network_info()["in_place"] is True
    tags = {t["Key"]: t["Value"] for t in ec2.describe_subnets(SubnetIds=[subnets["10.0.65.0/24"]])["Subnets"][0]["Tags"]}
    assert tags["kubernetes.io/role/elb"] == "1"
    assert [r.get("NatGatewayId") for r in ec2.describe_route_tables(RouteTableIds=[private_b])["RouteTables"][0]["Routes"]
            if r.get("DestinationCidrBlock") == "0.0.0.0/0"] == [nat["NatGatewayId"]]


def test_efa_launch_template_makes_its_placement_group(aws, run_module):
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    group = ec2.create_security_group(GroupName=f"{CLUSTER}-nodes", Description="nodes", VpcId=vpc)["GroupId"]
    tags = {"trainium.eks/cluster": CLUSTER, "ManagedBy": "trainium.eks"}

    def template(name, placement_group, check=False):
        return run_module("trainium.eks.efa_launch_template", {
            "region": "us-west-2", "name": name, "instance_type": "trn1.32xlarge", "efa_interfaces": 8, "security_group_ids": [group],
            "placement_group": placement_group, "placement_group_strategy": "cluster", "tags": tags,
        }, check=check)

    planned = template(f"{CLUSTER}-trn1", f"{CLUSTER}-trn1", check=True)
    assert not planned.get("failed") and planned["changed"] is True, planned
    assert planned["placement_group"] == {"name": f"{CLUSTER}-trn1", "strategy": "cluster", "tags": tags}
    assert ec2.describe_placement_groups()["PlacementGroups"] == []

    first = template(f"{CLUSTER}-trn1", f"{CLUSTER}-trn1")
    assert not first.get("failed") and first["changed"] is True, first
    (made,) = ec2.describe_placement_groups()["PlacementGroups"]
    assert (made["GroupName"], made["Strategy"]) == (f"{CLUSTER}-trn1", "cluster")
    assert {t["Key"]: t["Value"] for t in made.get("Tags", [])} == tags
    assert first["placement_group"] == {"name": f"{CLUSTER}-trn1", "strategy": "cluster", "tags": tags}
    data = ec2.describe_launch_template_versions(LaunchTemplateName=f"{CLUSTER}-trn1", Versions=["$Default"])["LaunchTemplateVersions"][0]
    assert data["LaunchTemplateData"]["Placement"] == {"GroupName": f"{CLUSTER}-trn1"}

    again = template(f"{CLUSTER}-trn1", f"{CLUSTER}-trn1")
    assert not again.get("failed") and again["changed"] is False, again

    ec2.create_placement_group(GroupName=f"{CLUSTER}-spread", Strategy="spread")
    refused = template(f"{CLUSTER}-trn1n", f"{CLUSTER}-spread")
    assert refused.get("failed") is True, refused
    assert f"placement_group: {CLUSTER}-spread exists with strategy spread, not cluster" in refused["msg"]
    assert [t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]] == [f"{CLUSTER}-trn1"]
