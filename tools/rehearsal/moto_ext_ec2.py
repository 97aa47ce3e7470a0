# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""EC2 additions to moto server for the trainium.eks rehearsal (see moto_ext.py).

1. Capacity reservations. moto answers NotImplemented; this adds
   CreateCapacityReservation, DescribeCapacityReservations (ids and the
   filters instance-type, state, availability-zone, reservation-type,
   instance-match-criteria) and CancelCapacityReservation. Reservations live
   on the region's EC2 backend, so `POST /moto-api/reset` clears them.
   Capacity Blocks for ML: DescribeCapacityBlockOfferings offers a block of
   the asked type, count and duration (CapacityDurationHours, a multiple of
   24) in each zone of the region that offers the type, starting at the start
   of StartDateRange (else in 24 hours); PurchaseCapacityBlock makes it a
   reservation of ReservationType capacity-block and EndDateType limited,
   whose State follows the clock as EC2 documents it: scheduled before its
   StartDate, active until its EndDate, expired after (EC2 User Guide,
   "Capacity Blocks for ML"; AWS starts blocks at 11:30 UTC and sells only
   some counts and durations, which the rehearsal does not restrict).
2. Placement groups. moto answers HTTP 500; this adds CreatePlacementGroup
   (strategy cluster, spread or partition with PartitionCount 1-7, tags from
   TagSpecifications of type placement-group), DescribePlacementGroups
   (GroupNames, GroupIds and the filters group-name, group-id, strategy,
   state, tag:<key>, tag-key) and DeletePlacementGroup, with AWS's errors
   InvalidPlacementGroup.Duplicate / .Unknown. Groups are `available` at
   once, have a `pg-` ID and an ARN, and live on the region's EC2 backend
   (cleared by `POST /moto-api/reset`).
3. EKS-optimized AMIs. For Kubernetes 1.31 to 1.35, the Amazon Linux 2023
   Neuron AMI releases `amazon-eks-node-al2023-x86_64-neuron-<k8s>-v<date>`
   of v20251120 (Neuron driver 2.24), v20260625 (2.28) and v20260714 (2.29,
   the newest the collection's driver table knows, which moto_ext_ssm.py
   makes the recommended one, as AWS's recommended is at least that new), and
   for 1.31 and 1.32 only (AWS publishes no AL2 AMIs after 1.32) the
   Amazon Linux 2 GPU AMI `amazon-eks-gpu-node-<k8s>-v<date>`, are
   registered in the region's EC2 backend when it loads its default AMIs (so
   they survive a reset): owner 602401143452 (the EKS AMI account), x86_64,
   HVM, EBS root /dev/xvda, named like the release, with a stable ID derived
   from that name. moto_ext_ssm.py publishes their public SSM parameters.
4. Security group rule descriptions. moto answers
   UpdateSecurityGroupRuleDescriptionsIngress/Egress with an empty body; AWS
   answers `Return: true`, which amazon.aws.ec2_security_group reads when it
   updates the description of an existing rule. This keeps moto's handling
   and adds the `Return` (moto 5.2.5 may still keep the old description of a
   group-to-group rule; the collection's roles never change descriptions).
"""

from __future__ import annotations

import datetime
import hashlib
import uuid

from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.responses import EC2Response


def ec2_backend(backend):
    """The EC2 backend of the account and region of another service's ``backend``."""
    from moto.ec2.models import ec2_backends  # pylint: disable=import-outside-toplevel

    return ec2_backends[backend.account_id][backend.region_name]


# 1. Capacity reservations ------------------------------------------------------

_STORE = "_trainium_capacity_reservations"
_FILTERS = {
    "instance-type": "InstanceType",
    "state": "State",
    "availability-zone": "AvailabilityZone",
    "reservation-type": "ReservationType",
    "instance-match-criteria": "InstanceMatchCriteria",
}


def _store(response):
    backend = response.ec2_backend
    if not hasattr(backend, _STORE):
        setattr(backend, _STORE, {})
    return getattr(backend, _STORE)


def _zone_id(response, zone_name):
    for zone in response.ec2_backend.describe_availability_zones():
        if zone.name == zone_name:
            return zone.zone_id
    raise EC2ClientError("InvalidParameterValue", f"Invalid availability zone: [{zone_name}]")


def create_capacity_reservation(self):
    self.error_on_dryrun()
    zone = self._get_param("AvailabilityZone")
    count = int(self._get_param("InstanceCount"))
    reservation_id = "cr-" + uuid.uuid4().hex[:17]
    reservation = {
        "CapacityReservationId": reservation_id,
        "OwnerId": self.current_account,
        "CapacityReservationArn": f"arn:aws:ec2:{self.region}:{self.current_account}:capacity-reservation/{reservation_id}",
        "InstanceType": self._get_param("InstanceType"),
        "InstancePlatform": self._get_param("InstancePlatform"),
        "AvailabilityZone": zone,
        "AvailabilityZoneId": _zone_id(self, zone),
        "Tenancy": self._get_param("Tenancy", "default"),
        "TotalInstanceCount": count,
        "AvailableInstanceCount": count,
        "EbsOptimized": bool(self._get_param("EbsOptimized", False)),
        "EphemeralStorage": False,
        "State": "active",
        "StartDate": datetime.datetime.now(datetime.timezone.utc),
        "EndDateType": self._get_param("EndDateType", "unlimited"),
        "InstanceMatchCriteria": self._get_param("InstanceMatchCriteria", "open"),
        "CreateDate": datetime.datetime.now(datetime.timezone.utc),
        "ReservationType": "default",
        "Tags": [],
    }
    _store(self)[reservation_id] = reservation
    return ActionResult({"CapacityReservation": reservation})


# Trainium types EC2 sells Capacity Blocks of (EC2 User Guide, "Capacity Blocks for ML", supported instance types).
CAPACITY_BLOCK_TYPES = ("trn1.32xlarge", "trn2.48xlarge")


def _block_state(reservation, now=None):
    """A Capacity Block's State by the clock: scheduled, active, then expired (a cancelled one stays so)."""
    if reservation.get("ReservationType") != "capacity-block" or reservation["State"] == "cancelled":
        return reservation["State"]
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if now < reservation["StartDate"]:
        return "scheduled"
    return "active" if now < reservation["EndDate"] else "expired"


def capacity_reservation(backend, reservation_id):
    """The reservation ``reservation_id`` of the account and region of another service's ``backend`` (State by the
    clock), or None."""
    reservation = getattr(ec2_backend(backend), _STORE, {}).get(reservation_id)
    if reservation is not None:
        reservation["State"] = _block_state(reservation)
    return reservation


def _offerings(response):
    return response.ec2_backend.__dict__.setdefault("_trainium_capacity_block_offerings", {})


def describe_capacity_block_offerings(self):
    self.error_on_dryrun()
    itype, count = self._get_param("InstanceType"), int(self._get_param("InstanceCount") or 1)
    hours = int(self._get_param("CapacityDurationHours"))
    if hours <= 0 or hours % 24:
        raise EC2ClientError("InvalidParameterValue", f"CapacityDurationHours {hours} is not a whole number of days (24-hour multiples)")
    if itype not in CAPACITY_BLOCK_TYPES:
        return ActionResult({"CapacityBlockOfferings": []})
    start = self._get_param("StartDateRange")  # moto parses the timestamp (a datetime), or passes its text on
    if isinstance(start, str):
        start = datetime.datetime.fromisoformat(start.replace("Z", "+00:00"))
    start = start or datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=24)
    if start.tzinfo is None:
        start = start.replace(tzinfo=datetime.timezone.utc)
    offered = []
    zones = sorted(o["Location"] for o in self.ec2_backend.describe_instance_type_offerings("availability-zone", {"instance-type": [itype]}))
    for zone in zones:
        offering = {
            "CapacityBlockOfferingId": "cb-" + uuid.uuid4().hex[:17], "InstanceType": itype, "AvailabilityZone": zone,
            "InstanceCount": count, "StartDate": start, "EndDate": start + datetime.timedelta(hours=hours),
            "CapacityBlockDurationHours": hours, "UpfrontFee": "0.00", "CurrencyCode": "USD", "Tenancy": "default",
        }
        _offerings(self)[offering["CapacityBlockOfferingId"]] = offering
        offered.append(offering)
    return ActionResult({"CapacityBlockOfferings": offered})


def purchase_capacity_block(self):
    self.error_on_dryrun()
    offering = _offerings(self).pop(self._get_param("CapacityBlockOfferingId"), None)
    if offering is None:
        raise EC2ClientError("InvalidCapacityBlockOfferingId.NotFound",
                             f"The Capacity Block offering ID '{self._get_param('CapacityBlockOfferingId')}' does not exist")
    reservation_id = "cr-" + uuid.uuid4().hex[:17]
    now = datetime.datetime.now(datetime.timezone.utc)
    reservation = {
        "CapacityReservationId": reservation_id, "OwnerId": self.current_account,
        "CapacityReservationArn": f"arn:aws:ec2:{self.region}:{self.current_account}:capacity-reservation/{reservation_id}",
        "InstanceType": offering["InstanceType"], "InstancePlatform": self._get_param("InstancePlatform"),
        "AvailabilityZone": offering["AvailabilityZone"], "AvailabilityZoneId": _zone_id(self, offering["AvailabilityZone"]),
        "Tenancy": "default", "TotalInstanceCount": offering["InstanceCount"], "AvailableInstanceCount": offering["InstanceCount"],
        "EbsOptimized": True, "EphemeralStorage": False, "State": "scheduled", "StartDate": offering["StartDate"],
        "EndDate": offering["EndDate"], "EndDateType": "limited", "InstanceMatchCriteria": "targeted", "CreateDate": now,
        "ReservationType": "capacity-block", "Tags": [],
    }
    reservation["State"] = _block_state(reservation, now)
    _store(self)[reservation_id] = reservation
    return ActionResult({"CapacityReservation": reservation})


def describe_capacity_reservations(self):
    self.error_on_dryrun()
    store = _store(self)
    for reservation in store.values():
        reservation["State"] = _block_state(reservation)
    ids = self._get_param("CapacityReservationIds", [])
    for reservation_id in ids:
        if reservation_id not in store:
            raise EC2ClientError(
                "InvalidCapacityReservationId.NotFound",
                f"The capacity reservation ID '{reservation_id}' does not exist",
            )
    found = [store[i] for i in ids] if ids else list(store.values())
    for name, values in (self._filters_from_querystring() or {}).items():
        key = _FILTERS.get(name)
        if key is None:
            raise EC2ClientError("InvalidParameterValue", f"The filter '{name}' is invalid")
        found = [r for r in found if r.get(key) in values]
    return ActionResult({"CapacityReservations": found})


def cancel_capacity_reservation(self):
    self.error_on_dryrun()
    reservation_id = self._get_param("CapacityReservationId")
    reservation = _store(self).get(reservation_id)
    if reservation is None:
        raise EC2ClientError(
            "InvalidCapacityReservationId.NotFound",
            f"The capacity reservation ID '{reservation_id}' does not exist",
        )
    reservation["State"] = "cancelled"
    return ActionResult({"Return": True})


# 2. Placement groups -------------------------------------------------------

_PG_STORE = "_trainium_placement_groups"
_PG_STRATEGIES = ("cluster", "spread", "partition")


def _placement_groups(response):
    backend = response.ec2_backend
    if not hasattr(backend, _PG_STORE):
        setattr(backend, _PG_STORE, {})
    return getattr(backend, _PG_STORE)


def _unknown_placement_group(name):
    return EC2ClientError("InvalidPlacementGroup.Unknown", f"The Placement Group '{name}' is unknown.")


def _tag_list(tags):
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def create_placement_group(self):
    self.error_on_dryrun()
    name = self._get_param("GroupName")
    strategy = self._get_param("Strategy")
    if not name:
        raise EC2ClientError("MissingParameter", "The request must contain the parameter groupName")
    if strategy not in _PG_STRATEGIES:
        raise EC2ClientError("InvalidParameterValue", f"Value ({strategy}) for parameter strategy is invalid.")
    groups = _placement_groups(self)
    if name in groups:
        raise EC2ClientError("InvalidPlacementGroup.Duplicate", f"The Placement Group '{name}' already exists.")
    group_id = "pg-" + uuid.uuid4().hex[:17]
    group = {
        "GroupName": name,
        "State": "available",
        "Strategy": strategy,
        "GroupId": group_id,
        "GroupArn": f"arn:aws:ec2:{self.region}:{self.current_account}:placement-group/{name}",
        "Tags": _tag_list(self._parse_tag_specification().get("placement-group", {})),
    }
    count = self._get_param("PartitionCount")
    if strategy == "partition":
        count = int(count or 2)
        if not 1 <= count <= 7:
            raise EC2ClientError("InvalidParameterValue", f"Value ({count}) for parameter partitionCount is invalid.")
        group["PartitionCount"] = count
    elif count:
        raise EC2ClientError("InvalidParameterCombination", "PartitionCount is only valid for the partition strategy.")
    if strategy == "spread" and self._get_param("SpreadLevel"):
        group["SpreadLevel"] = self._get_param("SpreadLevel")
    groups[name] = group
    return ActionResult({"PlacementGroup": group})


def _placement_group_matches(group, name, values):
    tags = {t["Key"]: t["Value"] for t in group["Tags"]}
    if name == "group-name":
        return group["GroupName"] in values
    if name == "group-id":
        return group["GroupId"] in values
    if name == "strategy":
        return group["Strategy"] in values
    if name == "state":
        return group["State"] in values
    if name == "tag-key":
        return any(key in values for key in tags)
    if name.startswith("tag:"):
        return tags.get(name[4:]) in values
    raise EC2ClientError("InvalidParameterValue", f"The filter '{name}' is invalid")


def describe_placement_groups(self):
    self.error_on_dryrun()
    groups = _placement_groups(self)
    found = list(groups.values())
    names = self._get_param("GroupNames", [])
    if names:
        for name in names:
            if name not in groups:
                raise _unknown_placement_group(name)
        found = [groups[n] for n in names]
    ids = self._get_param("GroupIds", [])
    if ids:
        by_id = {g["GroupId"]: g for g in groups.values()}
        for group_id in ids:
            if group_id not in by_id:
                raise EC2ClientError("InvalidPlacementGroupId.NotFound", f"The Placement Group ID '{group_id}' does not exist")
        found = [g for g in found if g["GroupId"] in ids]
    for name, values in (self._filters_from_querystring() or {}).items():
        found = [g for g in found if _placement_group_matches(g, name, values)]
    return ActionResult({"PlacementGroups": found})


def delete_placement_group(self):
    self.error_on_dryrun()
    name = self._get_param("GroupName")
    if _placement_groups(self).pop(name, None) is None:
        raise _unknown_placement_group(name)
    return ActionResult({})


# 3. EKS-optimized AMIs ----------------------------------------------------------

EKS_AMI_OWNER = "602401143452"
# Oldest first: the last is the recommended release.
EKS_AMI_RELEASE_DATES = ("20251120", "20260625", "20260714")
EKS_AMI_KUBERNETES_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35")
EKS_AL2_LAST_VERSION = "1.32"
_EKS_SSM_PREFIX = "/aws/service/eks/optimized-ami"
_EKS_PATCH = {"1.31": "1.31.13", "1.32": "1.32.9", "1.33": "1.33.5", "1.34": "1.34.2", "1.35": "1.35.0"}


def eks_ami_id(image_name):
    """The stable AMI ID the rehearsal gives the EKS AMI release ``image_name``."""
    return "ami-0" + hashlib.sha256(image_name.encode()).hexdigest()[:16]


def eks_amis():
    """Every rehearsal EKS AMI: (SSM path of its variant, image name, release version), each variant's releases oldest first."""
    found = []
    for version in EKS_AMI_KUBERNETES_VERSIONS:
        for date in EKS_AMI_RELEASE_DATES:
            release = f"{_EKS_PATCH[version]}-{date}"
            found.append((
                f"{_EKS_SSM_PREFIX}/{version}/amazon-linux-2023/x86_64/neuron",
                f"amazon-eks-node-al2023-x86_64-neuron-{version}-v{date}",
                release,
            ))
            if tuple(int(p) for p in version.split(".")) <= tuple(int(p) for p in EKS_AL2_LAST_VERSION.split(".")):
                found.append((
                    f"{_EKS_SSM_PREFIX}/{version}/amazon-linux-2-gpu",
                    f"amazon-eks-gpu-node-{version}-v{date}",
                    release,
                ))
    return found


def _load_eks_amis(original):
    def load(self):
        original(self)
        from moto.ec2.models.amis import Ami  # pylint: disable=import-outside-toplevel

        for _path, image_name, _release in eks_amis():
            ami_id = eks_ami_id(image_name)
            if ami_id in self.amis:
                continue
            self.amis[ami_id] = Ami(
                self, ami_id=ami_id, name=image_name, description=f"EKS Kubernetes Worker AMI {image_name}",
                owner_id=EKS_AMI_OWNER, owner_alias="amazon", public=True, virtualization_type="hvm",
                architecture="x86_64", root_device_type="ebs", root_device_name="/dev/xvda",
                image_location=f"amazon/{image_name}", platform=None, hypervisor="xen", sriov="simple",
            )

    return load


# 4. Security group rule descriptions -----------------------------------------

def _returns_true(original):
    def call(self):
        original(self)
        return ActionResult({"Return": True})

    return call


def install():
    from moto.ec2.models.amis import AmiBackend  # pylint: disable=import-outside-toplevel

    EC2Response.create_capacity_reservation = create_capacity_reservation
    EC2Response.describe_capacity_reservations = describe_capacity_reservations
    EC2Response.cancel_capacity_reservation = cancel_capacity_reservation
    EC2Response.describe_capacity_block_offerings = describe_capacity_block_offerings
    EC2Response.purchase_capacity_block = purchase_capacity_block
    EC2Response.create_placement_group = create_placement_group
    EC2Response.describe_placement_groups = describe_placement_groups
    EC2Response.delete_placement_group = delete_placement_group
    AmiBackend._load_amis = _load_eks_amis(AmiBackend._load_amis)  # pylint: disable=protected-access
    EC2Response.update_security_group_rule_descriptions_ingress = _returns_true(
        EC2Response.update_security_group_rule_descriptions_ingress)
    EC2Response.update_security_group_rule_descriptions_egress = _returns_true(
        EC2Response.update_security_group_rule_descriptions_egress)
