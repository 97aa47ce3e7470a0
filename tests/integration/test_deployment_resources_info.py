# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""deployment_resources_info against moto server: it finds what carries the deployment's tag, and only that.

The acceptance run trusts its ``empty`` after the teardown, so it must see a
leftover of every kind it reads, ignore another deployment's and what AWS
keeps after a deletion (a KMS key pending deletion).
"""

from __future__ import annotations

import json

CLUSTER = "trn-left"
TAG = "trainium.eks/cluster"
TRUST = {"Version": "2012-10-17",
         "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def tags_of(cluster):
    return [{"Key": TAG, "Value": cluster}, {"Key": "ManagedBy", "Value": "trainium.eks"}]


def read(run_module, env):
    result = run_module("trainium.eks.deployment_resources_info",
                        {"cluster_name": CLUSTER, "ecr_repositories": ["left-image"], "region": "us-west-2"}, env=env)
    assert not result.get("failed"), result
    return result


def test_every_kind_left_is_listed_and_nothing_else(aws, run_module, rehearsal):
    ec2, iam, logs, kms, ecr = (aws.client(name) for name in ("ec2", "iam", "logs", "kms", "ecr"))
    assert read(run_module, rehearsal)["empty"] is True
    ours = ec2.create_vpc(CidrBlock="10.9.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tags_of(CLUSTER)}])["Vpc"]["VpcId"]
    other = ec2.create_vpc(CidrBlock="10.8.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tags_of("trn-other")}])["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=ours, CidrBlock="10.9.0.0/19",
                               TagSpecifications=[{"ResourceType": "subnet", "Tags": tags_of(CLUSTER)}])["Subnet"]["SubnetId"]
    iam.create_role(RoleName=f"{CLUSTER}-node", AssumeRolePolicyDocument=json.dumps(TRUST), Tags=tags_of(CLUSTER))
    iam.create_role(RoleName=f"{CLUSTER}-cluster", AssumeRolePolicyDocument=json.dumps(TRUST), Tags=tags_of("trn-other"))  # not ours
    logs.create_log_group(logGroupName=f"/aws/eks/{CLUSTER}/cluster")
    key = kms.create_key(Tags=[{"TagKey": TAG, "TagValue": CLUSTER}])["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName=f"alias/{CLUSTER}-eks-secrets", TargetKeyId=key)
    ecr.create_repository(repositoryName="left-image", tags=[{"Key": TAG, "Value": CLUSTER}])

    found = read(run_module, rehearsal)
    assert found["empty"] is False
    left = {kind: ids for kind, ids in found["resources"].items() if ids}
    assert left == {
        "vpcs": [ours], "subnets": [subnet], "iam_roles": [f"{CLUSTER}-node"], "log_groups": [f"/aws/eks/{CLUSTER}/cluster"],
        "kms_aliases": [f"alias/{CLUSTER}-eks-secrets"], "ecr_repositories": ["left-image"],
    }
    assert f"vpcs: {ours}" in found["summary"]

    # Removed (the key only scheduled for deletion, as the teardown does): nothing of it is listed any more.
    ec2.delete_subnet(SubnetId=subnet)
    ec2.delete_vpc(VpcId=ours)
    iam.delete_role(RoleName=f"{CLUSTER}-node")
    logs.delete_log_group(logGroupName=f"/aws/eks/{CLUSTER}/cluster")
    kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7)
    ecr.delete_repository(repositoryName="left-image", force=True)
    after = read(run_module, rehearsal)
    assert after["empty"] is True and after["summary"] == "nothing", after
    ec2.delete_vpc(VpcId=other)
    iam.delete_role(RoleName=f"{CLUSTER}-cluster")
