# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""place_node_pools and job_fit_errors on facts built from EC2-shaped answers."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import job_fit_errors
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import place_node_pools
from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import build_capacity_facts

REGION = "us-west-2"
TYPES = ["trn1.32xlarge", "trn1n.32xlarge", "trn1.2xlarge", "trn2.48xlarge"]


def _reservation(rid, itype="trn1.32xlarge", zone="us-west-2d", zone_id="usw2-az4", state="active", total=4, rtype="capacity-block"):
    return {
        "CapacityReservationId": rid,
        "InstanceType": itype,
        "AvailabilityZone": zone,
        "AvailabilityZoneId": zone_id,
        "State": state,
        "TotalInstanceCount": total,
        "AvailableInstanceCount": total,
        "InstanceMatchCriteria": "targeted",
        "ReservationType": rtype,
    }


EXTRA_RESERVATIONS = [
    _reservation("cr-00000000000000c01", state="cancelled"),
    _reservation("cr-00000000000000e01", state="expired"),
    _reservation("cr-00000000000000501", state="scheduled", total=2),
    _reservation("cr-00000000000000a01", zone="us-west-2a", zone_id="usw2-az2"),
    _reservation("cr-00000000000000b01", zone="us-west-2b", zone_id="usw2-az1", total=8, rtype="default"),
]


@pytest.fixture
def capacity(ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations):
    return build_capacity_facts(TYPES, ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations + [
        _reservation(r["CapacityReservationId"], r["InstanceType"], r["AvailabilityZone"], r["AvailabilityZoneId"], r["State"],
                     r["TotalInstanceCount"], r["ReservationType"])
        for r in EXTRA_RESERVATIONS
    ])


def _pool(name="trn1", itype="trn1.32xlarge", count=2, **extra):
    pool = {"name": name, "instance_type": itype, "count": count, "capacity_type": "ON_DEMAND"}
    pool.update(extra)
    return pool


# A pool on the Capacity Block of the fixtures takes capacity type CAPACITY_BLOCK.
BLOCK = {"capacity_type": "CAPACITY_BLOCK"}


def _single_error(result):
    assert len(result["errors"]) == 1, result["errors"]
    return result["errors"][0]


def test_first_offering_zone_by_name(capacity):
    result = place_node_pools([_pool()], capacity, REGION)
    assert result["errors"] == []
    assert result["node_pools"] == [{
        "name": "trn1",
        "instance_type": "trn1.32xlarge",
        "count": 2,
        "capacity_type": "ON_DEMAND",
        "capacity_reservation_id": None,
        "availability_zone": "us-west-2b",
        "availability_zone_id": "usw2-az1",
        "offered_availability_zones": ["us-west-2b", "us-west-2d"],
        "neuron_cores": 32,
    }]


def test_a_trn2_pool_runs_on_logical_cores(capacity):
    """16 devices of 8 physical cores: 64 NeuronCores at the default LNC 2, 128 at LNC 1."""
    # us-west-2 offers no trn2 (neither here nor on AWS today): say us-west-2d does.
    capacity["instance_types"]["trn2.48xlarge"].update(offered=True, availability_zones=["us-west-2d"], availability_zone_ids=["usw2-az4"])
    assert capacity["instance_types"]["trn2.48xlarge"]["neuron_cores"] == 128
    (placed,) = place_node_pools([_pool("trn2", "trn2.48xlarge", count=1)], capacity, REGION)["node_pools"]
    assert placed["neuron_cores"] == 64
    (placed,) = place_node_pools([_pool("trn2", "trn2.48xlarge", count=1, logical_nc_config=1)], capacity, REGION)["node_pools"]
    assert placed["neuron_cores"] == 128


def test_capacity_type_defaults_to_on_demand(capacity):
    pool = _pool()
    del pool["capacity_type"]
    assert place_node_pools([pool], capacity, REGION)["node_pools"][0]["capacity_type"] == "ON_DEMAND"


def test_earlier_pool_zone_is_preferred(capacity):
    # trn1n.32xlarge is only in us-west-2d, so the trn1 pool that follows joins it there
    # instead of taking us-west-2b, the first zone by name.
    result = place_node_pools([_pool("trn1n", "trn1n.32xlarge"), _pool("trn1")], capacity, REGION)
    assert result["errors"] == []
    assert [(p["name"], p["availability_zone"]) for p in result["node_pools"]] == [("trn1n", "us-west-2d"), ("trn1", "us-west-2d")]


def test_first_pool_zone_is_kept_for_later_pools(capacity):
    result = place_node_pools([_pool("a"), _pool("b", "trn1.2xlarge")], capacity, REGION)
    assert [p["availability_zone"] for p in result["node_pools"]] == ["us-west-2b", "us-west-2b"]


@pytest.mark.parametrize("wanted", ["us-west-2d", "usw2-az4"])
def test_pinned_zone_by_name_or_id(capacity, wanted):
    result = place_node_pools([_pool(availability_zone=wanted)], capacity, REGION)
    assert result["errors"] == []
    placed = result["node_pools"][0]
    assert (placed["availability_zone"], placed["availability_zone_id"]) == ("us-west-2d", "usw2-az4")


def test_pinned_zone_beats_earlier_pool_zone(capacity):
    result = place_node_pools([_pool("a"), _pool("b", availability_zone="usw2-az4")], capacity, REGION)
    assert [p["availability_zone"] for p in result["node_pools"]] == ["us-west-2b", "us-west-2d"]


@pytest.mark.parametrize("wanted", ["us-west-2a", "usw2-az2", "us-east-1a"])
def test_pinned_zone_that_does_not_offer_the_type(capacity, wanted):
    result = place_node_pools([_pool(), _pool("trn1n", "trn1n.32xlarge", availability_zone=wanted)], capacity, REGION)
    error = _single_error(result)
    assert error == (
        f"trainium_node_pools[1].availability_zone: got {wanted!r} (str); "
        "allowed: a zone that offers trn1n.32xlarge: us-west-2d (usw2-az4)"
    )
    assert [p["name"] for p in result["node_pools"]] == ["trn1"]


def test_pinned_zone_error_lists_every_offering_zone(capacity):
    error = _single_error(place_node_pools([_pool(availability_zone="us-west-2c")], capacity, REGION))
    assert error.startswith("trainium_node_pools[0].availability_zone: got 'us-west-2c' (str); allowed: ")
    assert error.endswith("a zone that offers trn1.32xlarge: us-west-2b (usw2-az1), us-west-2d (usw2-az4)")


@pytest.mark.parametrize("itype", ["trn2.48xlarge", "trn3.48xlarge"])
def test_no_zone_offers_the_type(capacity, itype):
    result = place_node_pools([_pool(itype=itype)], capacity, REGION)
    error = _single_error(result)
    assert error.startswith(f"trainium_node_pools[0].instance_type: got {itype!r} (str); allowed: ")
    assert f"no zone of {REGION} offers {itype}" in error
    assert result["node_pools"] == []


def test_type_missing_from_the_facts(capacity):
    del capacity["instance_types"]["trn1.32xlarge"]
    error = _single_error(place_node_pools([_pool()], capacity, REGION))
    assert error.startswith("trainium_node_pools[0].instance_type: got 'trn1.32xlarge' (str); ")


def test_reservation_fixes_the_zone(capacity):
    pool = _pool(capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-0123456789abcdef0", count=4)
    result = place_node_pools([pool], capacity, REGION)
    assert result["errors"] == []
    placed = result["node_pools"][0]
    assert placed["availability_zone"] == "us-west-2d"
    assert placed["availability_zone_id"] == "usw2-az4"
    assert placed["capacity_reservation_id"] == "cr-0123456789abcdef0"
    assert placed["capacity_type"] == "CAPACITY_BLOCK"


def test_reservation_beats_earlier_pool_zone(capacity):
    pools = [_pool("a"), _pool("b", capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-0123456789abcdef0")]
    assert [p["availability_zone"] for p in place_node_pools(pools, capacity, REGION)["node_pools"]] == ["us-west-2b", "us-west-2d"]


def test_a_capacity_block_not_started_is_refused_with_its_start(capacity):
    scheduled = [r for r in capacity["capacity_reservations"] if r["id"] == "cr-00000000000000501"]
    scheduled[0]["start_date"] = "2026-12-06 11:30:00+00:00"
    result = place_node_pools([_pool(capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-00000000000000501")], capacity, REGION)
    assert _single_error(result) == (
        "trainium_node_pools[0].capacity_reservation_id: got 'cr-00000000000000501' (str); allowed: a reservation that has started; "
        "cr-00000000000000501 is scheduled and starts at 2026-12-06 11:30:00+00:00: run again once it is active")
    assert result["node_pools"] == []


def test_reservation_and_pinned_zone_agree(capacity):
    result = place_node_pools([_pool(capacity_reservation_id="cr-00000000000000b01", availability_zone="usw2-az1")], capacity, REGION)
    assert result["errors"] == []
    assert result["node_pools"][0]["availability_zone"] == "us-west-2b"


def test_reservation_and_pinned_zone_disagree(capacity):
    error = _single_error(place_node_pools([_pool(**BLOCK, capacity_reservation_id="cr-0123456789abcdef0", availability_zone="us-west-2b")], capacity, REGION))
    assert error == (
        "trainium_node_pools[0].availability_zone: got 'us-west-2b' (str); "
        "allowed: a zone that offers trn1.32xlarge and holds the reservation: us-west-2d (usw2-az4)"
    )


def test_count_above_reservation(capacity):
    error = _single_error(place_node_pools([_pool(count=5, capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-0123456789abcdef0")], capacity, REGION))
    assert error == (
        "trainium_node_pools[0].count: got 5 (int); "
        "allowed: at most 4, the number of instances reservation cr-0123456789abcdef0 holds"
    )


def test_max_count_above_reservation(capacity):
    error = _single_error(place_node_pools([_pool(count=2, max_count=6, **BLOCK, capacity_reservation_id="cr-0123456789abcdef0")], capacity, REGION))
    assert error == (
        "trainium_node_pools[0].max_count: got 6 (int); "
        "allowed: at most 4, the number of instances reservation cr-0123456789abcdef0 holds"
    )


def test_count_equal_to_reservation(capacity):
    assert place_node_pools([_pool(count=4, capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-0123456789abcdef0")], capacity, REGION)["errors"] == []


def test_reservation_not_found(capacity):
    result = place_node_pools([_pool(capacity_reservation_id="cr-0000000000000dead")], capacity, REGION)
    error = _single_error(result)
    assert error == (
        "trainium_node_pools[0].capacity_reservation_id: got 'cr-0000000000000dead' (str); "
        f"allowed: a capacity reservation that exists in {REGION}; none with this id was found"
    )
    assert result["node_pools"] == []


def test_reservation_for_another_type(capacity):
    error = _single_error(place_node_pools([_pool(capacity_reservation_id="cr-0fedcba9876543210")], capacity, REGION))
    assert error.startswith("trainium_node_pools[0].capacity_reservation_id: got 'cr-0fedcba9876543210' (str); allowed: ")
    assert error.endswith("a reservation for trn1.32xlarge; this one holds trn1n.32xlarge")


@pytest.mark.parametrize("rid, state", [("cr-00000000000000c01", "cancelled"), ("cr-00000000000000e01", "expired")])
def test_reservation_not_usable(capacity, rid, state):
    error = _single_error(place_node_pools([_pool(capacity_reservation_id=rid)], capacity, REGION))
    assert error.startswith(f"trainium_node_pools[0].capacity_reservation_id: got {rid!r} (str); allowed: ")
    assert error.endswith(f"a reservation in state active or scheduled; this one is {state}")


def test_reservation_in_zone_that_does_not_offer_the_type(capacity):
    error = _single_error(place_node_pools([_pool(capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-00000000000000a01")], capacity, REGION))
    assert error.startswith("trainium_node_pools[0].capacity_reservation_id: got 'cr-00000000000000a01' (str); ")
    assert error.endswith("a reservation in a zone that offers trn1.32xlarge; it is in us-west-2a")


def test_errors_name_the_index_of_each_pool(capacity):
    pools = [_pool("ok"), _pool("gone", capacity_reservation_id="cr-0000000000000dead"), _pool("trn2", "trn2.48xlarge")]
    result = place_node_pools(pools, capacity, REGION)
    assert [e.split(":", 1)[0] for e in result["errors"]] == ["trainium_node_pools[1].capacity_reservation_id", "trainium_node_pools[2].instance_type"]
    assert [p["name"] for p in result["node_pools"]] == ["ok"]


def test_cluster_zones_are_topped_up_to_two(capacity):
    result = place_node_pools([_pool("trn1n", "trn1n.32xlarge")], capacity, REGION)
    # us-west-2d holds the pool; the first other zone by name is added.
    assert result["cluster_availability_zones"] == ["us-west-2d", "us-west-2a"]


def test_cluster_zones_skip_zones_not_available(capacity):
    capacity["availability_zones"][0]["state"] = "impaired"
    result = place_node_pools([_pool("trn1n", "trn1n.32xlarge")], capacity, REGION)
    assert result["cluster_availability_zones"] == ["us-west-2d", "us-west-2b"]


def test_cluster_zones_keep_every_pool_zone(capacity):
    pools = [_pool("a", availability_zone="us-west-2b"), _pool("b", availability_zone="us-west-2d")]
    result = place_node_pools(pools, capacity, REGION)
    assert result["cluster_availability_zones"] == ["us-west-2b", "us-west-2d"]


def test_region_with_one_zone(capacity):
    capacity["availability_zones"] = [z for z in capacity["availability_zones"] if z["zone_name"] == "us-west-2d"]
    result = place_node_pools([_pool("trn1n", "trn1n.32xlarge")], capacity, REGION)
    assert result["cluster_availability_zones"] == ["us-west-2d"]
    error = _single_error(result)
    assert error == "trainium_region: got 'us-west-2' (str); allowed: a region with at least two available zones (EKS needs two)"


def test_region_with_one_available_zone(capacity):
    for zone in capacity["availability_zones"]:
        if zone["zone_name"] != "us-west-2d":
            zone["state"] = "unavailable"
    error = _single_error(place_node_pools([_pool("trn1n", "trn1n.32xlarge")], capacity, REGION))
    assert error.startswith("trainium_region: got 'us-west-2' (str); ")


def test_no_zone_error_without_placed_pools(capacity):
    capacity["availability_zones"] = []
    result = place_node_pools([_pool(itype="trn2.48xlarge")], capacity, REGION)
    assert [e.split(":", 1)[0] for e in result["errors"]] == ["trainium_node_pools[0].instance_type"]


# --- job_fit_errors

def _job(nnodes=2, nproc=32, node_pool="trn1"):
    return {"name": "bert-pretrain", "node_pool": node_pool, "nnodes": nnodes, "nproc_per_node": nproc}


def test_fitting_job(capacity):
    assert job_fit_errors(_job(), [_pool()], capacity) == []


def test_job_using_all_trn2_cores(capacity):
    """trn2 defaults to LNC=2: its 128 physical cores are 64 logical ones, one rank each; LNC=1 gives 128."""
    assert job_fit_errors(_job(nproc=64, node_pool="trn2"), [_pool(), _pool("trn2", "trn2.48xlarge", count=4)], capacity) == []
    assert job_fit_errors(_job(nproc=128, node_pool="trn2"), [_pool(), _pool("trn2", "trn2.48xlarge", count=4)], capacity) == [
        "trainium_job.nproc_per_node: got 128 (int); allowed: at most 64, the NeuronCores of one trn2.48xlarge in pool 'trn2' "
        "(128 physical cores at logical_nc_config 2)",
    ]
    lnc1 = _pool("trn2", "trn2.48xlarge", count=4, logical_nc_config=1)
    assert job_fit_errors(_job(nproc=128, node_pool="trn2"), [lnc1], capacity) == []


def test_nnodes_above_pool_count(capacity):
    assert job_fit_errors(_job(nnodes=3), [_pool()], capacity) == [
        "trainium_job.nnodes: got 3 (int); allowed: at most 2, the node count of pool 'trn1'",
    ]


def test_nproc_above_neuron_cores(capacity):
    assert job_fit_errors(_job(nproc=33), [_pool()], capacity) == [
        "trainium_job.nproc_per_node: got 33 (int); allowed: at most 32, the NeuronCores of one trn1.32xlarge in pool 'trn1'",
    ]


def test_nproc_above_trn1_2xlarge_cores(capacity):
    errors = job_fit_errors(_job(nnodes=1, nproc=32, node_pool="small"), [_pool("small", "trn1.2xlarge", count=1)], capacity)
    assert errors == ["trainium_job.nproc_per_node: got 32 (int); allowed: at most 2, the NeuronCores of one trn1.2xlarge in pool 'small'"]


def test_both_job_errors(capacity):
    errors = job_fit_errors(_job(nnodes=3, nproc=33), [_pool()], capacity)
    assert [e.split(":", 1)[0] for e in errors] == ["trainium_job.nnodes", "trainium_job.nproc_per_node"]


def test_job_on_unknown_pool_is_left_to_deployment_errors(capacity):
    assert job_fit_errors(_job(node_pool="missing"), [_pool()], capacity) == []


def test_job_on_type_without_core_facts(capacity):
    # The cores are unknown (type not described): only the node count is checked.
    assert job_fit_errors(_job(nproc=1000), [_pool(itype="trn3.48xlarge")], capacity) == []
    assert len(job_fit_errors(_job(nnodes=3, nproc=1000), [_pool(itype="trn3.48xlarge")], capacity)) == 1


@pytest.mark.parametrize("inventory", ["local", "aws"])
def test_inventory_pools_and_job_fit_us_west_2(capacity, inventory):
    path = Path(__file__).resolve().parents[4] / "inventories" / inventory / "group_vars" / "all" / "deployment.yml"
    variables = yaml.safe_load(path.read_text(encoding="utf-8"))
    result = place_node_pools(variables["trainium_node_pools"], capacity, variables["trainium_region"])
    assert result["errors"] == []
    assert len(result["node_pools"]) == len(variables["trainium_node_pools"])
    assert len(result["cluster_availability_zones"]) == 2
    assert job_fit_errors(variables["trainium_job"], variables["trainium_node_pools"], capacity) == []


@pytest.mark.parametrize("rid, capacity_type, needed", [
    ("cr-0123456789abcdef0", "ON_DEMAND", "CAPACITY_BLOCK"),
    ("cr-0123456789abcdef0", "SPOT", "CAPACITY_BLOCK"),
    ("cr-00000000000000b01", "CAPACITY_BLOCK", "ON_DEMAND"),
])
def test_the_capacity_type_follows_the_kind_of_reservation(capacity, rid, capacity_type, needed):
    """A Capacity Block takes CAPACITY_BLOCK, an On-Demand Capacity Reservation ON_DEMAND (EKS User Guide)."""
    error = _single_error(place_node_pools([_pool(count=2, capacity_type=capacity_type, capacity_reservation_id=rid)], capacity, REGION))
    assert error.startswith(f"trainium_node_pools[0].capacity_type: got '{capacity_type}' (str); allowed: {needed}, since {rid} is ")
    assert "EKS User Guide" in error
