# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.eks_cluster and EKS's extended support, on the rehearsal's moto.

EKS moves a cluster to upgrade policy STANDARD only while its Kubernetes
version is in standard support (Amazon EKS User Guide, "Disable EKS extended
support"); the rehearsal refuses it as EKS does (tools/rehearsal/moto_ext_eks_versions.py,
which also answers DescribeClusterVersions from EKS's release calendar and
adds UpdateClusterVersion). The module reads the version's support status
before it asks: a cluster in extended support stays EXTENDED with a warning
(no failed call, nothing changed, the same on every run); one whose version
update in the same run reaches standard support is moved after the update.
The versions come from DescribeClusterVersions, so the tests follow the calendar.
"""

from __future__ import annotations

import datetime

ACCOUNT = "123456789012"


def module_args(rehearsal, subnets, **extra):
    return {"name": "trn-policy", "role_arn": f"arn:aws:iam::{ACCOUNT}:role/eks", "subnets": subnets, "region": "us-west-2",
            "endpoint_url": rehearsal["AWS_ENDPOINT_URL"], "oidc_provider": False, **extra}


def versions(aws):
    """{version: versionStatus} of the versions EKS supports today."""
    return {i["clusterVersion"]: i["versionStatus"] for i in aws.client("eks").describe_cluster_versions()["clusterVersions"]}


def next_minor(version):
    major, minor = version.split(".")
    return f"{major}.{int(minor) + 1}"


def test_a_cluster_in_extended_support_stays_extended_with_a_warning_and_moves_once_upgraded(aws, rehearsal, run_module):
    status = versions(aws)
    # The newest version in extended support whose next minor is in standard support (1.34 -> 1.35 in December 2026).
    old = [v for v in status if status[v] == "EXTENDED_SUPPORT" and status.get(next_minor(v)) == "STANDARD_SUPPORT"]
    assert old, f"no such pair of versions on {datetime.date.today()}: {status} (update moto_ext_eks_versions.VERSIONS)"
    old = old[-1]
    eks = aws.client("eks")
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"] if s.get("DefaultForAz")][:2]

    made = run_module("trainium.eks.eks_cluster", module_args(rehearsal, subnets, version=old, upgrade_policy="EXTENDED"))
    assert made.get("failed") is not True and made["changed"] is True, made

    for check in (False, True, False):
        held = run_module("trainium.eks.eks_cluster", module_args(rehearsal, subnets, version=old, upgrade_policy="STANDARD"), check=check)
        assert held.get("failed") is not True and held["changed"] is False, held
        warning = " ".join(held.get("warnings", []))
        assert f"upgrade_policy: STANDARD is not applied to EKS cluster trn-policy: it runs Kubernetes {old}, in extended support since" in warning
        assert "(eks_cluster_upgrade_policy)" in warning, warning
        assert eks.describe_cluster(name="trn-policy")["cluster"]["upgradePolicy"] == {"supportType": "EXTENDED"}

    # The version update first (one minor up, to standard support), then the policy, in one run, no warning.
    newer = next_minor(old)
    moved = run_module("trainium.eks.eks_cluster", module_args(rehearsal, subnets, version=newer, upgrade_policy="STANDARD"))
    assert moved.get("failed") is not True and moved["changed"] is True, moved
    assert moved["updates"] == ["version", "upgrade_policy"], moved["updates"]
    assert not [w for w in moved.get("warnings", []) if "extended support" in w], moved["warnings"]
    cluster = eks.describe_cluster(name="trn-policy")["cluster"]
    assert cluster["version"] == newer and cluster["upgradePolicy"] == {"supportType": "STANDARD"}
    again = run_module("trainium.eks.eks_cluster", module_args(rehearsal, subnets, version=newer, upgrade_policy="STANDARD"))
    assert again.get("failed") is not True and again["changed"] is False, again
