# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Filters of the network role: subnet CIDR plan, bring-your-own subnet checks.

Its input checks are part of the validation pass (module_utils/trainium_validation.py).

Pure functions (no AWS calls) so that the decisions are unit tested.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import resource_names
from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import subnet_address_problems
from ansible_collections.trainium.eks.plugins.module_utils.trainium_validation import ipv4_network as _network


def _prefix_ok(value):
    return isinstance(value, int) and not isinstance(value, bool) and 16 <= value <= 28


def network_subnet_plan(vpc_cidr, zones, private_prefix=19, public_prefix=24):
    """The CIDR of the private and the public subnet of every zone, stable for a given input.

    Zones are taken in name order. Private subnet i is the i-th block of
    ``private_prefix`` in the VPC; the public subnets are the first blocks of
    ``public_prefix`` that overlap no private one.
    """
    vpc = _network(vpc_cidr)
    if vpc is None:
        raise AnsibleFilterError(f"network_subnet_plan: network_vpc_cidr {vpc_cidr!r} is not an IPv4 network in CIDR notation")
    if not isinstance(zones, (list, tuple)) or not zones or not all(isinstance(z, str) and z for z in zones):
        raise AnsibleFilterError(f"network_subnet_plan: expects a non-empty list of zone names, got {zones!r}")
    for name, prefix in (("network_private_subnet_prefix", private_prefix), ("network_public_subnet_prefix", public_prefix)):
        if not _prefix_ok(prefix) or prefix < vpc.prefixlen:
            raise AnsibleFilterError(f"network_subnet_plan: {name} {prefix!r} does not fit in network_vpc_cidr {vpc_cidr}")
    ordered = sorted(set(zones))
    private_blocks = []
    for block in vpc.subnets(new_prefix=private_prefix):
        if len(private_blocks) == len(ordered):
            break
        private_blocks.append(block)
    public_blocks = []
    for block in vpc.subnets(new_prefix=public_prefix):
        if len(public_blocks) == len(ordered):
            break
        if not any(block.overlaps(taken) for taken in private_blocks):
            public_blocks.append(block)
    if len(private_blocks) < len(ordered) or len(public_blocks) < len(ordered):
        raise AnsibleFilterError(
            f"network_vpc_cidr: got {vpc_cidr}; it cannot hold {len(ordered)} private /{private_prefix} and "
            f"{len(ordered)} public /{public_prefix} subnets; allowed: a larger VPC or longer subnet prefixes"
        )
    return {
        zone: {"private": str(private_blocks[index]), "public": str(public_blocks[index])}
        for index, zone in enumerate(ordered)
    }


def _subnet_fields(subnet):
    """Subnet id, VPC id and zone from ec2_vpc_subnet_info (snake_case) or boto3 (CamelCase) entries."""
    return (
        subnet.get("subnet_id", subnet.get("id", subnet.get("SubnetId"))),
        subnet.get("vpc_id", subnet.get("VpcId")),
        subnet.get("availability_zone", subnet.get("AvailabilityZone")),
    )


def network_byo_subnets(subnets, vpc_id, private_ids, public_ids, zones):
    """Check bring-your-own subnets; returns errors and, per cluster zone, the subnet to use.

    ``subnets`` is what EC2 knows of the given IDs (ec2_vpc_subnet_info's
    ``subnets``). Every given ID must exist and be in ``vpc_id``; the private
    subnets must cover every cluster zone. The first given subnet of a zone is
    the one used there; zones are taken in name order, like the created network.
    """
    found = {}
    for subnet in subnets or []:
        subnet_id, subnet_vpc, zone = _subnet_fields(subnet)
        found[subnet_id] = {"vpc_id": subnet_vpc, "zone": zone, "cidr": subnet.get("cidr_block", subnet.get("CidrBlock"))}
    errors = []
    for variable, ids in (("network_private_subnet_ids", private_ids or []), ("network_public_subnet_ids", public_ids or [])):
        missing = [subnet_id for subnet_id in ids if subnet_id not in found]
        if missing:
            errors.append(f"{variable}: {', '.join(missing)} not found in the region")
        foreign = [f"{subnet_id} (in {found[subnet_id]['vpc_id']})" for subnet_id in ids
                   if subnet_id in found and found[subnet_id]["vpc_id"] != vpc_id]
        if foreign:
            errors.append(f"{variable}: {', '.join(foreign)} not in network_vpc_id {vpc_id}")

    def first_by_zone(ids):
        chosen = {}
        for subnet_id in ids or []:
            entry = found.get(subnet_id)
            if entry and entry["vpc_id"] == vpc_id and entry["zone"] not in chosen:
                chosen[entry["zone"]] = subnet_id
        return chosen

    private = first_by_zone(private_ids)
    public = first_by_zone(public_ids)
    needed = sorted(set(zones or []))
    uncovered = [zone for zone in needed if zone not in private]
    if uncovered:
        errors.append(
            f"network_private_subnet_ids: the cluster needs a private subnet in every zone of {', '.join(needed)}; "
            f"the subnets given cover {', '.join(sorted(private)) or 'no zone'}; missing: {', '.join(uncovered)}"
        )
    by_zone = {zone: {"private": private.get(zone), "public": public.get(zone)} for zone in needed}
    return {
        "errors": errors,
        "subnets_by_zone": by_zone,
        "private_subnet_ids": [private[zone] for zone in needed if zone in private],
        "public_subnet_ids": [public[zone] for zone in needed if zone in public],
        # The private subnet used in each zone with its range, as network_address_errors takes it.
        "private_by_zone": {zone: {"private": found[private[zone]]["cidr"], "subnet_id": private[zone]} for zone in needed if zone in private},
    }


def network_desired(plan, cluster_name, nat_zones, tags):
    """Every resource of a created network with its name and tags, as the role and vpc_network_info take them.

    ``plan`` is network_subnet_plan's answer, ``nat_zones`` the zones that get
    a NAT gateway (the first zone only with network_nat_gateways=single; the
    other zones' private route tables then use it), ``tags`` the deployment's
    tags. Subnet keys are ``<zone>/<tier>``.
    """
    if not isinstance(plan, dict) or not plan or not nat_zones:
        raise AnsibleFilterError(f"network_desired: expects a subnet plan and NAT zones, got {plan!r} and {nat_zones!r}")
    tags = dict(tags or {})

    def named(name, **extra):
        return {**tags, **extra, "Name": name}

    zones = sorted(plan)
    subnets = []
    for zone in zones:
        for tier, role_tag in (("private", "kubernetes.io/role/internal-elb"), ("public", "kubernetes.io/role/elb")):
            subnets.append({
                "key": f"{zone}/{tier}", "cidr": plan[zone][tier], "availability_zone": zone,
                "tags": named(f"{cluster_name}-{tier}-{zone}", **{f"kubernetes.io/cluster/{cluster_name}": "shared", role_tag: "1"}),
            })
    nat_gateways = [
        {"zone": zone, "subnet_key": f"{zone}/public", "eip_tags": named(f"{cluster_name}-nat-{zone}"), "tags": named(f"{cluster_name}-nat-{zone}")}
        for zone in nat_zones
    ]
    names = resource_names(cluster_name)
    route_tables = [{
        "name": names["public_route_table"], "tags": named(names["public_route_table"]),
        "subnet_keys": [f"{zone}/public" for zone in zones], "target": "internet_gateway",
    }]
    for zone in zones:
        nat_zone = zone if zone in nat_zones else nat_zones[0]
        route_tables.append({
            "name": f"{cluster_name}-private-{zone}", "tags": named(f"{cluster_name}-private-{zone}"),
            "subnet_keys": [f"{zone}/private"], "target": f"nat:{nat_zone}",
        })
    return {
        "vpc_name": names["vpc"],
        "vpc_tags": named(names["vpc"]),
        "subnets": subnets,
        "internet_gateway_tags": named(names["internet_gateway"]),
        "nat_gateways": nat_gateways,
        "route_tables": route_tables,
    }


def network_address_errors(subnets_by_zone, pools, instance_types, variable="network_private_subnet_prefix"):
    """One line per zone whose private subnet cannot hold its node pools' addresses (trainium_limits.subnet_address_problems)."""
    return subnet_address_problems(subnets_by_zone, pools, instance_types or {}, variable)


class FilterModule:
    def filters(self):
        return {
            "network_desired": network_desired,
            "network_subnet_plan": network_subnet_plan,
            "network_byo_subnets": network_byo_subnets,
            "network_address_errors": network_address_errors,
        }
