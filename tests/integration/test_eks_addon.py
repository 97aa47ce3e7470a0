# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium.eks.eks_addon against the rehearsal's EKS add-ons (tools/rehearsal/moto_ext_eks_addons.py).

No role uses the module yet, so there is no Molecule scenario: its whole flow is here (create with an IAM role
for the service account, a second run that changes nothing, an update of the role and configuration, check
mode, a version EKS does not offer, a failed add-on, absent twice), checked against what EKS reports.
"""

from __future__ import annotations

import json

import pytest

ACCOUNT = "123456789012"
CLUSTER = "trn-addons"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/trn-addons-vpc-cni"
OTHER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/trn-addons-vpc-cni-2"
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity",
    "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.example"},
}]})


@pytest.fixture()
def cluster(aws):
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    iam = aws.client("iam")
    for role in (ROLE, OTHER_ROLE):
        iam.create_role(RoleName=role.rsplit("/", 1)[1], AssumeRolePolicyDocument=TRUST)
        iam.attach_role_policy(RoleName=role.rsplit("/", 1)[1], PolicyArn="arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy")
    return aws.client("eks").create_cluster(name=CLUSTER, version="1.34", roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks",
                                            resourcesVpcConfig={"subnetIds": subnets})["cluster"]


@pytest.fixture()
def addon_module(run_module, rehearsal):
    def run(check=False, **args):
        module_args = dict({"cluster_name": CLUSTER, "name": "vpc-cni", "region": "us-west-2"}, endpoint_url=rehearsal["AWS_ENDPOINT_URL"], **args)
        return run_module("trainium.eks.eks_addon", module_args, check=check)

    return run


def described(aws, name="vpc-cni"):
    try:
        return aws.client("eks").describe_addon(clusterName=CLUSTER, addonName=name)["addon"]
    except aws.client("eks").exceptions.ResourceNotFoundException:
        return None


def test_vpc_cni_with_its_own_role_from_create_to_absent(aws, cluster, addon_module):  # pylint: disable=unused-argument
    settings = {"service_account_role_arn": ROLE, "tags": {"trainium.eks/cluster": CLUSTER}, "wait": True}
    planned = addon_module(check=True, **settings)
    assert planned["changed"] is True and planned["addon"]["status"] == "CREATING", planned
    assert planned["addon"]["version"] == "v1.20.4-eksbuild.2" and described(aws) is None

    created = addon_module(**settings)
    assert created["changed"] is True and created["addon"]["status"] == "ACTIVE", created
    addon = described(aws)
    assert (addon["status"], addon["addonVersion"], addon["serviceAccountRoleArn"]) == ("ACTIVE", "v1.20.4-eksbuild.2", ROLE)
    assert addon["tags"] == {"trainium.eks/cluster": CLUSTER} and "configurationValues" not in addon

    again = addon_module(**settings)
    assert again["changed"] is False and again["updates"] == [], again

    configuration = {"env": {"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "1"}}
    changes = dict(settings, service_account_role_arn=OTHER_ROLE, configuration_values=configuration)
    checked = addon_module(check=True, **changes)
    assert checked["changed"] is True and checked["updates"] == []
    assert checked["addon"]["service_account_role_arn"] == OTHER_ROLE and checked["addon"]["configuration_values"] == configuration
    assert described(aws)["serviceAccountRoleArn"] == ROLE and "configurationValues" not in described(aws)

    updated = addon_module(**changes)
    assert updated["changed"] is True and len(updated["updates"]) == 1, updated
    assert {p["type"] for p in updated["updates"][0]["params"]} == {"ServiceAccountRoleArn", "ConfigurationValues", "ResolveConflicts"}
    addon = described(aws)
    assert (addon["status"], addon["serviceAccountRoleArn"]) == ("ACTIVE", OTHER_ROLE)
    assert json.loads(addon["configurationValues"]) == configuration
    # The same configuration as JSON text in another key order is no change.
    as_text = addon_module(**dict(changes, configuration_values='{"env": {"WARM_PREFIX_TARGET": "1", "ENABLE_PREFIX_DELEGATION": "true"}}'))
    assert as_text["changed"] is False, as_text

    wrong = addon_module(**dict(changes, addon_version="v1.20.99-eksbuild.1"))
    assert wrong.get("failed") is True
    assert wrong["msg"] == ("addon_version: got 'v1.20.99-eksbuild.1' (str); allowed: a version EKS offers for add-on vpc-cni on "
                            "Kubernetes 1.34: v1.20.4-eksbuild.2, v1.20.1-eksbuild.3, v1.19.6-eksbuild.7, v1.19.5-eksbuild.3 "
                            "(default v1.20.4-eksbuild.2)")
    assert described(aws)["addonVersion"] == "v1.20.4-eksbuild.2"

    pinned = addon_module(**dict(changes, addon_version="v1.20.4-eksbuild.2"))
    assert pinned["changed"] is False, pinned

    planned_delete = addon_module(check=True, state="absent")
    assert planned_delete["changed"] is True and described(aws)["status"] == "ACTIVE"
    removed = addon_module(state="absent", wait=True)
    assert removed["changed"] is True and removed["addon"]["status"] == "DELETING"
    assert aws.client("eks").list_addons(clusterName=CLUSTER)["addons"] == []
    assert addon_module(state="absent")["changed"] is False


def test_unknown_addon_bad_role_and_missing_cluster(aws, cluster, addon_module):  # pylint: disable=unused-argument
    unknown = addon_module(name="vpc_cni")
    assert unknown.get("failed") is True
    assert unknown["msg"] == "name: got 'vpc_cni' (str); allowed: an add-on EKS offers for Kubernetes 1.34: aws-ebs-csi-driver, coredns, kube-proxy, vpc-cni"
    bad_role = addon_module(service_account_role_arn="trn-addons-vpc-cni")
    assert bad_role.get("failed") is True and bad_role["msg"].startswith("1 problem(s) in the parameters: service_account_role_arn: got")
    missing = addon_module(cluster_name="no-such-cluster")
    assert missing.get("failed") is True and missing["msg"].startswith("cluster_name: EKS cluster no-such-cluster does not exist")
    assert addon_module(cluster_name="no-such-cluster", state="absent")["changed"] is False
    assert aws.client("eks").list_addons(clusterName=CLUSTER)["addons"] == []


def test_a_failed_addon_is_reported_with_its_health_issues(aws, cluster, addon_module):  # pylint: disable=unused-argument
    fault = {"rehearsal.trainium.eks/fault": "create-failed"}
    failed = addon_module(tags=fault, wait=True)
    assert failed.get("failed") is True
    assert failed["msg"].startswith("add-on vpc-cni of cluster trn-addons is CREATE_FAILED: ConfigurationConflict: Conflicts found"), failed
    again = addon_module(tags=fault, service_account_role_arn=ROLE)
    assert again.get("failed") is True and "is CREATE_FAILED (ConfigurationConflict: " in again["msg"]
    assert "delete it (state=absent) and run again" in again["msg"]
    assert "serviceAccountRoleArn" not in described(aws)
    assert addon_module(state="absent", wait=True)["changed"] is True
    created = addon_module(service_account_role_arn=ROLE, wait=True)
    assert created["changed"] is True and described(aws)["status"] == "ACTIVE"


def test_a_version_upgrade_waits_for_the_addon_being_created(aws, cluster, addon_module):  # pylint: disable=unused-argument
    created = addon_module(name="coredns", addon_version="v1.12.3-eksbuild.1")
    assert created["changed"] is True and created["addon"]["status"] == "CREATING"
    # EKS refuses UpdateAddon while the add-on is CREATING: the module waits that out first.
    upgraded = addon_module(name="coredns", addon_version="v1.12.4-eksbuild.1", resolve_conflicts="PRESERVE", wait=True)
    assert upgraded["changed"] is True and upgraded["addon"]["status"] == "ACTIVE", upgraded
    params = {p["type"]: p["value"] for p in upgraded["updates"][0]["params"]}
    assert params == {"AddonVersion": "v1.12.4-eksbuild.1", "ResolveConflicts": "PRESERVE"}
    assert described(aws, "coredns")["addonVersion"] == "v1.12.4-eksbuild.1"
    assert addon_module(name="coredns", addon_version="v1.12.4-eksbuild.1")["changed"] is False
