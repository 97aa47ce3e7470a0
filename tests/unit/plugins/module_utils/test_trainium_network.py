# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Decisions of trainium_network: is a cluster's VPC network in place, and if not, what differs (one sentence each).

``network_differences`` runs on a fake ``found`` (read_network's answer) of a
two-zone network with a single NAT gateway, as the network role creates it;
every test breaks one thing. ``read_network`` runs against a stubbed EC2.
"""

from __future__ import annotations

import copy

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_network as tn

CLUSTER = "trn-rehearsal"
TAGS = {"trainium.eks/cluster": CLUSTER, "ManagedBy": "trainium.eks"}
IDS = {
    "vpc": "vpc-0a0a0a0a0a0a0a0a0",
    "us-west-2a/private": "subnet-0aaaaaaaaaaaaaa01",
    "us-west-2a/public": "subnet-0aaaaaaaaaaaaaa02",
    "us-west-2b/private": "subnet-0bbbbbbbbbbbbbb01",
    "us-west-2b/public": "subnet-0bbbbbbbbbbbbbb02",
    "igw": "igw-0c0c0c0c0c0c0c0c0",
    "eip": "eipalloc-0d0d0d0d0d0d0d0d0",
    "nat": "nat-0e0e0e0e0e0e0e0e0",
    "rtb-public": "rtb-0f0f0f0f0f0f0f001",
    "rtb-private-a": "rtb-0f0f0f0f0f0f0f002",
    "rtb-private-b": "rtb-0f0f0f0f0f0f0f003",
    "rtb-main": "rtb-0f0f0f0f0f0f0f000",
}
CIDRS = {
    "us-west-2a/private": "10.0.0.0/19",
    "us-west-2b/private": "10.0.32.0/19",
    "us-west-2a/public": "10.0.64.0/24",
    "us-west-2b/public": "10.0.65.0/24",
}


def named(name, **extra):
    return {**TAGS, **extra, "Name": name}


def subnet_tags(key):
    zone, tier = key.split("/")
    role = "kubernetes.io/role/internal-elb" if tier == "private" else "kubernetes.io/role/elb"
    return named(f"{CLUSTER}-{tier}-{zone}", **{f"kubernetes.io/cluster/{CLUSTER}": "shared", role: "1"})


def tag_list(tags):
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def desired():
    """The module's options for the network (what network_desired gives, plus cluster name and VPC range)."""
    return {
        "cluster_name": CLUSTER,
        "vpc_name": f"{CLUSTER}-vpc",
        "vpc_cidr": "10.0.0.0/16",
        "vpc_tags": named(f"{CLUSTER}-vpc"),
        "subnets": [{"key": key, "cidr": cidr, "availability_zone": key.split("/", maxsplit=1)[0], "tags": subnet_tags(key)} for key, cidr in CIDRS.items()],
        "internet_gateway_tags": named(f"{CLUSTER}-igw"),
        "nat_gateways": [{"zone": "us-west-2a", "subnet_key": "us-west-2a/public", "eip_tags": named(f"{CLUSTER}-nat-us-west-2a"),
                          "tags": named(f"{CLUSTER}-nat-us-west-2a")}],
        "route_tables": [
            {"name": f"{CLUSTER}-public", "tags": named(f"{CLUSTER}-public"), "subnet_keys": ["us-west-2a/public", "us-west-2b/public"],
             "target": "internet_gateway"},
            {"name": f"{CLUSTER}-private-us-west-2a", "tags": named(f"{CLUSTER}-private-us-west-2a"), "subnet_keys": ["us-west-2a/private"],
             "target": "nat:us-west-2a"},
            {"name": f"{CLUSTER}-private-us-west-2b", "tags": named(f"{CLUSTER}-private-us-west-2b"), "subnet_keys": ["us-west-2b/private"],
             "target": "nat:us-west-2a"},
        ],
    }


LOCAL_ROUTE = {"DestinationCidrBlock": "10.0.0.0/16", "GatewayId": "local", "Origin": "CreateRouteTable", "State": "active"}


def _table(table_id, name, subnet_keys, route):
    return {
        "RouteTableId": table_id,
        "VpcId": IDS["vpc"],
        "Tags": tag_list(named(name)),
        "Associations": [{"RouteTableAssociationId": f"rtbassoc-{index}{table_id[-3:]}", "RouteTableId": table_id, "SubnetId": IDS[key],
                          "Main": False} for index, key in enumerate(subnet_keys)],
        "Routes": [dict(LOCAL_ROUTE), dict(route, DestinationCidrBlock="0.0.0.0/0", Origin="CreateRoute", State="active")],
    }


FOUND = {
    "vpcs": [{"VpcId": IDS["vpc"], "CidrBlock": "10.0.0.0/16", "State": "available", "Tags": tag_list(named(f"{CLUSTER}-vpc"))}],
    "dns_support": True,
    "dns_hostnames": True,
    "subnets": [{"SubnetId": IDS[key], "VpcId": IDS["vpc"], "CidrBlock": cidr, "AvailabilityZone": key.split("/", maxsplit=1)[0],
                 "MapPublicIpOnLaunch": False, "Tags": tag_list(subnet_tags(key))} for key, cidr in CIDRS.items()],
    "internet_gateways": [{"InternetGatewayId": IDS["igw"], "Attachments": [{"VpcId": IDS["vpc"], "State": "available"}],
                           "Tags": tag_list(named(f"{CLUSTER}-igw"))}],
    "addresses": [{"AllocationId": IDS["eip"], "PublicIp": "198.51.100.7", "Domain": "vpc",
                   "Tags": tag_list(named(f"{CLUSTER}-nat-us-west-2a"))}],
    "nat_gateways": [{"NatGatewayId": IDS["nat"], "SubnetId": IDS["us-west-2a/public"], "VpcId": IDS["vpc"], "State": "available",
                      "NatGatewayAddresses": [{"AllocationId": IDS["eip"]}], "Tags": tag_list(named(f"{CLUSTER}-nat-us-west-2a"))}],
    "route_tables": [
        # The VPC's main table: no Name tag, no subnet association; not one of the role's tables.
        {"RouteTableId": IDS["rtb-main"], "VpcId": IDS["vpc"], "Tags": [], "Routes": [dict(LOCAL_ROUTE)],
         "Associations": [{"RouteTableAssociationId": "rtbassoc-main", "RouteTableId": IDS["rtb-main"], "Main": True}]},
        _table(IDS["rtb-public"], f"{CLUSTER}-public", ["us-west-2a/public", "us-west-2b/public"], {"GatewayId": IDS["igw"]}),
        _table(IDS["rtb-private-a"], f"{CLUSTER}-private-us-west-2a", ["us-west-2a/private"], {"NatGatewayId": IDS["nat"]}),
        _table(IDS["rtb-private-b"], f"{CLUSTER}-private-us-west-2b", ["us-west-2b/private"], {"NatGatewayId": IDS["nat"]}),
    ],
}


@pytest.fixture
def found():
    return copy.deepcopy(FOUND)


def differences(found_network, wanted=None):
    return tn.network_differences(wanted or desired(), found_network)[0]


def subnet(found_network, key):
    (match,) = [s for s in found_network["subnets"] if s["SubnetId"] == IDS[key]]
    return match


def table(found_network, name):
    (match,) = [t for t in found_network["route_tables"] if {"Key": "Name", "Value": name} in t["Tags"]]
    return match


def set_tag(resource, key, value):
    resource["Tags"] = [tag for tag in resource["Tags"] if tag["Key"] != key] + ([{"Key": key, "Value": value}] if value is not None else [])


# ---------------------------------------------------------------- in place


def test_the_network_as_the_role_makes_it_is_in_place_with_every_id(found):
    diffs, ids = tn.network_differences(desired(), found)
    assert diffs == []
    assert ids == {
        "vpc_id": IDS["vpc"],
        "subnet_ids": {key: IDS[key] for key in CIDRS},
        "internet_gateway_id": IDS["igw"],
        "eip_allocation_ids": {"us-west-2a": IDS["eip"]},
        "nat_gateway_ids": {"us-west-2a": IDS["nat"]},
        "route_table_ids": {f"{CLUSTER}-public": IDS["rtb-public"], f"{CLUSTER}-private-us-west-2a": IDS["rtb-private-a"],
                            f"{CLUSTER}-private-us-west-2b": IDS["rtb-private-b"]},
    }


def test_extra_tags_are_no_difference(found):
    """The role never purges network tags: a superset of the wanted tags is in place."""
    resources = (found["vpcs"] + found["subnets"] + found["internet_gateways"] + found["addresses"] + found["nat_gateways"]
                 + found["route_tables"])
    for resource in resources:
        resource["Tags"] = resource["Tags"] + [{"Key": "team", "Value": "ml"}, {"Key": "aws:cloudformation:stack-name", "Value": "x"}]
    assert differences(found) == []


def test_the_local_route_is_ignored(found):
    """Only the local route besides 0.0.0.0/0 is no difference, whatever its CIDR (EC2 adds it to every table)."""
    for each in found["route_tables"]:
        for route in each["Routes"]:
            if route.get("GatewayId") == "local":
                route["DestinationCidrBlock"] = "10.99.0.0/16"
    table(found, f"{CLUSTER}-public")["Routes"].append({"DestinationIpv6CidrBlock": "2600:1f14::/56", "GatewayId": "local"})
    assert differences(found) == []


def test_per_zone_nat_gateways_in_place(found):
    wanted = desired()
    wanted["nat_gateways"].append({"zone": "us-west-2b", "subnet_key": "us-west-2b/public", "eip_tags": named(f"{CLUSTER}-nat-us-west-2b"),
                                   "tags": named(f"{CLUSTER}-nat-us-west-2b")})
    wanted["route_tables"][2]["target"] = "nat:us-west-2b"
    found["addresses"].append({"AllocationId": "eipalloc-0b", "Tags": tag_list(named(f"{CLUSTER}-nat-us-west-2b"))})
    found["nat_gateways"].append({"NatGatewayId": "nat-0b", "SubnetId": IDS["us-west-2b/public"], "State": "available",
                                  "Tags": tag_list(named(f"{CLUSTER}-nat-us-west-2b"))})
    table(found, f"{CLUSTER}-private-us-west-2b")["Routes"][1] = {"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-0b"}
    diffs, ids = tn.network_differences(wanted, found)
    assert diffs == []
    assert ids["nat_gateway_ids"] == {"us-west-2a": IDS["nat"], "us-west-2b": "nat-0b"}
    assert ids["eip_allocation_ids"] == {"us-west-2a": IDS["eip"], "us-west-2b": "eipalloc-0b"}


# ---------------------------------------------------------------- the VPC


def test_no_vpc(found):
    found["vpcs"] = []
    diffs, ids = tn.network_differences(desired(), found)
    assert diffs == [f"VPC {CLUSTER}-vpc (10.0.0.0/16) does not exist"]
    assert ids["vpc_id"] is None and ids["subnet_ids"] == {}


def test_two_vpcs_of_that_name_and_range(found):
    found["vpcs"].append(dict(found["vpcs"][0], VpcId="vpc-0second"))
    diffs, ids = tn.network_differences(desired(), found)
    assert diffs == [f"VPC {CLUSTER}-vpc (10.0.0.0/16) matches 2 VPCs"]
    assert ids["vpc_id"] is None


def test_vpc_tag_and_dns_attributes(found):
    set_tag(found["vpcs"][0], "ManagedBy", "someone-else")
    found["dns_hostnames"] = False
    assert differences(found) == [f"VPC {CLUSTER}-vpc: tags ManagedBy differ", f"VPC {CLUSTER}-vpc: dns_hostnames is off"]


# ---------------------------------------------------------------- subnets


def test_subnet_in_another_zone(found):
    subnet(found, "us-west-2a/private")["AvailabilityZone"] = "us-west-2c"
    assert differences(found) == ["subnet us-west-2a/private (10.0.0.0/19) is in us-west-2c, not us-west-2a"]


def test_subnet_that_maps_public_ips(found):
    subnet(found, "us-west-2b/public")["MapPublicIpOnLaunch"] = True
    assert differences(found) == ["subnet us-west-2b/public (10.0.65.0/24) maps public IPs on launch"]


def test_subnet_missing_a_tag_or_with_another_value(found):
    set_tag(subnet(found, "us-west-2a/public"), "kubernetes.io/role/elb", None)
    set_tag(subnet(found, "us-west-2b/private"), f"kubernetes.io/cluster/{CLUSTER}", "owned")
    assert differences(found) == [
        f"subnet us-west-2b/private (10.0.32.0/19): tags kubernetes.io/cluster/{CLUSTER} differ",
        "subnet us-west-2a/public (10.0.64.0/24): tags kubernetes.io/role/elb differ",
    ]


def test_missing_subnet_also_shows_in_its_route_table(found):
    found["subnets"] = [s for s in found["subnets"] if s["SubnetId"] != IDS["us-west-2b/private"]]
    table(found, f"{CLUSTER}-private-us-west-2b")["Associations"] = []
    diffs, ids = tn.network_differences(desired(), found)
    assert diffs == [
        "subnet us-west-2b/private (10.0.32.0/19) does not exist",
        f"route table {CLUSTER}-private-us-west-2b: associated with [], not ['<us-west-2b/private>']",
    ]
    assert "us-west-2b/private" not in ids["subnet_ids"]


# ---------------------------------------------------------------- gateways


def test_nat_gateway_still_pending(found):
    found["nat_gateways"][0]["State"] = "pending"
    diffs, ids = tn.network_differences(desired(), found)
    assert diffs == ["NAT gateway in us-west-2a is pending, not available"]
    assert ids["nat_gateway_ids"] == {"us-west-2a": IDS["nat"]}


def test_missing_nat_gateway_and_its_routes(found):
    found["nat_gateways"] = []
    assert differences(found) == [
        "NAT gateway in us-west-2a does not exist",
        f"route table {CLUSTER}-private-us-west-2a: routes ['0.0.0.0/0 -> {IDS['nat']}'], not ['0.0.0.0/0 -> <NAT gateway in us-west-2a>']",
        f"route table {CLUSTER}-private-us-west-2b: routes ['0.0.0.0/0 -> {IDS['nat']}'], not ['0.0.0.0/0 -> <NAT gateway in us-west-2a>']",
    ]


def test_nat_gateway_in_another_subnet_is_not_the_zones(found):
    found["nat_gateways"][0]["SubnetId"] = IDS["us-west-2b/public"]
    assert differences(found)[0] == "NAT gateway in us-west-2a does not exist"


def test_missing_elastic_ip_or_one_without_its_tags(found):
    set_tag(found["addresses"][0], "Name", f"{CLUSTER}-nat-us-west-2b")
    diffs, ids = tn.network_differences(desired(), found)
    assert diffs == ["Elastic IP of the NAT gateway in us-west-2a does not exist"]
    assert ids["eip_allocation_ids"] == {}


def test_nat_gateway_tags(found):
    set_tag(found["nat_gateways"][0], "trainium.eks/cluster", None)
    assert differences(found) == ["NAT gateway in us-west-2a: tags trainium.eks/cluster differ"]


def test_internet_gateway_missing_or_two(found):
    gateway = found["internet_gateways"][0]
    found["internet_gateways"] = []
    assert differences(found) == [
        "the VPC has 0 internet gateways attached, not 1",
        f"route table {CLUSTER}-public: routes ['0.0.0.0/0 -> {IDS['igw']}'], not ['0.0.0.0/0 -> <internet gateway>']",
    ]
    found["internet_gateways"] = [gateway, dict(gateway, InternetGatewayId="igw-0second")]
    assert differences(found)[0] == "the VPC has 2 internet gateways attached, not 1"


# ---------------------------------------------------------------- route tables


def test_extra_route(found):
    table(found, f"{CLUSTER}-private-us-west-2a")["Routes"].append({"DestinationCidrBlock": "10.1.0.0/16", "TransitGatewayId": "tgw-0123"})
    assert differences(found) == [
        f"route table {CLUSTER}-private-us-west-2a: routes ['0.0.0.0/0 -> {IDS['nat']}', '10.1.0.0/16 -> tgw-0123'], "
        f"not ['0.0.0.0/0 -> {IDS['nat']}']",
    ]


def test_missing_default_route(found):
    public = table(found, f"{CLUSTER}-public")
    public["Routes"] = [route for route in public["Routes"] if route.get("GatewayId") == "local"]
    assert differences(found) == [f"route table {CLUSTER}-public: routes [], not ['0.0.0.0/0 -> {IDS['igw']}']"]


def test_default_route_to_the_wrong_target(found):
    table(found, f"{CLUSTER}-private-us-west-2b")["Routes"][1] = {"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": IDS["igw"]}
    assert differences(found) == [
        f"route table {CLUSTER}-private-us-west-2b: routes ['0.0.0.0/0 -> {IDS['igw']}'], not ['0.0.0.0/0 -> {IDS['nat']}']",
    ]


def test_wrong_subnet_associations(found):
    public = table(found, f"{CLUSTER}-public")
    public["Associations"] = public["Associations"][:1]
    private_a = table(found, f"{CLUSTER}-private-us-west-2a")
    private_a["Associations"].append({"RouteTableAssociationId": "rtbassoc-x", "SubnetId": IDS["us-west-2b/public"]})
    assert differences(found) == [
        f"route table {CLUSTER}-public: associated with ['{IDS['us-west-2a/public']}'], "
        f"not ['{IDS['us-west-2a/public']}', '{IDS['us-west-2b/public']}']",
        f"route table {CLUSTER}-private-us-west-2a: associated with ['{IDS['us-west-2a/private']}', '{IDS['us-west-2b/public']}'], "
        f"not ['{IDS['us-west-2a/private']}']",
    ]


def test_missing_or_doubled_route_table_and_its_tags(found):
    found["route_tables"] = [t for t in found["route_tables"] if t["RouteTableId"] != IDS["rtb-private-b"]]
    set_tag(table(found, f"{CLUSTER}-private-us-west-2a"), "ManagedBy", None)
    found["route_tables"].append(dict(copy.deepcopy(table(found, f"{CLUSTER}-public")), RouteTableId="rtb-0second"))
    diffs, ids = tn.network_differences(desired(), found)
    assert diffs == [
        f"route table {CLUSTER}-public matches 2 tables",
        f"route table {CLUSTER}-private-us-west-2a: tags ManagedBy differ",
        f"route table {CLUSTER}-private-us-west-2b does not exist",
    ]
    assert ids["route_table_ids"] == {f"{CLUSTER}-private-us-west-2a": IDS["rtb-private-a"]}


# ---------------------------------------------------------------- read_network against a stubbed EC2


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _vpc_filter():
    return {"Filters": [{"Name": "tag:Name", "Values": [f"{CLUSTER}-vpc"]}, {"Name": "cidr", "Values": ["10.0.0.0/16"]}]}


def test_read_network_without_a_vpc_makes_one_call(ec2):
    client, stubber = ec2
    stubber.add_response("describe_vpcs", {"Vpcs": []}, _vpc_filter())
    found_network = tn.read_network(client, f"{CLUSTER}-vpc", "10.0.0.0/16", CLUSTER)
    assert found_network == {"vpcs": [], "subnets": [], "internet_gateways": [], "addresses": [], "nat_gateways": [], "route_tables": []}
    assert tn.network_differences(desired(), found_network)[0] == [f"VPC {CLUSTER}-vpc (10.0.0.0/16) does not exist"]


def test_read_network_asks_for_each_part_of_the_vpc(ec2):
    client, stubber = ec2
    in_vpc = [{"Name": "vpc-id", "Values": [IDS["vpc"]]}]
    stubber.add_response("describe_vpcs", {"Vpcs": FOUND["vpcs"]}, _vpc_filter())
    stubber.add_response("describe_vpc_attribute", {"VpcId": IDS["vpc"], "EnableDnsSupport": {"Value": True}},
                         {"VpcId": IDS["vpc"], "Attribute": "enableDnsSupport"})
    stubber.add_response("describe_vpc_attribute", {"VpcId": IDS["vpc"], "EnableDnsHostnames": {"Value": False}},
                         {"VpcId": IDS["vpc"], "Attribute": "enableDnsHostnames"})
    stubber.add_response("describe_subnets", {"Subnets": FOUND["subnets"]}, {"Filters": in_vpc})
    stubber.add_response("describe_internet_gateways", {"InternetGateways": FOUND["internet_gateways"]},
                         {"Filters": [{"Name": "attachment.vpc-id", "Values": [IDS["vpc"]]}]})
    stubber.add_response("describe_addresses", {"Addresses": FOUND["addresses"]},
                         {"Filters": [{"Name": "tag:trainium.eks/cluster", "Values": [CLUSTER]}]})
    stubber.add_response("describe_nat_gateways", {"NatGateways": FOUND["nat_gateways"]},
                         {"Filter": in_vpc + [{"Name": "state", "Values": ["pending", "available"]}]})
    stubber.add_response("describe_route_tables", {"RouteTables": FOUND["route_tables"]}, {"Filters": in_vpc})
    found_network = tn.read_network(client, f"{CLUSTER}-vpc", "10.0.0.0/16", CLUSTER)
    assert (found_network["dns_support"], found_network["dns_hostnames"]) == (True, False)
    assert [s["SubnetId"] for s in found_network["subnets"]] == [IDS[key] for key in CIDRS]
    assert found_network["nat_gateways"][0]["NatGatewayId"] == IDS["nat"]
    assert tn.network_differences(desired(), found_network)[0] == [f"VPC {CLUSTER}-vpc: dns_hostnames is off"]


def test_read_network_turns_an_aws_error_into_a_module_error(ec2):
    client, stubber = ec2
    stubber.add_client_error("describe_vpcs", "UnauthorizedOperation", http_status_code=403, expected_params=_vpc_filter())
    with pytest.raises(tn.TrainiumNetworkError) as raised:
        tn.read_network(client, f"{CLUSTER}-vpc", "10.0.0.0/16", CLUSTER)
    assert "Failed to describe the network" in raised.value.message
