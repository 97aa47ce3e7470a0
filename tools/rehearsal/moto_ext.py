# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documented additions to moto server for the trainium.eks rehearsal.

Each one closes a moto 5.2.5 gap that blocks a real code path of the
collection, keeping the response shapes of the AWS API reference (moto
serializes them from the botocore model like its own answers). Nothing in
the collection knows about this file.

1. EC2 capacity reservations. moto answers NotImplemented; this adds
   CreateCapacityReservation, DescribeCapacityReservations (ids and the
   filters instance-type, state, availability-zone, reservation-type,
   instance-match-criteria) and CancelCapacityReservation. Reservations live
   on the region's EC2 backend, so `POST /moto-api/reset` clears them.
2. FSx file system lifecycle. moto's CreateFileSystem/DescribeFileSystems
   answers carry no Lifecycle, so a waiter for AVAILABLE never ends. As AWS
   documents, a new file system is CREATING, then AVAILABLE; here that takes
   TRAINIUM_REHEARSAL_FSX_CREATE_SECONDS (default 3) seconds.
3. EKS cluster endpoint. moto invents an endpoint and a random "CA". When
   TRAINIUM_REHEARSAL_KUBE_ENDPOINT is set and the PEM file named by
   TRAINIUM_REHEARSAL_KUBE_CA_FILE exists, CreateCluster and DescribeCluster
   answer with the rehearsal's kube-apiserver URL and its CA (base64 PEM, as
   EKS does), so the collection reaches Kubernetes the way it does on AWS.
"""

from __future__ import annotations

import base64
import datetime
import os
import time
import uuid

from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.responses import EC2Response

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


def describe_capacity_reservations(self):
    self.error_on_dryrun()
    store = _store(self)
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


def _fsx_to_dict(original):
    def to_dict(self):
        answer = original(self)
        if "Lifecycle" not in answer:
            created = self.__dict__.setdefault("_trainium_created", time.monotonic())
            delay = float(os.environ.get("TRAINIUM_REHEARSAL_FSX_CREATE_SECONDS", "3"))
            answer["Lifecycle"] = "AVAILABLE" if time.monotonic() - created >= delay else "CREATING"
        return answer

    return to_dict


def _local_apiserver(cluster):
    endpoint = os.environ.get("TRAINIUM_REHEARSAL_KUBE_ENDPOINT")
    ca_file = os.environ.get("TRAINIUM_REHEARSAL_KUBE_CA_FILE")
    if endpoint and ca_file and os.path.isfile(ca_file):
        with open(ca_file, "rb") as pem:
            cluster.certificate_authority = {"data": base64.b64encode(pem.read()).decode("ascii")}
        cluster.endpoint = endpoint
    return cluster


def _eks_cluster_call(original):
    def call(self, *args, **kwargs):
        return _local_apiserver(original(self, *args, **kwargs))

    return call


def install():
    from moto.eks.models import EKSBackend  # pylint: disable=import-outside-toplevel
    from moto.fsx.models import FileSystem  # pylint: disable=import-outside-toplevel

    FileSystem.to_dict = _fsx_to_dict(FileSystem.to_dict)
    EKSBackend.create_cluster = _eks_cluster_call(EKSBackend.create_cluster)
    EKSBackend.describe_cluster = _eks_cluster_call(EKSBackend.describe_cluster)
    EC2Response.create_capacity_reservation = create_capacity_reservation
    EC2Response.describe_capacity_reservations = describe_capacity_reservations
    EC2Response.cancel_capacity_reservation = cancel_capacity_reservation
