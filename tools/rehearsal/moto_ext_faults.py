"""Faults a test asks the rehearsal's moto for, through the API itself.

Real AWS fails in ways moto never does; these let a test (or a person trying
the collection) provoke them with nothing but an ordinary request, so that
the collection's code paths for them run against a real server:

- A managed node group created with the tag
  ``rehearsal.trainium.eks/fault: create-failed`` ends ``CREATE_FAILED``
  with the health issue EKS reports when EC2 has no capacity for the
  instance type (``AsgInstanceLaunchFailures``, InsufficientInstanceCapacity).
  Deleting it works as for any node group; a node group created again
  without the tag is ``ACTIVE``.

- Zones EKS has no room in: the zone names or IDs listed (whitespace
  separated) in the file ``TRAINIUM_REHEARSAL_EKS_FULL_ZONES_FILE`` names
  (services/moto.sh: ``$TRAINIUM_REHEARSAL_DIR/eks-full-zones``). A
  CreateCluster with a subnet in one of them fails, before anything is
  created, with UnsupportedAvailabilityZoneException (HTTP 400) in AWS's
  shape: its message names the zone and the zones to choose from, and
  ``validZones`` lists the region's other zones (Amazon EKS API Reference,
  CreateCluster, Errors; the message as EKS words it). No file, or an empty
  one: every zone has room, as moto has it.

Nothing in the collection knows about the tag or the file.
"""

from __future__ import annotations

import os

FAULT_TAG = "rehearsal.trainium.eks/fault"
CREATE_FAILED = "create-failed"

_INSTALLED = []


def capacity_failure(nodegroup, instance_type):
    """The health of a node group whose instances EC2 could not launch."""
    zone_hint = ", ".join(nodegroup.subnets or []) or "its subnets"
    return {"issues": [{
        "code": "AsgInstanceLaunchFailures",
        "message": (f"Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have "
                    f"sufficient {instance_type + ' ' if instance_type else ''}capacity in the Availability Zone you requested ({zone_hint}). "
                    "Launching EC2 instance failed."),
        "resourceIds": [group["name"] for group in nodegroup.resources.get("autoScalingGroups", [])],
    }]}


def full_zones():
    """The zone names and IDs the fault file lists (empty: none)."""
    path = os.environ.get("TRAINIUM_REHEARSAL_EKS_FULL_ZONES_FILE")
    if not path:
        return set()
    try:
        with open(path, encoding="utf-8") as handle:
            return set(handle.read().split())
    except OSError:
        return set()


def unsupported_zone_error(backend, name, subnet_ids, full):
    """The UnsupportedAvailabilityZoneException EKS answers when a subnet is in a zone of ``full``, else None."""
    from moto.eks.exceptions import EKSError  # pylint: disable=import-outside-toplevel
    from moto_ext_ec2 import ec2_backend  # pylint: disable=import-outside-toplevel

    ec2 = ec2_backend(backend)
    refused = []
    for subnet_id in subnet_ids:
        try:
            subnet = ec2.get_subnet(subnet_id)
        except Exception:  # pylint: disable=broad-except
            continue  # moto's own check reports a subnet that does not exist
        if {subnet.availability_zone, getattr(subnet, "availability_zone_id", None)} & full:
            refused.append(subnet.availability_zone)
    if not refused:
        return None
    valid = sorted(zone.name for zone in ec2.describe_availability_zones() if not {zone.name, zone.zone_id} & full)

    class UnsupportedAvailabilityZoneException(EKSError):
        TYPE = "UnsupportedAvailabilityZoneException"
        STATUS = 400

    return UnsupportedAvailabilityZoneException(
        clusterName=name, nodegroupName=None, validZones=valid,
        message=(f"Cannot create cluster '{name}' because {sorted(refused)[0]}, the targeted availability zone, does not currently have "
                 f"sufficient capacity to support the cluster. Retry and choose from these availability zones: {', '.join(valid)}"))


def install():
    """Wrap EKSBackend.create_nodegroup and create_cluster (once per process)."""
    if _INSTALLED:
        return
    from moto.eks import models

    original_cluster = models.EKSBackend.create_cluster

    def create_cluster(self, name, role_arn, resources_vpc_config, *args, **kwargs):
        full = full_zones()
        if full:
            error = unsupported_zone_error(self, name, (resources_vpc_config or {}).get("subnetIds") or [], full)
            if error is not None:
                raise error
        return original_cluster(self, name, role_arn, resources_vpc_config, *args, **kwargs)

    models.EKSBackend.create_cluster = create_cluster

    original = models.EKSBackend.create_nodegroup

    def create_nodegroup(self, *args, **kwargs):
        nodegroup = original(self, *args, **kwargs)
        if (kwargs.get("tags") or {}).get(FAULT_TAG) == CREATE_FAILED:
            nodegroup.status = "CREATE_FAILED"
            # With a launch template the request names no instance type.
            instance_type = (kwargs.get("instance_types") or [None])[0]
            nodegroup.health = capacity_failure(nodegroup, instance_type)
        return nodegroup

    models.EKSBackend.create_nodegroup = create_nodegroup
    _INSTALLED.append(True)
