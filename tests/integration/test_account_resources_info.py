# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""account_resources_info against moto server, judged by the modules it stands in for.

The eks_cluster role skips amazon.aws.iam_role, kms_key and
cloudwatchlogs_log_group when account_resources_info says their resource is in
place. So "in place" must mean exactly "that module would report ok": each
round here changes the account behind the role's back with boto3, asks the
read, then runs the upstream module with the same options and checks that it
changes something exactly when the read said "not in place".
"""

from __future__ import annotations

import json

import pytest

CLUSTER = "trn-acct"
TAGS = {"trainium.eks/cluster": CLUSTER, "team": "ml"}
TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
ROLE = {
    "name": f"{CLUSTER}-cluster",
    "description": f"EKS control plane of {CLUSTER}",
    "assume_role_policy_document": TRUST,
    "managed_policies": ["arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"],
    "tags": dict(TAGS, Name=f"{CLUSTER}-cluster"),
}
KEY = {
    "alias": f"{CLUSTER}-eks-secrets",
    "description": f"Envelope encryption of the Kubernetes secrets of EKS cluster {CLUSTER}",
    "enabled": True,
    "enable_key_rotation": True,
    "tags": dict(TAGS, Name=f"{CLUSTER}-eks-secrets"),
}
LOG_GROUP = {"name": f"/aws/eks/{CLUSTER}/cluster", "retention": 90, "tags": dict(TAGS, Name=f"/aws/eks/{CLUSTER}/cluster")}

# The upstream module and its options for each resource, as roles/eks_cluster/tasks/present.yml gives them.
UPSTREAM = {
    "role": ("amazon.aws.iam_role", dict(
        name=ROLE["name"], description=ROLE["description"], assume_role_policy_document=json.dumps(TRUST),
        managed_policies=ROLE["managed_policies"], purge_policies=True, create_instance_profile=False,
        delete_instance_profile=False, tags=ROLE["tags"], purge_tags=True)),
    "key": ("amazon.aws.kms_key", dict(
        alias=KEY["alias"], description=KEY["description"], enabled=True, enable_key_rotation=True, tags=KEY["tags"], purge_tags=True)),
    "log_group": ("amazon.aws.cloudwatchlogs_log_group", dict(
        log_group_name=LOG_GROUP["name"], retention=90, tags=LOG_GROUP["tags"], purge_tags=True)),
}


@pytest.fixture()
def read(run_module):
    def run(**options):
        result = run_module("trainium.eks.account_resources_info",
                            dict({"iam_roles": [ROLE], "kms_keys": [KEY], "log_groups": [LOG_GROUP], "region": "us-west-2"}, **options))
        assert not result.get("failed"), result
        assert result["changed"] is False
        return result

    return run


@pytest.fixture()
def upstream(run_module):
    """Run the upstream module of a resource with the role's options; whether it changed something."""
    def run(which, check=False):
        module, options = UPSTREAM[which]
        result = run_module(module, dict(options, region="us-west-2"), check=check)
        assert not result.get("failed"), result
        return result["changed"]

    return run


def _in_place(result):
    return {"role": result["iam_roles"][ROLE["name"]]["in_place"], "key": result["kms_keys"][KEY["alias"]]["in_place"],
            "log_group": result["log_groups"][LOG_GROUP["name"]]["in_place"]}


def test_in_place_exactly_when_the_upstream_modules_would_change_nothing(aws, read, upstream):
    empty = read()
    assert empty["in_place"] is False
    assert empty["differences"] == [f"IAM role {ROLE['name']} does not exist", f"KMS key {KEY['alias']} does not exist",
                                    f"log group {LOG_GROUP['name']} does not exist"]
    assert _in_place(empty) == {"role": False, "key": False, "log_group": False}
    assert empty["iam_roles"][ROLE["name"]]["arn"] is None

    for which in UPSTREAM:
        assert upstream(which) is True

    converged = read()
    assert (converged["in_place"], converged["differences"]) == (True, []), converged
    iam, kms, logs = aws.client("iam"), aws.client("kms"), aws.client("logs")
    assert converged["iam_roles"][ROLE["name"]]["arn"] == iam.get_role(RoleName=ROLE["name"])["Role"]["Arn"]
    key_id = kms.describe_key(KeyId=f"alias/{KEY['alias']}")["KeyMetadata"]["KeyId"]
    assert converged["kms_keys"][KEY["alias"]]["key_id"] == key_id
    assert converged["kms_keys"][KEY["alias"]]["key_arn"].endswith(f":key/{key_id}")
    assert converged["log_groups"][LOG_GROUP["name"]]["arn"] == aws.log_group(LOG_GROUP["name"])["arn"]
    for which in UPSTREAM:
        assert upstream(which, check=True) is False, which

    # Changes by hand, one per resource and round; the read must name it, the upstream module must undo it,
    # and the read must then find everything in place again.
    rounds = [
        ("role", lambda: iam.untag_role(RoleName=ROLE["name"], TagKeys=["team"]), f"IAM role {ROLE['name']}: tags team differ"),
        ("role", lambda: iam.detach_role_policy(RoleName=ROLE["name"], PolicyArn=ROLE["managed_policies"][0]),
         f"IAM role {ROLE['name']}: attached managed policies differ"),
        ("role", lambda: iam.update_assume_role_policy(RoleName=ROLE["name"], PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [dict(TRUST["Statement"][0], Principal={"Service": "ec2.amazonaws.com"})]})),
         f"IAM role {ROLE['name']}: trust policy differs"),
        ("role", lambda: iam.update_role(RoleName=ROLE["name"], Description="changed by hand"), f"IAM role {ROLE['name']}: description differs"),
        ("key", lambda: kms.disable_key_rotation(KeyId=key_id), f"KMS key {KEY['alias']}: key rotation is not on"),
        ("key", lambda: kms.tag_resource(KeyId=key_id, Tags=[{"TagKey": "extra", "TagValue": "x"}]), f"KMS key {KEY['alias']}: tags extra differ"),
        ("key", lambda: kms.disable_key(KeyId=key_id), f"KMS key {KEY['alias']} is Disabled, not Enabled"),
        ("log_group", lambda: logs.put_retention_policy(logGroupName=LOG_GROUP["name"], retentionInDays=30),
         f"log group {LOG_GROUP['name']}: retention is 30 days, not 90"),
        ("log_group", lambda: logs.tag_log_group(logGroupName=LOG_GROUP["name"], tags={"team": "other"}),
         f"log group {LOG_GROUP['name']}: tags team differ"),
    ]
    for which, change, sentence in rounds:
        change()
        drifted = read()
        assert drifted["differences"] == [sentence], (which, drifted)
        assert _in_place(drifted) == {name: name != which for name in UPSTREAM}
        assert upstream(which) is True, sentence
        again = read()
        assert (again["in_place"], again["differences"]) == (True, []), (sentence, again)


def test_irsa_trust_policy_is_filled_in_from_the_cluster_issuer(aws, read, run_module):
    """A trust policy with ${oidc_provider_arn}/${oidc_host} is compared with the issuer of oidc_cluster_name."""
    cni = {"name": f"{CLUSTER}-vpc-cni", "assume_role_policy_document": {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Federated": "${oidc_provider_arn}"}, "Action": "sts:AssumeRoleWithWebIdentity",
                       "Condition": {"StringEquals": {"${oidc_host}:sub": "system:serviceaccount:kube-system:aws-node"}}}]}}
    without_cluster = read(iam_roles=[cni], kms_keys=[], log_groups=[], oidc_cluster_name=CLUSTER)
    assert without_cluster["differences"] == [f"IAM role {cni['name']} does not exist"]
    assert without_cluster["oidc_provider_arn"] is None

    ec2, eks, iam = aws.client("ec2"), aws.client("eks"), aws.client("iam")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{i}.0/24", AvailabilityZone=f"us-west-2{z}")["Subnet"]["SubnetId"]
               for i, z in enumerate("ab")]
    role_arn = iam.create_role(RoleName=f"{CLUSTER}-cluster", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    cluster = eks.create_cluster(name=CLUSTER, roleArn=role_arn, resourcesVpcConfig={"subnetIds": subnets})["cluster"]
    issuer = cluster["identity"]["oidc"]["issuer"]
    host = issuer.split("://", 1)[1]
    provider_arn = f"arn:aws:iam::{cluster['arn'].split(':')[4]}:oidc-provider/{host}"
    filled = json.loads(json.dumps(cni["assume_role_policy_document"]).replace("${oidc_provider_arn}", provider_arn)
                        .replace("${oidc_host}", host))

    iam.create_role(RoleName=cni["name"], AssumeRolePolicyDocument=json.dumps(filled))
    found = read(iam_roles=[cni], kms_keys=[], log_groups=[], oidc_cluster_name=CLUSTER)
    assert (found["in_place"], found["differences"], found["oidc_provider_arn"]) == (True, [], provider_arn), found

    # The same role read without the cluster's issuer cannot be in place: the placeholders stay unfilled.
    unfilled = read(iam_roles=[cni], kms_keys=[], log_groups=[])
    assert unfilled["differences"] == [f"IAM role {cni['name']}: its trust policy names an OIDC provider and the cluster has no OIDC issuer"]

    other = json.loads(json.dumps(filled).replace(":sub", ":aud"))
    iam.update_assume_role_policy(RoleName=cni["name"], PolicyDocument=json.dumps(other))
    drifted = read(iam_roles=[cni], kms_keys=[], log_groups=[], oidc_cluster_name=CLUSTER)
    assert drifted["differences"] == [f"IAM role {cni['name']}: trust policy differs"]


def test_an_addon_role_that_is_not_a_listed_role_is_refused(aws, run_module):
    result = run_module("trainium.eks.account_resources_info", {
        "region": "us-west-2", "iam_roles": [ROLE],
        "eks_addons": [{"cluster_name": CLUSTER, "name": "vpc-cni", "service_account_role": "nope"}]})
    assert result.get("failed") is True
    assert result["msg"] == f"eks_addons[].service_account_role: got 'nope' (str); allowed: the name of an entry of iam_roles ({ROLE['name']})"
