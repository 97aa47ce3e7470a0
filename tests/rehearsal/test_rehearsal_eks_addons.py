# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's EKS managed add-ons (tools/rehearsal/moto_ext_eks_addons.py) against a running moto server."""

from __future__ import annotations

import botocore.exceptions
import pytest

ROLE = "arn:aws:iam::123456789012:role/trn-rehearsal-vpc-cni"
KUBERNETES_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35")
ADDONS = ("aws-ebs-csi-driver", "coredns", "kube-proxy", "vpc-cni")


def code_of(call, *args, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        call(*args, **kwargs)
    return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]


@pytest.fixture()
def eks(aws):
    return aws.client("eks")


@pytest.fixture()
def make_cluster(aws, eks):
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]

    def make(name="trn-addons", version="1.34"):
        return eks.create_cluster(name=name, version=version, roleArn="arn:aws:iam::123456789012:role/eks",
                                  resourcesVpcConfig={"subnetIds": subnets})["cluster"]

    return make


def status_of(eks, name, cluster="trn-addons"):
    try:
        return eks.describe_addon(clusterName=cluster, addonName=name)["addon"]["status"]
    except eks.exceptions.ResourceNotFoundException:
        return "gone"


@pytest.mark.parametrize("kubernetes_version", KUBERNETES_VERSIONS)
def test_every_addon_has_one_default_version_per_kubernetes_version(eks, kubernetes_version):
    addons = eks.get_paginator("describe_addon_versions").paginate(kubernetesVersion=kubernetes_version).build_full_result()["addons"]
    assert sorted(a["addonName"] for a in addons) == list(ADDONS)
    for addon in addons:
        assert (addon["publisher"], addon["owner"]) == ("eks", "aws")
        versions = [v["addonVersion"] for v in addon["addonVersions"]]
        assert all(v.startswith("v") and "-eksbuild." in v for v in versions)
        assert [c["clusterVersion"] for v in addon["addonVersions"] for c in v["compatibilities"]] == [kubernetes_version] * len(versions)
        defaults = [v["addonVersion"] for v in addon["addonVersions"] if v["compatibilities"][0]["defaultVersion"]]
        assert len(defaults) == 1, (addon["addonName"], defaults)
    kube_proxy = next(a for a in addons if a["addonName"] == "kube-proxy")
    assert all(v["addonVersion"].startswith(f"v{kubernetes_version}.") for v in kube_proxy["addonVersions"])


def test_addon_versions_filters_and_pages(eks):
    assert [a["addonName"] for a in eks.describe_addon_versions(types=["storage"])["addons"]] == ["aws-ebs-csi-driver"]
    assert eks.describe_addon_versions(addonName="no-such-addon")["addons"] == []
    assert eks.describe_addon_versions(kubernetesVersion="1.19")["addons"] == []
    first = eks.describe_addon_versions(maxResults=3)
    rest = eks.describe_addon_versions(maxResults=3, nextToken=first["nextToken"])
    assert [a["addonName"] for a in first["addons"] + rest["addons"]] == list(ADDONS) and "nextToken" not in rest
    versions = [v["addonVersion"] for v in eks.describe_addon_versions(addonName="vpc-cni")["addons"][0]["addonVersions"]]
    assert versions[0] == "v1.20.4-eksbuild.2" and versions[-1] == "v1.19.2-eksbuild.1"


def test_addon_goes_creating_active_updating_active_deleting_gone(eks, make_cluster, wait_until):
    make_cluster()
    created = eks.create_addon(clusterName="trn-addons", addonName="vpc-cni", serviceAccountRoleArn=ROLE,
                               configurationValues='{"env": {"ENABLE_PREFIX_DELEGATION": "true"}}', tags={"team": "ml"})["addon"]
    assert created["status"] == "CREATING" and created["addonVersion"] == "v1.20.4-eksbuild.2"
    assert created["addonArn"].startswith("arn:aws:eks:us-west-2:123456789012:addon/trn-addons/vpc-cni/")
    assert (created["serviceAccountRoleArn"], created["tags"], created["health"]) == (ROLE, {"team": "ml"}, {"issues": []})
    assert code_of(eks.update_addon, clusterName="trn-addons", addonName="vpc-cni", configurationValues="")[0] == "ResourceInUseException"
    wait_until(lambda: status_of(eks, "vpc-cni") == "ACTIVE", timeout=30, what="vpc-cni to become ACTIVE")

    other = "arn:aws:iam::123456789012:role/other"
    update = eks.update_addon(clusterName="trn-addons", addonName="vpc-cni", serviceAccountRoleArn=other, configurationValues="env: {}\n",
                              resolveConflicts="PRESERVE")["update"]
    assert (update["type"], update["status"]) == ("AddonUpdate", "InProgress")
    params = {p["type"]: p["value"] for p in update["params"]}
    assert params == {"ServiceAccountRoleArn": other, "ConfigurationValues": "env: {}\n", "ResolveConflicts": "PRESERVE"}
    updated = eks.describe_addon(clusterName="trn-addons", addonName="vpc-cni")["addon"]
    assert (updated["status"], updated["serviceAccountRoleArn"], updated["configurationValues"]) == ("UPDATING", other, "env: {}\n")
    assert code_of(eks.update_addon, clusterName="trn-addons", addonName="vpc-cni", addonVersion="v1.19.6-eksbuild.7")[0] == \
        "ResourceInUseException"
    wait_until(lambda: status_of(eks, "vpc-cni") == "ACTIVE", timeout=30, what="vpc-cni to become ACTIVE after the update")
    eks.update_addon(clusterName="trn-addons", addonName="vpc-cni", addonVersion="v1.19.6-eksbuild.7", configurationValues="")
    updated = eks.describe_addon(clusterName="trn-addons", addonName="vpc-cni")["addon"]
    assert updated["addonVersion"] == "v1.19.6-eksbuild.7" and "configurationValues" not in updated

    assert eks.delete_addon(clusterName="trn-addons", addonName="vpc-cni", preserve=True)["addon"]["status"] == "DELETING"
    assert eks.list_addons(clusterName="trn-addons")["addons"] == ["vpc-cni"]
    wait_until(lambda: status_of(eks, "vpc-cni") == "gone", timeout=30, what="vpc-cni to be deleted")
    assert eks.list_addons(clusterName="trn-addons")["addons"] == []
    assert code_of(eks.delete_addon, clusterName="trn-addons", addonName="vpc-cni") == \
        ("ResourceNotFoundException", "No addon: vpc-cni found in cluster: trn-addons")


def test_aws_errors(eks, make_cluster):
    make_cluster(version="1.33")
    assert code_of(eks.create_addon, clusterName="nope", addonName="vpc-cni") == ("ResourceNotFoundException", "No cluster found for name: nope.")
    assert code_of(eks.describe_addon, clusterName="trn-addons", addonName="coredns")[0] == "ResourceNotFoundException"
    assert code_of(eks.update_addon, clusterName="trn-addons", addonName="coredns")[0] == "ResourceNotFoundException"
    assert code_of(eks.list_addons, clusterName="nope")[0] == "ResourceNotFoundException"
    assert code_of(eks.create_addon, clusterName="trn-addons", addonName="metrics-server") == \
        ("InvalidParameterException", "Addon metrics-server specified is not supported in 1.33 kubernetes version")
    # kube-proxy of another Kubernetes version
    assert code_of(eks.create_addon, clusterName="trn-addons", addonName="kube-proxy", addonVersion="v1.34.0-eksbuild.4") == \
        ("InvalidParameterException", "Addon version specified is not supported")
    for role in ("arn:aws:iam::123456789012:user/ops", "trn-rehearsal-vpc-cni", "arn:aws:iam::12345:role/x"):
        assert code_of(eks.create_addon, clusterName="trn-addons", addonName="vpc-cni", serviceAccountRoleArn=role)[0] == \
            "InvalidParameterException"
    assert code_of(eks.create_addon, clusterName="trn-addons", addonName="vpc-cni", configurationValues="[1, 2]")[0] == \
        "InvalidParameterException"
    assert code_of(eks.create_addon, clusterName="trn-addons", addonName="vpc-cni",
                   podIdentityAssociations=[{"serviceAccount": "aws-node", "roleArn": ROLE}])[1] == \
        "The rehearsal does not emulate podIdentityAssociations."
    assert eks.list_addons(clusterName="trn-addons")["addons"] == []
    created = eks.create_addon(clusterName="trn-addons", addonName="kube-proxy")["addon"]
    assert created["addonVersion"] == "v1.33.0-eksbuild.2"
    assert code_of(eks.create_addon, clusterName="trn-addons", addonName="kube-proxy") == ("ResourceInUseException", "Addon already exists.")
    assert code_of(eks.update_addon, clusterName="trn-addons", addonName="kube-proxy", addonVersion="v9")[0] == "InvalidParameterException"


def test_tags_of_an_addon_arn(eks, make_cluster):
    cluster = make_cluster()
    arn = eks.create_addon(clusterName="trn-addons", addonName="coredns", tags={"a": "1", "b": "2"})["addon"]["addonArn"]
    eks.tag_resource(resourceArn=arn, tags={"c": "3"})
    eks.untag_resource(resourceArn=arn, tagKeys=["a"])
    assert eks.list_tags_for_resource(resourceArn=arn)["tags"] == {"b": "2", "c": "3"}
    assert eks.describe_addon(clusterName="trn-addons", addonName="coredns")["addon"]["tags"] == {"b": "2", "c": "3"}
    eks.tag_resource(resourceArn=cluster["arn"], tags={"cluster": "yes"})
    assert eks.list_tags_for_resource(resourceArn=cluster["arn"])["tags"]["cluster"] == "yes"
    assert code_of(eks.tag_resource, resourceArn=arn.rsplit("/", 1)[0] + "/other-id", tags={"x": "y"})[0] == "ResourceNotFoundException"


def test_addons_go_with_their_cluster_and_list_in_pages(eks, make_cluster):
    make_cluster()
    for name in ADDONS:
        eks.create_addon(clusterName="trn-addons", addonName=name)
    first = eks.list_addons(clusterName="trn-addons", maxResults=3)
    assert first["addons"] == list(ADDONS[:3])
    assert eks.list_addons(clusterName="trn-addons", maxResults=3, nextToken=first["nextToken"])["addons"] == [ADDONS[3]]
    eks.delete_cluster(name="trn-addons")
    make_cluster()
    assert eks.list_addons(clusterName="trn-addons")["addons"] == []


@pytest.mark.parametrize("fault, status, code", [("create-failed", "CREATE_FAILED", "ConfigurationConflict"),
                                                 ("degraded", "DEGRADED", "InsufficientNumberOfReplicas")])
def test_fault_tag_ends_the_addon_unhealthy(eks, make_cluster, wait_until, fault, status, code):
    make_cluster()
    eks.create_addon(clusterName="trn-addons", addonName="vpc-cni", tags={"rehearsal.trainium.eks/fault": fault})
    wait_until(lambda: status_of(eks, "vpc-cni") == status, timeout=30, what=f"vpc-cni to become {status}")
    issues = eks.describe_addon(clusterName="trn-addons", addonName="vpc-cni")["addon"]["health"]["issues"]
    assert [i["code"] for i in issues] == [code]
