# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS access configuration and access entries in the rehearsal: moto_ext_eks.py's API, and the token
authenticator that honours the entries (a principal's Kubernetes identity comes from its access entry)."""

from __future__ import annotations

import base64
import time

import boto3
import botocore.exceptions
import kubernetes
import pytest

# The authenticator knows the clusters of the shared moto only.
pytestmark = pytest.mark.xdist_group("shared_stack")

ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
VIEW = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
ACCOUNT = "123456789012"
# What moto's STS answers for the rehearsal's own key (it did not issue it), as an IAM principal.
REHEARSAL_PRINCIPAL = f"arn:aws:iam::{ACCOUNT}:user/moto"
TRUST = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}'


def code_of(call, *args, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        call(*args, **kwargs)
    return refused.value.response["Error"]["Code"]


@pytest.fixture()
def make_cluster(aws):
    eks = aws.client("eks")
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    made = []

    def make(name="trn-access", **access):
        request = {"name": name, "roleArn": f"arn:aws:iam::{ACCOUNT}:role/eks", "resourcesVpcConfig": {"subnetIds": subnets}}
        if access:
            request["accessConfig"] = access
        made.append(name)
        return eks.create_cluster(**request)["cluster"]

    yield make
    # The shared moto is the one Molecule uses next: leave no cluster behind.
    for name in made:
        try:
            eks.delete_cluster(name=name)
        except botocore.exceptions.ClientError:
            pass


def test_access_config_is_kept_and_the_creator_gets_an_admin_entry(aws, make_cluster):
    eks = aws.client("eks")
    created = make_cluster(authenticationMode="API")
    assert created["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    assert eks.describe_cluster(name="trn-access")["cluster"]["accessConfig"]["authenticationMode"] == "API"
    assert eks.list_access_entries(clusterName="trn-access")["accessEntries"] == [REHEARSAL_PRINCIPAL]
    entry = eks.describe_access_entry(clusterName="trn-access", principalArn=REHEARSAL_PRINCIPAL)["accessEntry"]
    assert entry["type"] == "STANDARD" and entry["username"] == REHEARSAL_PRINCIPAL
    policies = eks.list_associated_access_policies(clusterName="trn-access", principalArn=REHEARSAL_PRINCIPAL)["associatedAccessPolicies"]
    assert [(p["policyArn"], p["accessScope"]["type"]) for p in policies] == [(ADMIN, "cluster")]


def test_defaults_are_eks_s_config_map_and_creator_admin(aws, make_cluster):
    created = make_cluster()
    assert created["accessConfig"] == {"authenticationMode": "CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": True}
    eks = aws.client("eks")
    for call, kwargs in ((eks.list_access_entries, {}), (eks.create_access_entry, {"principalArn": f"arn:aws:iam::{ACCOUNT}:role/a"})):
        assert code_of(call, clusterName="trn-access", **kwargs) == "InvalidRequestException"
    assert code_of(make_cluster, "trn-refused", authenticationMode="CONFIG_MAP", bootstrapClusterCreatorAdminPermissions=False) == \
        "InvalidParameterException"
    assert "trn-refused" not in eks.list_clusters()["clusters"]


def test_without_bootstrapping_there_is_no_entry(aws, make_cluster):
    make_cluster(authenticationMode="API_AND_CONFIG_MAP", bootstrapClusterCreatorAdminPermissions=False)
    assert aws.client("eks").list_access_entries(clusterName="trn-access")["accessEntries"] == []


def test_the_mode_only_moves_forward(aws, make_cluster):
    eks = aws.client("eks")
    make_cluster()
    update = eks.update_cluster_config(name="trn-access", accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})["update"]
    assert (update["type"], update["status"]) == ("AccessConfigUpdate", "Successful")
    assert update["params"] == [{"type": "AuthenticationMode", "value": "API_AND_CONFIG_MAP"}]
    assert eks.describe_update(name="trn-access", updateId=update["id"])["update"]["status"] == "Successful"
    for backward in ("CONFIG_MAP", "API_AND_CONFIG_MAP"):
        assert code_of(eks.update_cluster_config, name="trn-access", accessConfig={"authenticationMode": backward}) == \
            "InvalidParameterException"
    assert code_of(eks.update_cluster_config, name="trn-access", accessConfig={"authenticationMode": "API"},
                   logging={"clusterLogging": [{"types": ["api"], "enabled": True}]}) == "InvalidParameterException"
    eks.update_cluster_config(name="trn-access", accessConfig={"authenticationMode": "API"})
    assert eks.describe_cluster(name="trn-access")["cluster"]["accessConfig"]["authenticationMode"] == "API"
    assert code_of(eks.update_cluster_config, name="nope", accessConfig={"authenticationMode": "API"}) == "ResourceNotFoundException"


def test_entries_and_policies_with_aws_s_errors(aws, make_cluster):
    eks = aws.client("eks")
    make_cluster(authenticationMode="API")
    role = f"arn:aws:iam::{ACCOUNT}:role/team/ml-admins"
    entry = eks.create_access_entry(clusterName="trn-access", principalArn=role, tags={"trainium.eks/access-entry": "admin"})["accessEntry"]
    assert entry["accessEntryArn"].startswith(f"arn:aws:eks:us-west-2:{ACCOUNT}:access-entry/trn-access/role/{ACCOUNT}/ml-admins/")
    assert entry["username"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/ml-admins/{{{{SessionName}}}}"
    assert eks.describe_access_entry(clusterName="trn-access", principalArn=role)["accessEntry"]["tags"] == {"trainium.eks/access-entry": "admin"}
    assert code_of(eks.create_access_entry, clusterName="trn-access", principalArn=role) == "ResourceInUseException"
    assert code_of(eks.create_access_entry, clusterName="nope", principalArn=role) == "ResourceNotFoundException"
    for principal in (f"arn:aws:sts::{ACCOUNT}:assumed-role/ml-admins/alice", "ml-admins", f"arn:aws:iam::{ACCOUNT}:group/admins"):
        assert code_of(eks.create_access_entry, clusterName="trn-access", principalArn=principal) == "InvalidParameterException"
    assert code_of(eks.create_access_entry, clusterName="trn-access", principalArn=f"arn:aws:iam::{ACCOUNT}:role/x",
                   kubernetesGroups=["system:masters"]) == "InvalidParameterException"

    eks.associate_access_policy(clusterName="trn-access", principalArn=role, policyArn=ADMIN, accessScope={"type": "namespace", "namespaces": ["ml"]})
    eks.associate_access_policy(clusterName="trn-access", principalArn=role, policyArn=ADMIN, accessScope={"type": "cluster"})
    eks.associate_access_policy(clusterName="trn-access", principalArn=role, policyArn=VIEW, accessScope={"type": "cluster"})
    policies = eks.list_associated_access_policies(clusterName="trn-access", principalArn=role)["associatedAccessPolicies"]
    assert {p["policyArn"]: p["accessScope"]["type"] for p in policies} == {ADMIN: "cluster", VIEW: "cluster"}
    assert eks.list_access_entries(clusterName="trn-access", associatedPolicyArn=VIEW)["accessEntries"] == [role]
    for scope in ({"type": "namespace"}, {"type": "cluster", "namespaces": ["ml"]}, {"type": "account"}):
        assert code_of(eks.associate_access_policy, clusterName="trn-access", principalArn=role, policyArn=ADMIN, accessScope=scope) == \
            "InvalidParameterException"
    assert code_of(eks.associate_access_policy, clusterName="trn-access", principalArn=role, policyArn="arn:aws:iam::aws:policy/Admin",
                   accessScope={"type": "cluster"}) == "InvalidParameterException"
    eks.disassociate_access_policy(clusterName="trn-access", principalArn=role, policyArn=VIEW)
    assert code_of(eks.disassociate_access_policy, clusterName="trn-access", principalArn=role, policyArn=VIEW) == "ResourceNotFoundException"

    node_role = f"arn:aws:iam::{ACCOUNT}:role/trn-nodes"
    node = eks.create_access_entry(clusterName="trn-access", principalArn=node_role, type="EC2_LINUX")["accessEntry"]
    assert node["kubernetesGroups"] == ["system:nodes"]
    assert code_of(eks.associate_access_policy, clusterName="trn-access", principalArn=node_role, policyArn=ADMIN,
                   accessScope={"type": "cluster"}) == "InvalidParameterException"
    assert code_of(eks.create_access_entry, clusterName="trn-access", principalArn=f"arn:aws:iam::{ACCOUNT}:user/u", type="EC2_LINUX") == \
        "InvalidParameterException"

    first = eks.list_access_entries(clusterName="trn-access", maxResults=2)
    rest = eks.list_access_entries(clusterName="trn-access", maxResults=2, nextToken=first["nextToken"])
    assert first["accessEntries"] + rest["accessEntries"] == [REHEARSAL_PRINCIPAL, role, node_role] and "nextToken" not in rest
    paginated = [arn for page in eks.get_paginator("list_access_entries").paginate(clusterName="trn-access", PaginationConfig={"PageSize": 1})
                 for arn in page["accessEntries"]]
    assert paginated == [REHEARSAL_PRINCIPAL, role, node_role]

    eks.delete_access_entry(clusterName="trn-access", principalArn=role)
    for call in (eks.describe_access_entry, eks.delete_access_entry, eks.list_associated_access_policies):
        assert code_of(call, clusterName="trn-access", principalArn=role) == "ResourceNotFoundException"


def test_entries_go_with_their_cluster(aws, make_cluster):
    eks = aws.client("eks")
    make_cluster(authenticationMode="API")
    eks.create_access_entry(clusterName="trn-access", principalArn=f"arn:aws:iam::{ACCOUNT}:role/gone")
    eks.delete_cluster(name="trn-access")
    make_cluster(authenticationMode="API")
    assert eks.list_access_entries(clusterName="trn-access")["accessEntries"] == [REHEARSAL_PRINCIPAL]


# ---------------------------------------------------------------- the token authenticator


def token_for(rehearsal, cluster, access_key, session_token=None):
    """A k8s-aws-v1. token signed with ``access_key`` (the principal) and the rehearsal's one secret key."""
    sts = boto3.client("sts", region_name="us-west-2", endpoint_url=rehearsal["AWS_ENDPOINT_URL"], aws_access_key_id=access_key,
                       aws_secret_access_key=rehearsal["AWS_SECRET_ACCESS_KEY"], aws_session_token=session_token)

    def add_cluster_header(request, **_kwargs):
        request.headers["x-k8s-aws-id"] = cluster

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_cluster_header)
    url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def whoami(kube, cluster, token):
    """(username, groups, may do everything) as the cluster sees the token's bearer; ApiException when refused."""
    client = kube.eks_client(cluster, token)
    review = kubernetes.client.AuthenticationV1Api(client).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    allowed = kubernetes.client.AuthorizationV1Api(client).create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "*", "resource": "*", "group": "*"}}}).status.allowed
    info = review.status.user_info
    return info.username, sorted(info.groups or []), allowed


def refused_status(kube, cluster, token):
    with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
        kubernetes.client.CoreV1Api(kube.eks_client(cluster, token)).list_namespace()
    return refused.value.status


@pytest.fixture()
def principals(aws):
    """An IAM user with an access key and an assumed role's session, as moto issues them: {name: (arn, key, session token)}."""
    iam, sts = aws.client("iam"), aws.client("sts")
    found = {}
    for user in ("alice", "bob"):
        arn = iam.create_user(UserName=user)["User"]["Arn"]
        found[user] = (arn, iam.create_access_key(UserName=user)["AccessKey"]["AccessKeyId"], None)
    role = iam.create_role(RoleName="ml-admins", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    session = sts.assume_role(RoleArn=role, RoleSessionName="carol")["Credentials"]
    found["ml-admins"] = (role, session["AccessKeyId"], session["SessionToken"])
    return found


def test_api_mode_honours_access_entries(aws, rehearsal, kube, make_cluster, principals):
    eks = aws.client("eks")
    cluster = make_cluster(authenticationMode="API")
    alice, alice_key, _no_session = principals["alice"]
    bob_key = principals["bob"][1]
    role, role_key, session = principals["ml-admins"]
    for principal in (alice, role):
        eks.create_access_entry(clusterName="trn-access", principalArn=principal)
        eks.associate_access_policy(clusterName="trn-access", principalArn=principal, policyArn=ADMIN, accessScope={"type": "cluster"})
    iam = aws.client("iam")
    viewer = iam.create_user(UserName="viewer")["User"]["Arn"]
    viewer_key = iam.create_access_key(UserName="viewer")["AccessKey"]["AccessKeyId"]
    eks.create_access_entry(clusterName="trn-access", principalArn=viewer, kubernetesGroups=["ml-viewers"], username="viewer")

    # The creator (the rehearsal's own key) through its bootstrap entry, the listed user and the assumed role: administrators.
    assert whoami(kube, cluster, token_for(rehearsal, "trn-access", rehearsal["AWS_ACCESS_KEY_ID"]))[1:] == (
        ["system:authenticated", "system:masters"], True)
    assert whoami(kube, cluster, token_for(rehearsal, "trn-access", alice_key)) == (alice, ["system:authenticated", "system:masters"], True)
    username, groups, allowed = whoami(kube, cluster, token_for(rehearsal, "trn-access", role_key, session))
    assert (username, allowed) == (f"arn:aws:sts::{ACCOUNT}:assumed-role/ml-admins/carol", True) and "system:masters" in groups
    # An entry without the admin policy authenticates with its own groups, and may not do everything.
    assert whoami(kube, cluster, token_for(rehearsal, "trn-access", viewer_key)) == ("viewer", ["ml-viewers", "system:authenticated"], False)
    # No entry: refused, also once an entry is gone.
    assert refused_status(kube, cluster, token_for(rehearsal, "trn-access", bob_key)) == 401
    eks.delete_access_entry(clusterName="trn-access", principalArn=alice)
    time.sleep(1.1)  # a token of another second: kube-apiserver caches the answer for a token it has seen
    assert refused_status(kube, cluster, token_for(rehearsal, "trn-access", alice_key)) == 401


def test_without_bootstrapping_the_creator_is_refused_in_api_mode(aws, rehearsal, kube, make_cluster):
    cluster = make_cluster(authenticationMode="API", bootstrapClusterCreatorAdminPermissions=False)
    assert refused_status(kube, cluster, token_for(rehearsal, "trn-access", rehearsal["AWS_ACCESS_KEY_ID"])) == 401


def test_config_map_modes_keep_the_creator_an_administrator_and_nobody_else(aws, rehearsal, kube, make_cluster, principals):
    cluster = make_cluster()
    assert whoami(kube, cluster, token_for(rehearsal, "trn-access", rehearsal["AWS_ACCESS_KEY_ID"])) == (
        "rehearsal-admin", ["system:authenticated", "system:masters"], True)
    assert refused_status(kube, cluster, token_for(rehearsal, "trn-access", principals["alice"][1])) == 401
    eks = aws.client("eks")
    eks.update_cluster_config(name="trn-access", accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})
    eks.create_access_entry(clusterName="trn-access", principalArn=principals["alice"][0])
    eks.associate_access_policy(clusterName="trn-access", principalArn=principals["alice"][0], policyArn=ADMIN, accessScope={"type": "cluster"})
    assert whoami(kube, cluster, token_for(rehearsal, "trn-access", principals["alice"][1]))[2] is True
    assert whoami(kube, cluster, token_for(rehearsal, "trn-access", rehearsal["AWS_ACCESS_KEY_ID"]))[0] == "rehearsal-admin"
