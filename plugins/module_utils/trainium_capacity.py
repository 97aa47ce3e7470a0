# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EC2 calls behind trainium.eks.trainium_capacity_info.

Every call retries throttling with jittered backoff and turns botocore errors
into ``TrainiumCapacityError`` (a ``TrainiumAWSError``), which the module
reports with ``trainium_common.fail_on_aws_error``.
"""

from __future__ import annotations

try:
    import botocore.exceptions
except ImportError:  # pragma: no cover - AnsibleAWSModule reports a missing botocore
    pass

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common

from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import USABLE_RESERVATION_STATES
from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import build_capacity_facts
from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import TRAINIUM_INSTANCE_TYPES


class TrainiumCapacityError(common.TrainiumAWSError):
    pass


CapacityErrorHandler = common.error_handler(TrainiumCapacityError, "InvalidInstanceType", "InvalidCapacityReservationId.NotFound")


@CapacityErrorHandler.list_error_handler("describe instance types", default_value=[])
@AWSRetry.jittered_backoff()
def describe_instance_types(client, instance_types):
    # A filter (not InstanceTypes=) so that a type unknown to the region
    # yields an empty answer instead of an InvalidInstanceType error.
    return common.all_items(
        client, "describe_instance_types", "InstanceTypes",
        Filters=[{"Name": "instance-type", "Values": list(instance_types)}],
    )


@CapacityErrorHandler.common_error_handler("describe instance type offerings")
@AWSRetry.jittered_backoff()
def describe_offerings(client, instance_types):
    return common.all_items(
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
    return common.all_items(client, "describe_capacity_reservations", "CapacityReservations", **params)


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


# The EC2 vCPU quotas that bound Trainium instances, by purchase option, found by name.
TRN_QUOTA_NAMES = {"ON_DEMAND": "Running On-Demand Trn instances", "SPOT": "All Trn Spot Instance Requests"}
ON_DEMAND_TRN_QUOTA_CODE = "L-2C3B7624"
LIVE_INSTANCE_STATES = ["pending", "running"]
TRAINIUM_TYPES = list(TRAINIUM_INSTANCE_TYPES)


def _quota_entry(quota):
    return {"code": quota.get("QuotaCode"), "name": quota.get("QuotaName"), "value": int(quota.get("Value") or 0)}


def trn_quotas(quota_client):
    """{purchase option: {code, name, value} or None}: the account's applied Trainium vCPU quotas.

    A quota that cannot be read (no permission, a partition without the
    service) is None; preflight then says it could not check it.
    """
    listed = []
    try:
        listed = common.all_items(quota_client, "list_service_quotas", "Quotas", ServiceCode="ec2")
    except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError):
        listed = []
    by_name = {quota.get("QuotaName"): quota for quota in listed}
    found = {}
    for option, name in TRN_QUOTA_NAMES.items():
        quota = by_name.get(name)
        if quota is None and option == "ON_DEMAND":
            try:
                quota = quota_client.get_service_quota(ServiceCode="ec2", QuotaCode=ON_DEMAND_TRN_QUOTA_CODE)["Quota"]
            except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError):
                quota = None
        found[option] = _quota_entry(quota) if quota else None
    return found


@CapacityErrorHandler.common_error_handler("describe the running Trainium instances")
@AWSRetry.jittered_backoff()
def describe_trn_instances(client):
    # The wildcard finds every Trainium type; the names are there for endpoints without wildcards.
    reservations = common.all_items(client, "describe_instances", "Reservations", Filters=[
        {"Name": "instance-type", "Values": ["trn*", *TRAINIUM_TYPES]}, {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}])
    return [instance for reservation in reservations for instance in reservation.get("Instances", [])]


def trn_vcpus_in_use(instances, cluster_name, vcpus_by_type):
    """{purchase option: vCPUs} of the live Trainium instances that are not the cluster's own nodes."""
    used = {"ON_DEMAND": 0, "SPOT": 0}
    for instance in instances:
        tags = {tag["Key"]: tag["Value"] for tag in instance.get("Tags", [])}
        if cluster_name and tags.get("eks:cluster-name") == cluster_name:
            continue  # already counted in what the cluster's pools need
        cpu = instance.get("CpuOptions") or {}
        vcpus = cpu.get("CoreCount", 0) * cpu.get("ThreadsPerCore", 1) or vcpus_by_type.get(instance.get("InstanceType"), 0)
        used["SPOT" if instance.get("InstanceLifecycle") == "spot" else "ON_DEMAND"] += vcpus
    return used


def gather_quotas(client, quota_client, cluster_name, vcpus_by_type):
    """The Trainium vCPU quotas with what other instances already use of them."""
    quotas = trn_quotas(quota_client)
    instances = describe_trn_instances(client)
    sizes = dict(vcpus_by_type)
    unknown = sorted({i.get("InstanceType") for i in instances if not i.get("CpuOptions") and i.get("InstanceType") not in sizes})
    if unknown:
        for info in describe_instance_types(client, unknown):
            sizes[info["InstanceType"]] = int((info.get("VCpuInfo") or {}).get("DefaultVCpus", 0))
    used = trn_vcpus_in_use(instances, cluster_name, sizes)
    return {option: (dict(quota, used_by_others=used[option]) if quota else None) for option, quota in quotas.items()}


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
