# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether security groups already hold what amazon.aws.ec2_security_group would make of them.

The trn_launch_template role reads its two groups with one
ec2_security_group_info call and skips the ec2_security_group tasks when this
filter finds nothing to change (each of those tasks is a module call of about
a second). The comparison is exact, as the module's defaults are: the same
description, the same ingress and egress rules with their descriptions
(purge_rules; with purge_rules false in a wanted group, its ingress rules
need only be there), the same tags apart from AWS's own (purge_tags).
"""

from __future__ import annotations

_ALL = {"all", "-1", -1}


def _get(mapping, snake, camel, default=None):
    return mapping.get(snake, mapping.get(camel, default))


def _port_ranges(rule):
    """(from, to) pairs of a rule in ec2_security_group's spelling (ports, or from_port/to_port)."""
    if str(rule.get("proto", "tcp")) in {str(value) for value in _ALL}:
        return [(None, None)]
    ports = rule.get("ports")
    if ports is None:
        return [(rule.get("from_port"), rule.get("to_port"))]
    ranges = []
    for port in ports if isinstance(ports, list) else [ports]:
        text = str(port)
        low, high = (text.split("-", 1) + [text])[:2]
        ranges.append((int(low), int(high or low)))
    return ranges


def _wanted_rules(rules, ids_by_name):
    """The rules of ec2_security_group's options as (protocol, from, to, source, description) tuples."""
    found = set()
    for rule in rules or []:
        protocol = "-1" if str(rule.get("proto", "tcp")) in {str(value) for value in _ALL} else str(rule.get("proto"))
        sources = [ids_by_name.get(name, f"<{name}>") for name in _as_list(rule.get("group_name"))]
        for key in ("group_id", "cidr_ip", "cidr_ipv6"):
            sources += _as_list(rule.get(key))
        # A group not created yet has no ID: never equal to an existing rule.
        for source in sources or ["<not created yet>"]:
            for low, high in _port_ranges(rule):
                found.add((protocol, low, high, source, rule.get("rule_desc")))
    return found


def _as_list(value):
    """ec2_security_group takes a string or a list of them for each source option; empty values are left out."""
    if value is None or value == "":
        return []
    return [item for item in (value if isinstance(value, list) else [value]) if item]


def _current_rules(permissions):
    """The permissions of a group (snake_case or CamelCase) as the same tuples."""
    found = set()
    for permission in permissions or []:
        protocol = str(_get(permission, "ip_protocol", "IpProtocol"))
        low = None if protocol == "-1" else _get(permission, "from_port", "FromPort")
        high = None if protocol == "-1" else _get(permission, "to_port", "ToPort")
        for pair in _get(permission, "user_id_group_pairs", "UserIdGroupPairs", []):
            found.add((protocol, low, high, _get(pair, "group_id", "GroupId"), _get(pair, "description", "Description")))
        for block in _get(permission, "ip_ranges", "IpRanges", []):
            found.add((protocol, low, high, _get(block, "cidr_ip", "CidrIp"), _get(block, "description", "Description")))
        for block in _get(permission, "ipv6_ranges", "Ipv6Ranges", []):
            found.add((protocol, low, high, _get(block, "cidr_ipv6", "CidrIpv6"), _get(block, "description", "Description")))
        # A rule from a prefix list is never one the role makes: it is a difference, and the role removes it.
        for entry in _get(permission, "prefix_list_ids", "PrefixListIds", []):
            found.add((protocol, low, high, _get(entry, "prefix_list_id", "PrefixListId"), _get(entry, "description", "Description")))
    return found


def _tags(group):
    tags = group.get("tags")
    if tags is None:
        tags = {tag["Key"]: tag["Value"] for tag in group.get("Tags", [])}
    return {key: value for key, value in tags.items() if not key.startswith("aws:")}


def security_group_differences(groups, wanted):
    """Sentences naming what differs between ``groups`` (ec2_security_group_info's answer) and ``wanted``.

    ``wanted`` lists ``{name, description, rules, rules_egress, tags}`` in
    ec2_security_group's option spelling, and optionally ``purge_rules``
    (default true; false: other ingress rules beside the wanted ones are no
    difference); a ``group_name`` source is the group of that name among
    ``groups``.
    """
    by_name = {_get(group, "group_name", "GroupName"): group for group in groups or []}
    ids_by_name = {name: _get(group, "group_id", "GroupId") for name, group in by_name.items()}
    differences = []
    for spec in wanted:
        name = spec["name"]
        group = by_name.get(name)
        if group is None:
            differences.append(f"security group {name} does not exist")
            continue
        if _get(group, "description", "Description") != spec.get("description"):
            differences.append(f"security group {name}: another description")
        for what, current, rules in (
            ("ingress", _get(group, "ip_permissions", "IpPermissions"), spec.get("rules")),
            ("egress", _get(group, "ip_permissions_egress", "IpPermissionsEgress"), spec.get("rules_egress")),
        ):
            wanted_rules = _wanted_rules(rules, ids_by_name)
            current_rules = _current_rules(current)
            # purge_rules: false (ingress only, as the module's option): the wanted rules among the others are enough.
            in_place = wanted_rules <= current_rules if what == "ingress" and not spec.get("purge_rules", True) else wanted_rules == current_rules
            if not in_place:
                differences.append(f"security group {name}: other {what} rules")
        if _tags(group) != dict(spec.get("tags") or {}):
            differences.append(f"security group {name}: other tags")
    return differences


def security_groups_in_place(groups, wanted):
    """True when ``security_group_differences`` finds nothing."""
    return not security_group_differences(groups, wanted)


class FilterModule:
    def filters(self):
        return {
            "security_group_differences": security_group_differences,
            "security_groups_in_place": security_groups_in_place,
        }
