# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EC2 calls behind trainium.eks.trainium_capacity_info.

Every call retries throttling with jittered backoff and turns botocore errors
into ``TrainiumCapacityError`` (a ``TrainiumAWSError``), which the module
reports with ``trainium_common.fail_on_aws_error``.
"""

from __future__ import annotations

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common

from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import USABLE_RESERVATION_STATES
from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import build_capacity_facts


class TrainiumCapacityError(common.TrainiumAWSError):
    pass


CapacityErrorHandler = common.error_handler(TrainiumCapacityError, "InvalidInstanceType", "InvalidCapacityReservationId.NotFound")


def _paginate(client, operation, key, **params):
    paginator = client.get_paginator(operation)
    return paginator.paginate(**params).build_full_result().get(key, [])


@CapacityErrorHandler.list_error_handler("describe instance types", default_value=[])
@AWSRetry.jittered_backoff()
def describe_instance_types(client, instance_types):
    # A filter (not InstanceTypes=) so that a type unknown to the region
    # yields an empty answer instead of an InvalidInstanceType error.
    return _paginate(
        client, "describe_instance_types", "InstanceTypes",
        Filters=[{"Name": "instance-type", "Values": list(instance_types)}],
    )


@CapacityErrorHandler.common_error_handler("describe instance type offerings")
@AWSRetry.jittered_backoff()
def describe_offerings(client, instance_types):
    return _paginate(
        client, "describe_instance_type_offerings", "InstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": list(instance_types)}],
    )


@CapacityErrorHandler.common_error_handler("describe availability zones")
@AWSRetry.jittered_backoff()
def describe_zones(client):
    return client.describe_availability_zones(
        Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}],
    )["AvailabilityZones"]


@CapacityErrorHandler.list_error_handler("describe capacity reservations", default_value=[])
@AWSRetry.jittered_backoff()
def describe_reservations(client, reservation_ids=None, instance_types=None):
    params = {}
    if reservation_ids:
        params["CapacityReservationIds"] = list(reservation_ids)
    else:
        params["Filters"] = [
            {"Name": "instance-type", "Values": list(instance_types)},
            {"Name": "state", "Values": list(USABLE_RESERVATION_STATES)},
        ]
    return _paginate(client, "describe_capacity_reservations", "CapacityReservations", **params)


@CapacityErrorHandler.common_error_handler("describe regions")
@AWSRetry.jittered_backoff()
def describe_regions(client):
    return sorted(region["RegionName"] for region in client.describe_regions()["Regions"])


def regions_offering(client, regional_client, instance_types):
    """{type: [regions whose zones offer it]} for ``instance_types``, asking every enabled region.

    Only called for types the client's region does not offer, to name where
    they are: one call per region, on an error path.
    """
    found = {itype: [] for itype in instance_types}
    for region in describe_regions(client):
        for offering in describe_offerings(regional_client(region), instance_types):
            if region not in found[offering["InstanceType"]]:
                found[offering["InstanceType"]].append(region)
    return found


def gather_capacity(client, instance_types, reservation_ids=None, lookup_reservations=False, regional_client=None):
    """Call EC2 and return the facts trainium_capacity_info reports.

    ``regional_client(region)`` (optional) gives an EC2 client of another
    region; with it, a type this region does not offer gets ``offered_in``,
    the regions that do.
    """
    instance_types = list(dict.fromkeys(instance_types))
    type_infos = describe_instance_types(client, instance_types)
    offerings = describe_offerings(client, instance_types)
    zones = describe_zones(client)
    reservations = []
    if reservation_ids:
        # Asked one by one: an id that does not exist must not hide the others.
        for reservation_id in dict.fromkeys(reservation_ids):
            reservations.extend(describe_reservations(client, reservation_ids=[reservation_id]))
    elif lookup_reservations:
        reservations = describe_reservations(client, instance_types=instance_types)
    facts = build_capacity_facts(instance_types, type_infos, offerings, zones, reservations)
    missing = [itype for itype, entry in facts["instance_types"].items() if not entry["offered"]]
    if missing and regional_client is not None:
        for itype, regions in regions_offering(client, regional_client, missing).items():
            facts["instance_types"][itype]["offered_in"] = regions
    return facts
