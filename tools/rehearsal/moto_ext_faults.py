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

Nothing in the collection knows about the tag.
"""

from __future__ import annotations

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


def install():
    """Wrap EKSBackend.create_nodegroup (once per process)."""
    if _INSTALLED:
        return
    from moto.eks import models

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
