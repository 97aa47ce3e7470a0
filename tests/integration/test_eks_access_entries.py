# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.eks_cluster's access entries and authentication mode on the rehearsal's EKS (moto_ext_eks.py).

The role flow with an extra administrator (converge, idempotence, check mode, absent) is owned by the Molecule
scenario molecule/eks_cluster, and what Kubernetes makes of the entries by tests/integration/test_eks_cluster.py;
here: the module's edge cases (entries it did not make, principals taken off the list, modes that only go forward).
The validation pass's lines for bad access variables: tests/integration/test_eks_cluster.py.
"""

from __future__ import annotations

import pytest

ACCOUNT = "123456789012"
ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
# The rehearsal's own key as moto's STS names it: the creator of every cluster here.
CREATOR = f"arn:aws:iam::{ACCOUNT}:user/moto"
TRUST = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}'


@pytest.fixture()
def cluster_args(aws):
    subnets = sorted(s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"]
                     if s["AvailabilityZone"] in ("us-west-2b", "us-west-2d"))
    return {"name": "trn-access", "role_arn": f"arn:aws:iam::{ACCOUNT}:role/eks", "subnets": subnets, "region": "us-west-2",
            "oidc_provider": False, "tags": {"ManagedBy": "trainium.eks"}}


@pytest.fixture()
def cluster_module(run_module, cluster_args, rehearsal):
    def run(check=False, **args):
        return run_module("trainium.eks.eks_cluster", dict(cluster_args, endpoint_url=rehearsal["AWS_ENDPOINT_URL"], **args), check=check)

    return run


def admins(eks, name="trn-access"):
    """{principal: (tagged by the module, AmazonEKSClusterAdminPolicy at cluster scope)} of every access entry."""
    found = {}
    for arn in eks.list_access_entries(clusterName=name)["accessEntries"]:
        tags = eks.describe_access_entry(clusterName=name, principalArn=arn)["accessEntry"]["tags"]
        policies = eks.list_associated_access_policies(clusterName=name, principalArn=arn)["associatedAccessPolicies"]
        found[arn] = (tags.get("trainium.eks/access-entry") == "admin",
                      any(p["policyArn"] == ADMIN and p["accessScope"]["type"] == "cluster" for p in policies))
    return found


def test_listed_principals_come_and_go_and_other_entries_stay(aws, cluster_module):
    iam, eks = aws.client("iam"), aws.client("eks")
    team = iam.create_role(RoleName="platform-admins", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    ops = iam.create_user(UserName="ops")["User"]["Arn"]
    by_hand = f"arn:aws:iam::{ACCOUNT}:role/made-by-hand"

    made = cluster_module(admin_principal_arns=[team, ops], wait=True)
    assert made.get("failed") is not True, made
    assert made["updates"] == ["create", "access_entries"] and made["cluster"]["admin_principal_arns"] == sorted([team, ops])
    assert made["cluster"]["authentication_mode"] == "API"
    assert admins(eks) == {CREATOR: (False, True), team: (True, True), ops: (True, True)}

    eks.create_access_entry(clusterName="trn-access", principalArn=by_hand)
    eks.associate_access_policy(clusterName="trn-access", principalArn=by_hand, policyArn=ADMIN,
                                accessScope={"type": "namespace", "namespaces": ["ml"]})
    # Listed: an entry made by hand is not raised to cluster admin (the module could never take that back):
    # refused before anything changes.
    refused = cluster_module(admin_principal_arns=[ops, by_hand])
    assert refused["failed"] is True and f"admin_principal_arns: {by_hand} already has an access entry" in refused["msg"]
    assert admins(eks) == {CREATOR: (False, True), team: (True, True), ops: (True, True), by_hand: (False, False)}
    # The creator's entry (made by EKS, already cluster admin) may be listed: nothing to change there.
    planned = cluster_module(check=True, admin_principal_arns=[ops, CREATOR])
    assert planned["changed"] is True and planned["updates"] == ["access_entries"]
    assert team in admins(eks)
    moved = cluster_module(admin_principal_arns=[ops, CREATOR])
    assert moved["changed"] is True and moved["updates"] == ["access_entries"]
    assert admins(eks) == {CREATOR: (False, True), ops: (True, True), by_hand: (False, False)}

    # Off the list: the module's own entry goes; the creator's stays, and so does the one made by hand (never touched).
    emptied = cluster_module(admin_principal_arns=[])
    assert emptied["changed"] is True and emptied["cluster"]["admin_principal_arns"] == []
    assert admins(eks) == {CREATOR: (False, True), by_hand: (False, False)}
    assert "trainium.eks/admin-entries" not in eks.describe_cluster(name="trn-access")["cluster"]["tags"]
    again = cluster_module(admin_principal_arns=[])
    assert again["changed"] is False, again
    unmanaged = cluster_module()
    assert unmanaged["changed"] is False and "admin_principal_arns" not in unmanaged["cluster"]


def test_an_entry_deleted_by_hand_is_made_again(aws, cluster_module):
    eks = aws.client("eks")
    ops = aws.client("iam").create_user(UserName="ops")["User"]["Arn"]
    assert cluster_module(admin_principal_arns=[ops])["changed"] is True
    eks.delete_access_entry(clusterName="trn-access", principalArn=ops)
    repaired = cluster_module(admin_principal_arns=[ops])
    assert repaired["changed"] is True and repaired["updates"] == ["access_entries"]
    assert admins(eks)[ops] == (True, True)
    eks.disassociate_access_policy(clusterName="trn-access", principalArn=ops, policyArn=ADMIN)
    assert cluster_module(admin_principal_arns=[ops])["updates"] == ["access_entries"]
    assert admins(eks)[ops] == (True, True)


def test_the_mode_moves_forward_and_never_back(aws, cluster_module):
    eks = aws.client("eks")
    ops = aws.client("iam").create_user(UserName="ops")["User"]["Arn"]
    assert cluster_module(authentication_mode="CONFIG_MAP")["changed"] is True
    assert eks.list_clusters()["clusters"] == ["trn-access"]

    refused = cluster_module(authentication_mode="CONFIG_MAP", admin_principal_arns=[ops])
    assert refused["failed"] is True
    assert refused["msg"].startswith("admin_principal_arns: got 1 principal(s) with authentication_mode CONFIG_MAP")

    planned = cluster_module(check=True, authentication_mode="API_AND_CONFIG_MAP", admin_principal_arns=[ops])
    assert planned["updates"] == ["authentication_mode", "access_entries"]
    assert eks.describe_cluster(name="trn-access")["cluster"]["accessConfig"]["authenticationMode"] == "CONFIG_MAP"
    moved = cluster_module(authentication_mode="API_AND_CONFIG_MAP", admin_principal_arns=[ops])
    assert moved["updates"] == ["authentication_mode", "access_entries"], moved
    assert eks.describe_cluster(name="trn-access")["cluster"]["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert admins(eks) == {ops: (True, True)}

    back = cluster_module(authentication_mode="CONFIG_MAP")
    assert back["failed"] is True
    assert ("cannot change 1 setting(s) of EKS cluster trn-access: authentication_mode: cluster has API_AND_CONFIG_MAP, asked CONFIG_MAP; "
            "EKS only goes CONFIG_MAP -> API_AND_CONFIG_MAP -> API") == back["msg"]
    assert cluster_module(authentication_mode="API")["updates"] == ["authentication_mode"]
    assert cluster_module(authentication_mode="API_AND_CONFIG_MAP")["failed"] is True
    assert cluster_module(admin_principal_arns=[ops])["changed"] is False
