# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance run's deployment and estimate (playbooks/aws_acceptance.yml)."""

from __future__ import annotations

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_acceptance as ta

POOLS = [
    {"name": "cpu", "instance_type": "m7i.large", "count": 3},
    {"name": "trn1", "instance_type": "trn1.32xlarge", "count": 4, "capacity_type": "ON_DEMAND", "availability_zone": "usw2-az4"},
]
JOB = {"node_pool": "trn1", "nnodes": 4, "nproc_per_node": 32, "max_steps": 28125, "warmup_steps": 2000,
       "checkpoint_steps": 100, "precompile_steps": 10, "wait_for": "running"}


def plan(**kwargs):
    return ta.acceptance_plan({"trainium_node_pools": POOLS, "trainium_job": JOB}, **kwargs)


def test_the_job_pool_shrinks_to_one_node_and_the_job_to_a_few_steps_on_it():
    result = plan(max_steps=20)
    (pool,) = result["overrides"]["trainium_node_pools"]
    assert (pool["name"], pool["count"], pool["min_count"], pool["max_count"]) == ("trn1", 1, 1, 1)
    assert pool["availability_zone"] == "usw2-az4"  # where stays the inventory's
    job = result["overrides"]["trainium_job"]
    assert (job["nnodes"], job["max_steps"], job["warmup_steps"], job["checkpoint_steps"], job["precompile_steps"]) == (1, 20, 10, 20, 10)
    assert job["nproc_per_node"] == 32 and job["wait_for"] == "completed"
    assert result["overrides"]["trainium_storage"] == {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 1200}
    assert result["overrides"]["trainium_teardown_keep"] == []  # the check after the teardown expects nothing left
    assert POOLS[1]["count"] == 4 and JOB["nnodes"] == 4  # the inventory's variables are not changed


def test_the_estimate_adds_the_hourly_items_and_bounds_the_cost_by_the_wall_time():
    estimate = plan(max_hours=2)["estimate"]
    items = {entry["item"]: entry["usd_per_hour"] for entry in estimate["items"]}
    assert items["1 x trn1.32xlarge"] == 21.50
    assert items["2 x m7i.large (system node group)"] == pytest.approx(0.2016)
    assert estimate["usd_per_hour"] == pytest.approx(sum(items.values()), abs=0.01)
    assert estimate["max_usd"] == pytest.approx(2 * sum(items.values()), abs=0.02)
    assert any("at most 2 h of wall time" in line for line in estimate["lines"])


def test_a_capacity_block_moves_the_pool_and_its_hours_are_not_priced_again():
    result = plan(capacity_reservation_id="cr-0123456789abcdef0")
    (pool,) = result["overrides"]["trainium_node_pools"]
    assert (pool["capacity_type"], pool["capacity_reservation_id"]) == ("CAPACITY_BLOCK", "cr-0123456789abcdef0")
    assert "availability_zone" not in pool  # the block pins the zone
    first = result["estimate"]["items"][0]
    assert first["usd_per_hour"] == 0 and "Capacity Block" in first["item"]


def test_a_type_without_a_price_needs_one_from_the_user():
    pools = [{"name": "trn2", "instance_type": "trn2.48xlarge", "count": 2}]
    variables = {"trainium_node_pools": pools, "trainium_job": {"node_pool": "trn2"}}
    with pytest.raises(ta.AcceptanceError, match=r"^trainium_acceptance_prices_usd_per_hour: has no price for 'trn2.48xlarge'"):
        ta.acceptance_plan(variables)
    priced = ta.acceptance_plan(variables, prices={"trn2.48xlarge": 40.0})
    assert priced["estimate"]["items"][0]["usd_per_hour"] == 40.0


@pytest.mark.parametrize("kwargs, variable", [
    ({"max_hours": 0.5}, "trainium_acceptance_max_hours"),
    ({"max_hours": "three"}, "trainium_acceptance_max_hours"),
    ({"max_steps": 0}, "trainium_acceptance_max_steps"),
    ({"prices": {"trn1.32xlarge": -1}}, "trainium_acceptance_prices_usd_per_hour"),
])
def test_bad_options_name_their_variable(kwargs, variable):
    with pytest.raises(ta.AcceptanceError, match=rf"^{variable}: got "):
        plan(**kwargs)


def test_no_pool_is_refused_naming_the_variable():
    with pytest.raises(ta.AcceptanceError, match=r"^trainium_node_pools: got \[\]"):
        ta.acceptance_plan({"trainium_node_pools": [], "trainium_job": JOB})
