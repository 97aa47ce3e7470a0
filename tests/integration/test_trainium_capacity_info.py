# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.trainium_capacity_info against moto server on loopback."""

from __future__ import annotations

import pytest


@pytest.fixture
def capacity_info(run_module):
    """trainium.eks.trainium_capacity_info on localhost: its result."""

    def run(module_args, check=False, env=None):
        return run_module("trainium.eks.trainium_capacity_info", module_args, check=check, env=env, timeout=120)

    return run


@pytest.mark.parametrize("check", [False, True], ids=["run", "check_mode"])
def test_us_west_2_trainium_figures(aws, capacity_info, check):
    result = capacity_info({"region": "us-west-2", "instance_types": ["trn1.32xlarge", "trn1n.32xlarge"]}, check=check)
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    trn1 = result["instance_types"]["trn1.32xlarge"]
    assert trn1["offered"] is True
    assert trn1["availability_zones"] == ["us-west-2b", "us-west-2d"]
    assert len(trn1["availability_zone_ids"]) == 2 and all(z.startswith("usw2-az") for z in trn1["availability_zone_ids"])
    assert (trn1["neuron_devices"], trn1["neuron_cores"], trn1["max_efa_interfaces"]) == (16, 32, 8)
    assert (trn1["network_cards"], trn1["vcpus"], trn1["memory_mib"]) == (8, 128, 524288)
    assert trn1["neuron_device_memory_mib"] == 524288
    trn1n = result["instance_types"]["trn1n.32xlarge"]
    assert (trn1n["max_efa_interfaces"], trn1n["network_cards"], trn1n["neuron_cores"]) == (16, 16, 32)
    zone_ids = {z["zone_name"]: z["zone_id"] for z in result["availability_zones"]}
    assert [zone_ids[z] for z in trn1["availability_zones"]] == trn1["availability_zone_ids"]
    assert result["capacity_reservations"] == []
    assert aws.resources()["capacity_reservations"] == []


def test_type_no_zone_offers_is_reported_not_failed(aws, capacity_info):
    result = capacity_info({"region": "us-west-2", "instance_types": ["trn2.48xlarge"]})
    assert result.get("failed") is not True, result
    trn2 = result["instance_types"]["trn2.48xlarge"]
    assert trn2["offered"] is False and trn2["availability_zones"] == []
    # The type is known (its figures are there), only no zone of us-west-2 offers it.
    assert trn2["known"] is True and trn2["neuron_cores"] == 128


def test_reservations_by_id_and_by_lookup(aws, capacity_info):
    ec2 = aws.client("ec2")
    reservation = ec2.create_capacity_reservation(
        InstanceType="trn1.32xlarge", InstancePlatform="Linux/UNIX", AvailabilityZone="us-west-2d",
        InstanceCount=2, InstanceMatchCriteria="targeted",
    )["CapacityReservation"]
    other = ec2.create_capacity_reservation(
        InstanceType="trn1n.32xlarge", InstancePlatform="Linux/UNIX", AvailabilityZone="us-west-2d", InstanceCount=1,
    )["CapacityReservation"]

    by_id = capacity_info({
        "region": "us-west-2", "instance_types": ["trn1.32xlarge"],
        "capacity_reservation_ids": [reservation["CapacityReservationId"], "cr-0000000000000000a"],
    })
    assert [r["id"] for r in by_id["capacity_reservations"]] == [reservation["CapacityReservationId"]]
    found = by_id["capacity_reservations"][0]
    assert (found["availability_zone"], found["total_instance_count"], found["state"]) == ("us-west-2d", 2, "active")
    assert found["availability_zone_id"] == {z["zone_name"]: z["zone_id"] for z in by_id["availability_zones"]}["us-west-2d"]

    looked_up = capacity_info({"region": "us-west-2", "instance_types": ["trn1.32xlarge"], "lookup_capacity_reservations": True})
    assert [r["id"] for r in looked_up["capacity_reservations"]] == [reservation["CapacityReservationId"]]
    assert other["CapacityReservationId"] not in [r["id"] for r in looked_up["capacity_reservations"]]


def test_missing_region_fails_clearly(aws, rehearsal, capacity_info):
    env_without_region = {k: v for k, v in rehearsal.items() if k not in ("AWS_DEFAULT_REGION", "AWS_REGION")}
    result = capacity_info({"instance_types": ["trn1.32xlarge"]}, env=env_without_region)
    assert result["failed"] is True
    assert "region" in result["msg"].lower()
