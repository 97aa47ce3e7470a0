# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance run's deployment and its cost estimate (playbooks/aws_acceptance.yml).

The acceptance run is the smallest real deployment that goes through every
stage: the job's pool at one node (or on a Capacity Block the user names), a
SCRATCH_2 file system of the smallest size, and the inventory's job cut to a
few steps on that one node. ``acceptance_plan`` derives it from the
inventory's variables (sizes only: the inventory still says where and how)
and prices it hour by hour; the run itself is stopped and torn down when it
reaches its maximum wall time, so the maximum cost printed is a bound, not a
guess.
"""

from __future__ import annotations

import copy

# On-Demand list prices in USD per hour, us-east-1, from the EC2 On-Demand pricing page (checked 2026-12);
# other regions differ by a few per cent. A type without a price here needs one from the user.
LIST_PRICES_USD_PER_HOUR = {
    "trn1.2xlarge": 1.34375,
    "trn1.32xlarge": 21.50,
    "trn1n.32xlarge": 24.78,
    "m7i.large": 0.1008,
}
# The other hourly items of the deployment (us-east-1 list prices, checked 2026-12): the EKS control plane
# in standard support, one NAT gateway (network_nat_gateways: single), FSx for Lustre SCRATCH_2 at
# 0.140 USD per GB-month and gp3 at 0.08 USD per GB-month (730 hours a month).
EKS_CONTROL_PLANE_USD_PER_HOUR = 0.10
NAT_GATEWAY_USD_PER_HOUR = 0.045
FSX_SCRATCH_2_USD_PER_GB_MONTH = 0.140
GP3_USD_PER_GB_MONTH = 0.08
HOURS_PER_MONTH = 730
# The smallest SCRATCH_2 file system (FSx for Lustre User Guide, "Storage capacity": 1.2 TiB or multiples of 2.4 TiB).
SCRATCH_2_CAPACITY_GIB = 1200
# Time kept for the teardown within the maximum wall time: deleting the node groups, the file system, the
# cluster and the NAT gateway takes 15-25 minutes on AWS.
TEARDOWN_RESERVE_MINUTES = 40


class AcceptanceError(ValueError):
    """Input the acceptance run cannot be planned from; the message names the variable."""


def _pool_of(variables):
    pools = variables.get("trainium_node_pools") or []
    job = variables.get("trainium_job") or {}
    if not isinstance(pools, list) or not pools or not all(isinstance(pool, dict) for pool in pools):
        raise AcceptanceError(f"trainium_node_pools: got {pools!r}; allowed: a list of at least one pool (a mapping with name and "
                              "instance_type)")
    wanted = job.get("node_pool") if isinstance(job, dict) else None
    for pool in pools:
        if pool.get("name") == wanted:
            return pool
    return pools[0]


def _job(job, max_steps):
    job = dict(job or {})
    steps = min(int(job.get("max_steps", max_steps)), max_steps)
    job.update(nnodes=1, max_steps=steps, wait_for="completed")
    if "warmup_steps" in job:
        job["warmup_steps"] = min(int(job["warmup_steps"]), steps // 2)
    if "precompile_steps" in job:
        job["precompile_steps"] = min(int(job["precompile_steps"]), steps)
    job["checkpoint_steps"] = min(int(job.get("checkpoint_steps", steps)), steps)
    return job


def acceptance_plan(variables, prices=None, max_hours=3.0, max_steps=20, capacity_reservation_id=None):
    """The acceptance deployment's variables (``overrides``) and its estimate (``estimate``) for the inventory's ``variables``.

    ``prices`` adds to or replaces ``LIST_PRICES_USD_PER_HOUR`` (instance type -> USD per hour); a
    ``capacity_reservation_id`` puts the pool on the user's Capacity Block (its instance hours are paid with
    the block, not by the hour). Raises AcceptanceError naming the variable when the input cannot be planned.
    """
    if not isinstance(variables, dict):
        raise AcceptanceError(f"variables: got {type(variables).__name__}; allowed: the inventory's trainium_* variables")
    try:
        max_hours = float(max_hours)
    except (TypeError, ValueError):
        max_hours = -1.0
    if not 2.0 <= max_hours <= 12.0:
        raise AcceptanceError(f"trainium_acceptance_max_hours: got {max_hours!r}; allowed: 2 to 12 hours (site.yml gets it less the "
                              f"teardown's {TEARDOWN_RESERVE_MINUTES} minutes, and takes 60-90 on AWS)")
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or not 1 <= max_steps <= 1000:
        raise AcceptanceError(f"trainium_acceptance_max_steps: got {max_steps!r}; allowed: 1 to 1000 training steps")
    table = dict(LIST_PRICES_USD_PER_HOUR)
    if prices:
        if not isinstance(prices, dict) or not all(isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
                                                   for value in prices.values()):
            raise AcceptanceError(f"trainium_acceptance_prices_usd_per_hour: got {prices!r}; allowed: a mapping of instance type "
                                  "to USD per hour (0 or more)")
        table.update(prices)

    pool = copy.deepcopy(_pool_of(variables))
    pool.update(count=1, min_count=1, max_count=1)
    if capacity_reservation_id:
        pool.update(capacity_type="CAPACITY_BLOCK", capacity_reservation_id=capacity_reservation_id)
        pool.pop("availability_zone", None)
    instance_type = pool.get("instance_type")
    on_block = pool.get("capacity_type") == "CAPACITY_BLOCK"
    if not on_block and instance_type not in table:
        raise AcceptanceError(f"trainium_acceptance_prices_usd_per_hour: has no price for {instance_type!r} (the type of pool "
                              f"{pool.get('name')!r}); allowed: give its On-Demand USD per hour, for example "
                              f"-e '{{\"trainium_acceptance_prices_usd_per_hour\": {{\"{instance_type}\": <price>}}}}'")
    system = dict(variables.get("trainium_system_node_pool") or {})
    system_on = system.get("enabled", True)
    system_type = system.get("instance_type", "m7i.large")
    system_count = int(system.get("count", 2)) if system_on else 0
    if system_count and system_type not in table:
        raise AcceptanceError(f"trainium_acceptance_prices_usd_per_hour: has no price for {system_type!r} (the type of "
                              "trainium_system_node_pool); allowed: give its On-Demand USD per hour")

    overrides = {
        "trainium_node_pools": [pool],
        "trainium_storage": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": SCRATCH_2_CAPACITY_GIB},
        "trainium_job": _job(variables.get("trainium_job"), max_steps),
        # Everything goes, the image repository too: the check after the teardown expects nothing left.
        "trainium_teardown_keep": [],
    }
    root_gib = int(pool.get("root_volume_size_gib", 500)) + system_count * int(system.get("root_volume_size_gib", 50))
    items = [
        (f"1 x {instance_type}" + (" (Capacity Block: paid when the block was bought)" if on_block else ""),
         0.0 if on_block else float(table[instance_type])),
        (f"{system_count} x {system_type} (system node group)", system_count * float(table.get(system_type, 0.0))),
        ("EKS control plane", EKS_CONTROL_PLANE_USD_PER_HOUR),
        ("NAT gateway", NAT_GATEWAY_USD_PER_HOUR),
        (f"FSx for Lustre SCRATCH_2, {SCRATCH_2_CAPACITY_GIB} GiB", SCRATCH_2_CAPACITY_GIB * FSX_SCRATCH_2_USD_PER_GB_MONTH / HOURS_PER_MONTH),
        (f"EBS gp3 root volumes, {root_gib} GiB", root_gib * GP3_USD_PER_GB_MONTH / HOURS_PER_MONTH),
    ]
    hourly = sum(price for _item, price in items)
    estimate = {
        "items": [{"item": item, "usd_per_hour": round(price, 4)} for item, price in items],
        "usd_per_hour": round(hourly, 2),
        "max_hours": max_hours,
        "max_usd": round(hourly * max_hours, 2),
        "teardown_reserve_minutes": TEARDOWN_RESERVE_MINUTES,
        "lines": [f"{item}: {price:.2f} USD/h" for item, price in items] + [
            f"total: {hourly:.2f} USD/h; at most {max_hours:g} h of wall time (the run is stopped and torn down "
            f"{TEARDOWN_RESERVE_MINUTES} min before it) -> at most {hourly * max_hours:.2f} USD, plus data transfer and "
            "the image's ECR storage (cents)",
            "prices: us-east-1 On-Demand list prices checked 2026-12; other regions differ by a few per cent",
        ],
    }
    return {"overrides": overrides, "estimate": estimate}
