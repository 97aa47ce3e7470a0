# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS's Kubernetes versions and their support periods, which moto 5.2.5 does not know (see moto_ext.py).

DescribeClusterVersions (GET /cluster-versions) answers from the table below,
each version's support status computed from today's date as EKS computes it
(Amazon EKS User Guide, "Understand the Kubernetes version lifecycle on EKS":
standard support for 14 months after release, then 12 months of extended
support; the dates are those of its "Amazon EKS Kubernetes release calendar").
It filters by ``clusterVersions``, ``versionStatus`` and ``defaultOnly``, and
by default lists only versions still supported (``includeAll`` lists the
others too), each with ClusterVersionInformation's fields.

moto 5.2.5 has no UpdateClusterVersion (POST /clusters/<name>/updates): a
version update of the control plane could never run on the rehearsal. Here it
moves a cluster one minor version up to a version EKS still supports, as the
Amazon EKS User Guide documents ("Update existing cluster to new Kubernetes
version": one minor version at a time, no downgrade), InvalidParameterException
otherwise, ResourceInUseException while the cluster is not ACTIVE; it answers
an update of type VersionUpdate that DescribeUpdate reads (Successful at once;
AWS takes minutes). The messages are ours.

UpdateClusterConfig with upgradePolicy STANDARD on a cluster whose version is
in extended support is refused with InvalidRequestException: "You cannot
disable extended support once your cluster has entered it" (Amazon EKS User
Guide, "Disable EKS extended support"). AWS documents the rule, not its
message; the message here is ours. moto_ext_eks.py asks ``support_status``.

1.36's day of release is not in the sources read (EKS since June 2026): it is
taken as 2026-06-30, and its ends follow the 14 + 12 month rule. Nothing in
the collection knows about this file.
"""

from __future__ import annotations

import datetime
import json
import uuid

# version: (release, end of standard support, end of extended support), UTC dates.
VERSIONS = {
    "1.30": ("2024-05-23", "2025-07-23", "2026-07-23"),
    "1.31": ("2024-09-26", "2025-11-26", "2026-11-26"),
    "1.32": ("2025-01-23", "2026-03-23", "2027-03-23"),
    "1.33": ("2025-05-29", "2026-07-29", "2027-07-29"),
    "1.34": ("2025-10-02", "2026-12-02", "2027-12-02"),
    "1.35": ("2026-01-27", "2027-03-27", "2028-03-27"),
    "1.36": ("2026-06-30", "2027-08-30", "2028-08-30"),
}
# The version CreateCluster takes when none is given (ours: EKS documents that there is one, not which).
DEFAULT_VERSION = "1.35"
# The platform version moto gives every cluster (moto.eks.models.DEFAULT_PLATFORM_VERSION).
PLATFORM_VERSION = "eks.4"
# ClusterVersionInformation: versionStatus and its older twin status (Amazon EKS API Reference).
STATUS_NAMES = {"STANDARD_SUPPORT": "standard-support", "EXTENDED_SUPPORT": "extended-support", "UNSUPPORTED": "unsupported"}


def _date(text):
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)


def support_status(version, now=None):
    """STANDARD_SUPPORT, EXTENDED_SUPPORT or UNSUPPORTED for a version of the table, None for another one."""
    if str(version) not in VERSIONS:
        return None
    now = now or datetime.datetime.now(datetime.timezone.utc)
    _release, standard_end, extended_end = (_date(d) for d in VERSIONS[str(version)])
    if now < standard_end:
        return "STANDARD_SUPPORT"
    return "EXTENDED_SUPPORT" if now < extended_end else "UNSUPPORTED"


def version_information(version, now=None):
    """One ClusterVersionInformation (timestamps as epoch seconds, as the REST JSON protocol carries them)."""
    release, standard_end, extended_end = (_date(d) for d in VERSIONS[version])
    status = support_status(version, now)
    return {
        "clusterVersion": version, "clusterType": "eks", "defaultPlatformVersion": PLATFORM_VERSION,
        "defaultVersion": version == DEFAULT_VERSION, "releaseDate": release.timestamp(),
        "endOfStandardSupportDate": standard_end.timestamp(), "endOfExtendedSupportDate": extended_end.timestamp(),
        "status": STATUS_NAMES[status], "versionStatus": status,
    }


def _true(value):
    return str(value).lower() == "true"


def describe_cluster_versions(self):
    """DescribeClusterVersions from VERSIONS: supported versions unless includeAll, filtered as asked."""
    query = self.querystring
    wanted = query.get("clusterVersions") or []
    answer = [version_information(v) for v in VERSIONS if not wanted or v in wanted]
    if not _true((query.get("includeAll") or ["false"])[0]) and not wanted:
        answer = [v for v in answer if v["versionStatus"] != "UNSUPPORTED"]
    status = (query.get("versionStatus") or [None])[0]
    if status:
        answer = [v for v in answer if v["versionStatus"] == status]
    if _true((query.get("defaultOnly") or ["false"])[0]):
        answer = [v for v in answer if v["defaultVersion"]]
    return 200, {}, json.dumps({"clusterVersions": answer})


def standard_policy_problem(cluster):
    """Why a cluster cannot move to upgradePolicy STANDARD now, or None."""
    if support_status(cluster.version) != "EXTENDED_SUPPORT":
        return None
    return (f"Cluster {cluster.name} runs Kubernetes {cluster.version}, which is in extended support; "
            "extended support cannot be disabled for a cluster that has entered it. Upgrade the cluster to a version in "
            "standard support first.")


def version_update_problem(current, wanted):
    """Why EKS refuses to move a control plane from ``current`` to ``wanted``, or None."""
    if support_status(wanted) in (None, "UNSUPPORTED"):
        return f"Unsupported Kubernetes version {wanted}; supported: {', '.join(v for v in VERSIONS if support_status(v) != 'UNSUPPORTED')}."
    try:
        have, want = (tuple(int(p) for p in str(v).split(".")) for v in (current, wanted))
    except ValueError:
        return f"Unsupported Kubernetes minor version update from {current} to {wanted}."
    if want[0] != have[0] or want[1] != have[1] + 1:
        return f"Unsupported Kubernetes minor version update from {current} to {wanted}: one minor version up at a time, never down."
    return None


def update_cluster_version(self):
    """UpdateClusterVersion, which moto lacks: the rules of version_update_problem, then the cluster's new version."""
    from moto.eks import exceptions  # pylint: disable=import-outside-toplevel
    # Here, not at the top: moto_ext_eks imports this file.
    from moto_ext_eks import _record_update  # pylint: disable=import-outside-toplevel

    name, wanted = self._get_param("name") or self.path.rstrip("/").split("/")[-2], self._get_param("version")
    cluster = self.eks_backend.clusters.get(name)
    if cluster is None:
        raise exceptions.ResourceNotFoundException(clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None,
                                                   message=f"No cluster found for name: {name}.")
    if cluster.status != "ACTIVE":
        raise exceptions.ResourceInUseException(clusterName=name, nodegroupName=None, addonName=None,
                                                message=f"Cluster {name} is {cluster.status}; an update needs ACTIVE.")
    problem = version_update_problem(cluster.version, wanted)
    if problem:
        raise exceptions.InvalidParameterException(clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None,
                                                   message=problem)
    cluster.version = str(wanted)
    cluster.platformVersion = PLATFORM_VERSION
    answer = _record_update(self, name, {
        "id": str(uuid.uuid4()), "status": "Successful", "type": "VersionUpdate",
        "params": [{"type": "Version", "value": str(wanted)}, {"type": "PlatformVersion", "value": PLATFORM_VERSION}],
        "createdAt": datetime.datetime.now(datetime.timezone.utc).timestamp(), "errors": [],
    })
    return 200, {}, json.dumps({"update": answer})


def install():
    """Add DescribeClusterVersions and UpdateClusterVersion to moto's EKS (once per process)."""
    from moto.eks import urls  # pylint: disable=import-outside-toplevel
    from moto.eks.responses import EKSResponse  # pylint: disable=import-outside-toplevel

    urls.url_paths["{0}/cluster-versions$"] = urls.response.dispatch
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/updates$"] = urls.response.dispatch
    EKSResponse.describe_cluster_versions = describe_cluster_versions
    EKSResponse.update_cluster_version = update_cluster_version
