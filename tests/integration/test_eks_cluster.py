# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eks_cluster role on the rehearsal: moto EKS, the real kube-apiserver and its EKS token webhook.

The role flow (converge, idempotence, check mode, absent) is owned by the Molecule scenario molecule/eks_cluster;
here: a token for another cluster, absent after the cluster went by other means, what Kubernetes makes of an extra
administrator's access entry, and a kubeconfig that keeps working without the virtualenv that wrote it and after
another cluster's teardown. The module's access entry cases: tests/integration/test_eks_access_entries.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import kubernetes
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The token helper needs only botocore: load it by path, as the kubeconfig runs it.
_SPEC = importlib.util.spec_from_file_location("trainium_eks_token", ROOT / "plugins" / "module_utils" / "trainium_eks_token.py")
trainium_eks_token = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(trainium_eks_token)

# The role reads kube-system through the new kubeconfig, with an EKS token the
# shared authenticator only accepts for clusters of the shared moto.
pytestmark = pytest.mark.xdist_group("shared_stack")

PLAYBOOK = """
- name: eks_cluster role
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.eks_cluster
"""


@pytest.fixture()
def deploy(aws, run_playbook, tmp_path):
    playbook = tmp_path / "eks_cluster.yml"
    playbook.write_text(PLAYBOOK)
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"] if s["AvailabilityZone"] in ("us-west-2b", "us-west-2d")]
    kubeconfig = tmp_path / "kube" / "trn.yaml"

    def run(state="present", args=(), **extra):
        return run_playbook(str(playbook), extra_vars={
            "eks_cluster_state": state,
            "eks_cluster_subnet_ids": sorted(subnets), "eks_cluster_kubeconfig_path": str(kubeconfig), **extra,
        }, args=args)

    run.kubeconfig = kubeconfig
    return run


def listing(aws):
    """Clusters and IAM roles that exist (listed directly: the shared listing may ask moto for more)."""
    return {
        "eks_clusters": aws.client("eks").list_clusters()["clusters"],
        "iam_roles": [r["RoleName"] for r in aws.client("iam").list_roles()["Roles"]],
    }


def oidc_providers(aws):
    return [p["Arn"] for p in aws.client("iam").list_open_id_connect_providers()["OpenIDConnectProviderList"]]


def test_token_for_another_cluster_is_refused(aws, deploy, rehearsal, kube):
    assert deploy().rc == 0
    cluster = aws.client("eks").describe_cluster(name="trn-rehearsal")["cluster"]
    sts = trainium_eks_token.sts_client("us-west-2", endpoint_url=rehearsal["AWS_ENDPOINT_URL"],
                                        access_key=rehearsal["AWS_ACCESS_KEY_ID"], secret_key=rehearsal["AWS_SECRET_ACCESS_KEY"])

    def namespaces(token):
        return kubernetes.client.CoreV1Api(kube.eks_client(cluster, token)).list_namespace()

    assert namespaces(trainium_eks_token.make_token(sts, "trn-rehearsal")["token"]).items
    with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
        namespaces(trainium_eks_token.make_token(sts, "some-other-cluster")["token"])
    assert refused.value.status == 401


def test_absent_when_only_the_iam_role_is_left(aws, deploy):
    assert deploy().rc == 0
    aws.client("eks").delete_cluster(name="trn-rehearsal")
    gone = deploy("absent")
    assert gone.rc == 0, gone
    assert "trn-rehearsal-cluster" not in listing(aws)["iam_roles"]
    assert oidc_providers(aws) == []


TRUST = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}'


def test_an_extra_administrator_gets_in_and_an_unlisted_principal_does_not(aws, deploy, rehearsal, kube):
    iam, sts = aws.client("iam"), aws.client("sts")
    team = iam.create_role(RoleName="platform-admins", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    session = sts.assume_role(RoleArn=team, RoleSessionName="alice")["Credentials"]
    iam.create_user(UserName="outsider")
    outsider_key = iam.create_access_key(UserName="outsider")["AccessKey"]["AccessKeyId"]
    assert deploy(eks_cluster_admin_principal_arns=[team]).rc == 0
    cluster = aws.client("eks").describe_cluster(name="trn-rehearsal")["cluster"]
    assert cluster["accessConfig"]["authenticationMode"] == "API"

    def can_do_everything(access_key, session_token=None):
        # moto keeps no secret apart: every principal signs with the rehearsal's one secret key (eks_authenticator.py).
        sts_client = trainium_eks_token.sts_client("us-west-2", endpoint_url=rehearsal["AWS_ENDPOINT_URL"], access_key=access_key,
                                                   secret_key=rehearsal["AWS_SECRET_ACCESS_KEY"], session_token=session_token)
        client = kube.eks_client(cluster, trainium_eks_token.make_token(sts_client, "trn-rehearsal")["token"])
        return kubernetes.client.AuthorizationV1Api(client).create_self_subject_access_review(
            {"spec": {"resourceAttributes": {"verb": "*", "resource": "*", "group": "*"}}}).status.allowed

    assert can_do_everything(session["AccessKeyId"], session["SessionToken"]) is True
    assert can_do_everything(rehearsal["AWS_ACCESS_KEY_ID"]) is True
    with pytest.raises(kubernetes.client.exceptions.ApiException) as refused:
        can_do_everything(outsider_key)
    assert refused.value.status == 401


def python3_without_botocore(directory):
    """A directory whose python3 is this test's Python without site-packages, so without botocore."""
    directory.mkdir(parents=True)
    python = directory / "python3"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    python.chmod(0o755)
    return str(directory)


def cluster_role(aws):
    return aws.client("iam").get_role(RoleName="trn-rehearsal-cluster")["Role"]["Arn"]


def test_the_kubeconfig_outlives_its_virtualenv_and_another_cluster_s_teardown(aws, deploy, rehearsal, kube, run_module, tmp_path):
    assert deploy().rc == 0
    text = deploy.kubeconfig.read_text()
    assert json.loads(text.split("command: ", 1)[1].splitlines()[0]) == "python3"
    for interpreter in (sys.prefix, os.path.realpath(sys.executable), str(pathlib.Path(sys.executable).parent)):
        assert interpreter not in text

    kube_bin = str(pathlib.Path(kube.kubectl_path).parent)

    def kubectl(kubeconfig, *path):
        env = dict(rehearsal, PATH=os.pathsep.join([*path, kube_bin, "/usr/bin", "/bin"]), HOME=str(tmp_path))
        return subprocess.run([kube.kubectl_path, "--kubeconfig", str(kubeconfig), "get", "namespaces", "-o", "name"],
                              env=env, capture_output=True, text=True, timeout=120, check=False)

    bare = python3_without_botocore(tmp_path / "bare")
    aws_cli = shutil.which("aws")
    if aws_cli:
        done = kubectl(deploy.kubeconfig, bare, os.path.dirname(aws_cli))
        assert done.returncode == 0 and "namespace/kube-system" in done.stdout, done.stderr
    lost = kubectl(deploy.kubeconfig, bare)
    assert lost.returncode != 0
    assert "cannot import botocore and there is no AWS CLI (aws) on PATH" in lost.stderr, lost.stderr

    # A second cluster's kubeconfig next to the first one's; tearing the first down leaves it working.
    eks = aws.client("eks")
    subnets = eks.describe_cluster(name="trn-rehearsal")["cluster"]["resourcesVpcConfig"]["subnetIds"]
    eks.create_cluster(name="trn-other", roleArn=cluster_role(aws), accessConfig={"authenticationMode": "API"},
                       resourcesVpcConfig={"subnetIds": subnets})
    try:
        other = eks.describe_cluster(name="trn-other")["cluster"]
        other_kubeconfig = deploy.kubeconfig.parent / "trn-other.yaml"
        written = run_module("trainium.eks.eks_kubeconfig", {
            "path": str(other_kubeconfig), "cluster_name": "trn-other", "cluster_arn": other["arn"], "endpoint": other["endpoint"],
            "certificate_authority": other["certificateAuthority"]["data"], "region": "us-west-2", "endpoint_url": rehearsal["AWS_ENDPOINT_URL"],
            "helper_source": (ROOT / "plugins" / "module_utils" / "trainium_eks_token.py").read_text(),
        })
        assert written["changed"] is True, written
        assert deploy("absent").rc == 0
        assert sorted(p.name for p in deploy.kubeconfig.parent.iterdir()) == ["trn-other-eks-token.py", "trn-other.yaml"]
        done = kubectl(other_kubeconfig, str(pathlib.Path(sys.executable).parent))
        assert done.returncode == 0 and "namespace/kube-system" in done.stdout, done.stderr
    finally:
        eks.delete_cluster(name="trn-other")


def test_bad_access_variables_are_refused_by_the_validation_pass(aws, deploy):
    account = "123456789012"
    result = deploy(eks_cluster_authentication_mode="CONFIG_MAP", eks_cluster_bootstrap_creator_admin=False,
                    eks_cluster_admin_principal_arns=[f"arn:aws:sts::{account}:assumed-role/platform-admins/alice",
                                                      f"arn:aws:iam::{account}:user/ops"])
    assert result.rc != 0
    for line in (
        f"eks_cluster_admin_principal_arns[0]: got 'arn:aws:sts::{account}:assumed-role/platform-admins/alice' (str); allowed: the ARN of "
        "an IAM role or user, such as arn:aws:iam::111122223333:role/platform-admins (for an assumed-role session, its role's ARN)",
        "eks_cluster_admin_principal_arns: got ['arn:aws:sts::",
        "allowed: [] with eks_cluster_authentication_mode CONFIG_MAP (access entries need API or API_AND_CONFIG_MAP)",
        "eks_cluster_bootstrap_creator_admin: got False (bool); allowed: true with eks_cluster_authentication_mode CONFIG_MAP",
    ):
        assert line in result.text, result
    assert aws.client("eks").list_clusters()["clusters"] == []
