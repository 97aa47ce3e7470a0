# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""network_desired: every resource of a created network with its key, name, tags and route target.

What it returns is both what the network role creates and what
trainium.eks.vpc_network_info compares with the account, so the shape must fit
that module's options too.
"""

from __future__ import annotations

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.trainium.eks.plugins.filter import network
from ansible_collections.trainium.eks.plugins.modules import vpc_network_info

CLUSTER = "trn-rehearsal"
TAGS = {"trainium.eks/cluster": CLUSTER, "ManagedBy": "trainium.eks", "team": "ml"}


@pytest.fixture
def plan():
    # Zones given out of order: the plan (and so the resources) are by zone name.
    return network.network_subnet_plan("10.0.0.0/16", ["us-west-2b", "us-west-2a"])


def test_registered_as_a_filter():
    assert network.FilterModule().filters()["network_desired"] is network.network_desired


def test_two_zones_single_nat_gateway(plan):
    desired = network.network_desired(plan, CLUSTER, ["us-west-2a"], TAGS)
    assert desired["vpc_name"] == f"{CLUSTER}-vpc"
    assert desired["vpc_tags"] == dict(TAGS, Name=f"{CLUSTER}-vpc")
    assert desired["internet_gateway_tags"] == dict(TAGS, Name=f"{CLUSTER}-igw")
    assert [(s["key"], s["cidr"], s["availability_zone"], s["tags"]["Name"]) for s in desired["subnets"]] == [
        ("us-west-2a/private", "10.0.0.0/19", "us-west-2a", f"{CLUSTER}-private-us-west-2a"),
        ("us-west-2a/public", "10.0.64.0/24", "us-west-2a", f"{CLUSTER}-public-us-west-2a"),
        ("us-west-2b/private", "10.0.32.0/19", "us-west-2b", f"{CLUSTER}-private-us-west-2b"),
        ("us-west-2b/public", "10.0.65.0/24", "us-west-2b", f"{CLUSTER}-public-us-west-2b"),
    ]
    by_key = {s["key"]: s["tags"] for s in desired["subnets"]}
    assert by_key["us-west-2b/private"] == dict(TAGS, **{"Name": f"{CLUSTER}-private-us-west-2b", f"kubernetes.io/cluster/{CLUSTER}": "shared",
                                                         "kubernetes.io/role/internal-elb": "1"})
    assert by_key["us-west-2a/public"] == dict(TAGS, **{"Name": f"{CLUSTER}-public-us-west-2a", f"kubernetes.io/cluster/{CLUSTER}": "shared",
                                                        "kubernetes.io/role/elb": "1"})
    assert "kubernetes.io/role/elb" not in by_key["us-west-2a/private"] and "kubernetes.io/role/internal-elb" not in by_key["us-west-2b/public"]
    assert desired["nat_gateways"] == [{
        "zone": "us-west-2a", "subnet_key": "us-west-2a/public",
        "eip_tags": dict(TAGS, Name=f"{CLUSTER}-nat-us-west-2a"), "tags": dict(TAGS, Name=f"{CLUSTER}-nat-us-west-2a"),
    }]
    assert desired["route_tables"] == [
        {"name": f"{CLUSTER}-public", "tags": dict(TAGS, Name=f"{CLUSTER}-public"),
         "subnet_keys": ["us-west-2a/public", "us-west-2b/public"], "target": "internet_gateway"},
        {"name": f"{CLUSTER}-private-us-west-2a", "tags": dict(TAGS, Name=f"{CLUSTER}-private-us-west-2a"),
         "subnet_keys": ["us-west-2a/private"], "target": "nat:us-west-2a"},
        # single: zone b's private subnets go out through zone a's NAT gateway.
        {"name": f"{CLUSTER}-private-us-west-2b", "tags": dict(TAGS, Name=f"{CLUSTER}-private-us-west-2b"),
         "subnet_keys": ["us-west-2b/private"], "target": "nat:us-west-2a"},
    ]


def test_per_zone_nat_gateways(plan):
    desired = network.network_desired(plan, CLUSTER, ["us-west-2a", "us-west-2b"], TAGS)
    assert [(n["zone"], n["subnet_key"], n["eip_tags"]["Name"]) for n in desired["nat_gateways"]] == [
        ("us-west-2a", "us-west-2a/public", f"{CLUSTER}-nat-us-west-2a"),
        ("us-west-2b", "us-west-2b/public", f"{CLUSTER}-nat-us-west-2b"),
    ]
    assert {t["name"]: t["target"] for t in desired["route_tables"]} == {
        f"{CLUSTER}-public": "internet_gateway",
        f"{CLUSTER}-private-us-west-2a": "nat:us-west-2a",
        f"{CLUSTER}-private-us-west-2b": "nat:us-west-2b",
    }


def test_a_resource_name_wins_over_a_name_in_the_deployment_tags(plan):
    tags = dict(TAGS, Name="everything")
    desired = network.network_desired(plan, CLUSTER, ["us-west-2a"], tags)
    names = [desired["vpc_tags"]["Name"], desired["internet_gateway_tags"]["Name"]] + [s["tags"]["Name"] for s in desired["subnets"]]
    assert "everything" not in names
    assert tags["Name"] == "everything" and "kubernetes.io/role/elb" not in tags


def test_no_deployment_tags(plan):
    desired = network.network_desired(plan, CLUSTER, ["us-west-2a"], None)
    assert desired["vpc_tags"] == {"Name": f"{CLUSTER}-vpc"}
    assert desired["nat_gateways"][0]["eip_tags"] == {"Name": f"{CLUSTER}-nat-us-west-2a"}


@pytest.mark.parametrize("plan_value, nat_zones", [({}, ["us-west-2a"]), (None, ["us-west-2a"]), ("10.0.0.0/16", ["us-west-2a"]),
                                                   ({"us-west-2a": {"private": "10.0.0.0/19", "public": "10.0.64.0/24"}}, [])])
def test_bad_input_is_a_filter_error(plan_value, nat_zones):
    with pytest.raises(AnsibleFilterError, match="network_desired: expects a subnet plan and NAT zones"):
        network.network_desired(plan_value, CLUSTER, nat_zones, TAGS)


def test_the_answer_fits_the_options_of_vpc_network_info(plan):
    """Every key of every element is an option of vpc_network_info, and its required suboptions are all there."""
    options = yaml.safe_load(vpc_network_info.DOCUMENTATION)["options"]
    desired = network.network_desired(plan, CLUSTER, ["us-west-2a"], TAGS)
    assert set(desired) <= set(options)
    for option in ("subnets", "nat_gateways", "route_tables"):
        suboptions = options[option]["suboptions"]
        required = {name for name, spec in suboptions.items() if spec.get("required")}
        for element in desired[option]:
            assert set(element) <= set(suboptions), (option, element)
            assert required <= set(element), (option, element)
    for element in desired["route_tables"]:
        assert element["target"] == "internet_gateway" or element["target"].startswith("nat:")
