# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The network role's decisions: input checks, subnet CIDR plan, bring-your-own subnets."""

from __future__ import annotations

import ipaddress
import itertools

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainium.eks.plugins.filter import network

ZONES = ["us-west-2b", "us-west-2a"]
VPC = "vpc-0123456789abcdef0"


def test_filter_names():
    assert network.FilterModule().filters() == {
        "network_desired": network.network_desired,
        "network_subnet_plan": network.network_subnet_plan,
        "network_byo_subnets": network.network_byo_subnets,
        "network_address_errors": network.network_address_errors,
    }


def test_default_plan_is_stable_and_sorted_by_zone():
    plan = network.network_subnet_plan("10.0.0.0/16", ZONES)
    assert plan == {
        "us-west-2a": {"private": "10.0.0.0/19", "public": "10.0.64.0/24"},
        "us-west-2b": {"private": "10.0.32.0/19", "public": "10.0.65.0/24"},
    }
    assert network.network_subnet_plan("10.0.0.0/16", list(reversed(ZONES))) == plan


@pytest.mark.parametrize("cidr, zones, private, public", [
    ("10.0.0.0/16", ["a", "b", "c"], 19, 24),
    ("172.16.0.0/20", ["a", "b"], 22, 26),
    ("192.168.0.0/24", ["a", "b"], 26, 28),
    ("10.1.0.0/16", ["a", "b", "c"], 18, 20),
])
def test_plan_subnets_fit_the_vpc_and_never_overlap(cidr, zones, private, public):
    plan = network.network_subnet_plan(cidr, zones, private, public)
    vpc = ipaddress.ip_network(cidr)
    blocks = [ipaddress.ip_network(entry[tier]) for entry in plan.values() for tier in ("private", "public")]
    assert sorted(plan) == sorted(zones)
    assert all(block.subnet_of(vpc) for block in blocks)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(blocks, 2))
    assert {ipaddress.ip_network(entry["private"]).prefixlen for entry in plan.values()} == {private}
    assert {ipaddress.ip_network(entry["public"]).prefixlen for entry in plan.values()} == {public}


def test_plan_fails_when_the_vpc_is_too_small():
    with pytest.raises(AnsibleFilterError, match=r"network_vpc_cidr: got 10.0.0.0/20; it cannot hold 2 private /20"):
        network.network_subnet_plan("10.0.0.0/20", ZONES, 20, 24)
    with pytest.raises(AnsibleFilterError, match=r"cannot hold 4 private /18 and 4 public /20"):
        network.network_subnet_plan("10.1.0.0/16", ["a", "b", "c", "d"], 18, 20)
    with pytest.raises(AnsibleFilterError, match="network_private_subnet_prefix 16 does not fit"):
        network.network_subnet_plan("10.0.0.0/20", ZONES, 16, 24)
    with pytest.raises(AnsibleFilterError, match="not an IPv4 network"):
        network.network_subnet_plan("10.0.0.0/33", ZONES)
    with pytest.raises(AnsibleFilterError, match="non-empty list of zone names"):
        network.network_subnet_plan("10.0.0.0/16", [])


def subnet(subnet_id, zone, vpc=VPC, cidr="10.20.0.0/20"):
    return {"subnet_id": subnet_id, "id": subnet_id, "vpc_id": vpc, "availability_zone": zone, "cidr_block": cidr}


def test_byo_subnets_covering_every_zone():
    found = [subnet("subnet-a1", "us-west-2a"), subnet("subnet-a2", "us-west-2a"), subnet("subnet-b1", "us-west-2b"),
             subnet("subnet-pa", "us-west-2a")]
    result = network.network_byo_subnets(found, VPC, ["subnet-a2", "subnet-a1", "subnet-b1"], ["subnet-pa"], ["us-west-2a", "us-west-2b"])
    assert result == {
        "errors": [],
        "subnets_by_zone": {"us-west-2a": {"private": "subnet-a2", "public": "subnet-pa"},
                            "us-west-2b": {"private": "subnet-b1", "public": None}},
        "private_subnet_ids": ["subnet-a2", "subnet-b1"],
        "public_subnet_ids": ["subnet-pa"],
        "private_by_zone": {"us-west-2a": {"private": "10.20.0.0/20", "subnet_id": "subnet-a2"},
                            "us-west-2b": {"private": "10.20.0.0/20", "subnet_id": "subnet-b1"}},
    }


def test_byo_subnets_accepts_boto3_shaped_entries():
    found = [{"SubnetId": "subnet-a", "VpcId": VPC, "AvailabilityZone": "us-west-2a"}]
    assert network.network_byo_subnets(found, VPC, ["subnet-a"], [], ["us-west-2a"])["errors"] == []


def test_byo_missing_zone_names_needed_and_given_zones():
    found = [subnet("subnet-a1", "us-west-2a"), subnet("subnet-c1", "us-west-2c")]
    result = network.network_byo_subnets(found, VPC, ["subnet-a1", "subnet-c1"], [], ["us-west-2b", "us-west-2a"])
    assert result["errors"] == [
        "network_private_subnet_ids: the cluster needs a private subnet in every zone of us-west-2a, us-west-2b; "
        "the subnets given cover us-west-2a, us-west-2c; missing: us-west-2b"
    ]
    assert result["subnets_by_zone"]["us-west-2b"] == {"private": None, "public": None}


def test_byo_unknown_and_foreign_subnets_are_named():
    found = [subnet("subnet-a1", "us-west-2a"), subnet("subnet-x", "us-west-2b", vpc="vpc-other")]
    result = network.network_byo_subnets(found, VPC, ["subnet-a1", "subnet-x"], ["subnet-gone"], ["us-west-2a", "us-west-2b"])
    assert "network_private_subnet_ids: subnet-x (in vpc-other) not in network_vpc_id " + VPC in result["errors"]
    assert "network_public_subnet_ids: subnet-gone not found in the region" in result["errors"]
    # The foreign subnet does not count for its zone.
    assert any("missing: us-west-2b" in error for error in result["errors"])
