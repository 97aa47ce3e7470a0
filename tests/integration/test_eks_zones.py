# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.eks_cluster when EKS has no room in a zone (UnsupportedAvailabilityZoneException).

The rehearsal's moto refuses CreateCluster in the zones listed in its state
directory's ``eks-full-zones`` file, as EKS does: the error names the zones
to choose from (tools/rehearsal/moto_ext_faults.py). The module tries once
more without the refused zone's subnets when two zones are left, warns, and
records the subnets left out on the cluster; fewer than two zones left fail
the task, naming the zones EKS supports, with nothing created. Every
assertion on the account reads moto.
"""

from __future__ import annotations

import pathlib

import pytest

ACCOUNT = "123456789012"
SKIPPED_TAG = "trainium.eks/control-plane-skipped-subnets"


@pytest.fixture()
def full_zone(rehearsal):
    """us-west-2c (zone ID usw2-az3) refuses EKS control planes while the test runs."""
    path = pathlib.Path(rehearsal.get("TRAINIUM_REHEARSAL_MOTO_DIR") or rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "eks-full-zones"
    path.write_text("usw2-az3\n")
    yield "us-west-2c"
    path.unlink()


@pytest.fixture()
def subnets(aws):
    """The default VPC's subnet in each of us-west-2a, b and c."""
    found = {s["AvailabilityZone"]: s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"] if s.get("DefaultForAz")}
    return {zone: found[zone] for zone in ("us-west-2a", "us-west-2b", "us-west-2c")}


def create(run_module, rehearsal, name, subnet_ids, check=False):
    return run_module("trainium.eks.eks_cluster", {
        "name": name, "role_arn": f"arn:aws:iam::{ACCOUNT}:role/eks", "subnets": subnet_ids, "region": "us-west-2",
        "endpoint_url": rehearsal["AWS_ENDPOINT_URL"], "oidc_provider": False, "tags": {"ManagedBy": "trainium.eks"}}, check=check)


def test_a_full_zone_is_left_out_with_a_warning_and_later_runs_change_nothing(aws, rehearsal, run_module, full_zone, subnets):
    eks = aws.client("eks")
    asked = [subnets["us-west-2a"], subnets["us-west-2b"], subnets[full_zone]]
    made = create(run_module, rehearsal, "trn-zones", asked)
    assert made.get("failed") is not True and made["changed"] is True, made
    cluster = eks.describe_cluster(name="trn-zones")["cluster"]
    assert sorted(cluster["resourcesVpcConfig"]["subnetIds"]) == sorted(asked[:2])
    assert cluster["tags"][SKIPPED_TAG] == subnets[full_zone]
    warning = " ".join(made.get("warnings", []))
    assert f"EKS refused the zone of subnet(s) {subnets[full_zone]} for its control plane (UnsupportedAvailabilityZoneException)" in warning

    for check in (True, False):
        again = create(run_module, rehearsal, "trn-zones", asked, check=check)
        assert again.get("failed") is not True and again["changed"] is False and not again.get("warnings"), again
    assert eks.describe_cluster(name="trn-zones")["cluster"]["tags"][SKIPPED_TAG] == subnets[full_zone]


def test_one_zone_left_fails_naming_the_zones_eks_supports_and_creates_nothing(aws, rehearsal, run_module, full_zone, subnets):
    refused = create(run_module, rehearsal, "trn-zones", [subnets["us-west-2a"], subnets[full_zone]])
    assert refused.get("failed") is True, refused
    assert refused["msg"].startswith(f"subnets: EKS refused cluster trn-zones's control plane in {full_zone} "
                                     "(UnsupportedAvailabilityZoneException); the other subnets are in 1 zone(s) (us-west-2a); "
                                     "allowed: subnets in at least two of the zones EKS named, us-west-2a, us-west-2b, us-west-2d"), refused
    assert aws.client("eks").list_clusters()["clusters"] == []
