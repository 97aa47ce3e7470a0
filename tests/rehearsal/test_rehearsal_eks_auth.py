# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reaching the rehearsal's Kubernetes the EKS way: DescribeCluster, then a k8s-aws-v1. token."""

from __future__ import annotations

import base64

import boto3
import kubernetes
import pytest

# The authenticator knows the clusters of the shared moto only.
pytestmark = pytest.mark.xdist_group("shared_stack")


def eks_token(rehearsal, cluster):
    sts = boto3.client(
        "sts", region_name="us-west-2", endpoint_url=rehearsal["AWS_ENDPOINT_URL"],
        aws_access_key_id=rehearsal["AWS_ACCESS_KEY_ID"], aws_secret_access_key=rehearsal["AWS_SECRET_ACCESS_KEY"],
    )

    def add_cluster_header(request, **_kwargs):
        request.headers["x-k8s-aws-id"] = cluster

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_cluster_header)
    url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


@pytest.fixture()
def eks_cluster(aws):
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    eks = aws.client("eks")
    eks.create_cluster(name="trn-rehearsal", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": subnets})
    yield eks.describe_cluster(name="trn-rehearsal")["cluster"]
    # The shared moto is the one Molecule uses next: leave no cluster of this name behind.
    eks.delete_cluster(name="trn-rehearsal")


def test_token_for_the_cluster_is_an_administrator(rehearsal, kube, eks_cluster):
    client = kube.eks_client(eks_cluster, eks_token(rehearsal, "trn-rehearsal"))
    names = [ns.metadata.name for ns in kubernetes.client.CoreV1Api(client).list_namespace().items]
    assert "kube-system" in names
    review = kubernetes.client.AuthorizationV1Api(client).create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "*", "resource": "*", "group": "*"}}}
    )
    assert review.status.allowed is True


@pytest.mark.parametrize("token", ["k8s-aws-v1.bm90LWEtdXJs", "not-a-token"])
def test_bad_tokens_are_refused(kube, eks_cluster, token):
    client = kube.eks_client(eks_cluster, token)
    with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
        kubernetes.client.CoreV1Api(client).list_namespace()
    assert refused.value.status == 401


def test_token_for_another_cluster_is_refused(rehearsal, kube, eks_cluster):
    client = kube.eks_client(eks_cluster, eks_token(rehearsal, "some-other-cluster"))
    with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
        kubernetes.client.CoreV1Api(client).list_namespace()
    assert refused.value.status == 401
