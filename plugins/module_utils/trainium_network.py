# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Read the network of a cluster in one pass and say whether it is in place.

Behind trainium.eks.vpc_network_info. ``read_network`` makes the few describe
calls that show a VPC with its subnets, internet gateway, Elastic IPs, NAT
gateways and route tables; ``network_differences`` compares what it found with
what the network role would create, field by field, and returns one sentence
per difference. No difference means every task of the role would report "ok",
so the role skips them (one module call instead of about ten).
"""

from __future__ import annotations

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common


class TrainiumNetworkError(common.TrainiumAWSError):
    pass


NetworkErrorHandler = common.error_handler(TrainiumNetworkError)

# NAT gateways in these states are the ones ec2_vpc_nat_gateway and the role look for.
NAT_LIVE_STATES = ["pending", "available"]


def _filters(values):
    """EC2 filters from {name: value or list of values}."""
    return [{"Name": name, "Values": value if isinstance(value, list) else [value]} for name, value in values.items()]


def _tags(resource):
    return {tag["Key"]: tag["Value"] for tag in resource.get("Tags", [])}


@NetworkErrorHandler.common_error_handler("describe the network")
@AWSRetry.jittered_backoff()
def _describe(client, operation, key, **params):
    return common.all_items(client, operation, key, **params)


@NetworkErrorHandler.common_error_handler("describe a VPC attribute")
@AWSRetry.jittered_backoff()
def _vpc_attribute(client, vpc_id, attribute):
    answer = client.describe_vpc_attribute(VpcId=vpc_id, Attribute=attribute)
    key = attribute[0].upper() + attribute[1:]
    return bool(answer.get(key, {}).get("Value"))


def read_network(client, vpc_name, vpc_cidr, cluster_name):
    """What the account holds of one cluster's network, as plain dicts (empty when there is no VPC)."""
    vpcs = _describe(client, "describe_vpcs", "Vpcs", Filters=_filters({"tag:Name": vpc_name, "cidr": vpc_cidr}))
    found = {"vpcs": vpcs, "subnets": [], "internet_gateways": [], "addresses": [], "nat_gateways": [], "route_tables": []}
    if len(vpcs) != 1:
        return found
    vpc_id = vpcs[0]["VpcId"]
    found["dns_support"] = _vpc_attribute(client, vpc_id, "enableDnsSupport")
    found["dns_hostnames"] = _vpc_attribute(client, vpc_id, "enableDnsHostnames")
    in_vpc = _filters({"vpc-id": vpc_id})
    found["subnets"] = _describe(client, "describe_subnets", "Subnets", Filters=in_vpc)
    found["internet_gateways"] = _describe(
        client, "describe_internet_gateways", "InternetGateways", Filters=_filters({"attachment.vpc-id": vpc_id}))
    found["addresses"] = _describe(client, "describe_addresses", "Addresses", Filters=_filters({"tag:trainium.eks/cluster": cluster_name}))
    found["nat_gateways"] = _describe(
        client, "describe_nat_gateways", "NatGateways", Filter=in_vpc + _filters({"state": NAT_LIVE_STATES}))
    found["route_tables"] = _describe(client, "describe_route_tables", "RouteTables", Filters=in_vpc)
    return found


def _missing_tags(have, want):
    """Keys of ``want`` that ``have`` lacks or holds with another value (the role never purges network tags)."""
    return sorted(key for key, value in want.items() if have.get(key) != value)


def _tag_difference(what, have, want):
    missing = _missing_tags(have, want)
    return [f"{what}: tags {', '.join(missing)} differ"] if missing else []


def _by_name(resources, name):
    return [resource for resource in resources if _tags(resource).get("Name") == name]


def network_differences(desired, found):
    """Sentences naming what differs between ``desired`` (the module's options) and ``found`` (read_network).

    Also returns the IDs it could match: ``(differences, ids)``.
    """
    ids = {"vpc_id": None, "subnet_ids": {}, "internet_gateway_id": None, "eip_allocation_ids": {},
           "nat_gateway_ids": {}, "route_table_ids": {}}
    vpcs = found["vpcs"]
    if len(vpcs) != 1:
        what = "does not exist" if not vpcs else f"matches {len(vpcs)} VPCs"
        return [f"VPC {desired['vpc_name']} ({desired['vpc_cidr']}) {what}"], ids
    vpc = vpcs[0]
    ids["vpc_id"] = vpc["VpcId"]
    differences = _tag_difference(f"VPC {desired['vpc_name']}", _tags(vpc), desired["vpc_tags"])
    for attribute in ("dns_support", "dns_hostnames"):
        if not found.get(attribute):
            differences.append(f"VPC {desired['vpc_name']}: {attribute} is off")
    differences += _subnet_differences(desired, found, ids)
    differences += _gateway_differences(desired, found, ids)
    differences += _route_table_differences(desired, found, ids)
    return differences, ids


def _subnet_differences(desired, found, ids):
    differences = []
    by_cidr = {subnet["CidrBlock"]: subnet for subnet in found["subnets"]}
    for wanted in desired["subnets"]:
        subnet = by_cidr.get(wanted["cidr"])
        what = f"subnet {wanted['key']} ({wanted['cidr']})"
        if subnet is None:
            differences.append(f"{what} does not exist")
            continue
        ids["subnet_ids"][wanted["key"]] = subnet["SubnetId"]
        if subnet.get("AvailabilityZone") != wanted["availability_zone"]:
            differences.append(f"{what} is in {subnet.get('AvailabilityZone')}, not {wanted['availability_zone']}")
        if subnet.get("MapPublicIpOnLaunch"):
            differences.append(f"{what} maps public IPs on launch")
        differences += _tag_difference(what, _tags(subnet), wanted["tags"])
    return differences


def _gateway_differences(desired, found, ids):
    differences = []
    gateways = found["internet_gateways"]
    if len(gateways) != 1:
        differences.append(f"the VPC has {len(gateways)} internet gateways attached, not 1")
    else:
        ids["internet_gateway_id"] = gateways[0]["InternetGatewayId"]
        differences += _tag_difference("internet gateway", _tags(gateways[0]), desired["internet_gateway_tags"])
    for nat in desired["nat_gateways"]:
        addresses = [address for address in found["addresses"] if _missing_tags(_tags(address), nat["eip_tags"]) == []]
        if not addresses:
            differences.append(f"Elastic IP of the NAT gateway in {nat['zone']} does not exist")
        else:
            ids["eip_allocation_ids"][nat["zone"]] = addresses[0]["AllocationId"]
        subnet_id = ids["subnet_ids"].get(nat["subnet_key"])
        gateways = [gateway for gateway in found["nat_gateways"] if subnet_id and gateway.get("SubnetId") == subnet_id]
        if not gateways:
            differences.append(f"NAT gateway in {nat['zone']} does not exist")
            continue
        ids["nat_gateway_ids"][nat["zone"]] = gateways[0]["NatGatewayId"]
        differences += _tag_difference(f"NAT gateway in {nat['zone']}", _tags(gateways[0]), nat.get("tags") or {})
        if gateways[0].get("State") != "available":
            differences.append(f"NAT gateway in {nat['zone']} is {gateways[0].get('State')}, not available")
    return differences


def _route_table_differences(desired, found, ids):
    differences = []
    for wanted in desired["route_tables"]:
        what = f"route table {wanted['name']}"
        tables = _by_name(found["route_tables"], wanted["name"])
        if len(tables) != 1:
            differences.append(f"{what} does not exist" if not tables else f"{what} matches {len(tables)} tables")
            continue
        table = tables[0]
        ids["route_table_ids"][wanted["name"]] = table["RouteTableId"]
        differences += _tag_difference(what, _tags(table), wanted["tags"])
        associated = sorted(a["SubnetId"] for a in table.get("Associations", []) if a.get("SubnetId"))
        expected = sorted(ids["subnet_ids"].get(key) or f"<{key}>" for key in wanted["subnet_keys"])
        if associated != expected:
            differences.append(f"{what}: associated with {associated}, not {expected}")
        target = _route_target(wanted["target"], ids)
        routes = sorted(_route_text(route) for route in table.get("Routes", []) if route.get("GatewayId") != "local")
        if routes != [f"0.0.0.0/0 -> {target}"]:
            differences.append(f"{what}: routes {routes}, not ['0.0.0.0/0 -> {target}']")
    return differences


def _route_target(target, ids):
    if target == "internet_gateway":
        return ids["internet_gateway_id"] or "<internet gateway>"
    zone = target.split(":", 1)[1]
    return ids["nat_gateway_ids"].get(zone) or f"<NAT gateway in {zone}>"


def _route_text(route):
    destination = route.get("DestinationCidrBlock") or route.get("DestinationIpv6CidrBlock") or route.get("DestinationPrefixListId")
    target = route.get("GatewayId") or route.get("NatGatewayId") or route.get("TransitGatewayId") or route.get("NetworkInterfaceId") or "?"
    return f"{destination} -> {target}"
