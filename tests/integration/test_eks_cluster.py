# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eks_cluster role on the rehearsal: moto EKS, the real kube-apiserver and its EKS token webhook.

The role flow (converge, idempotence, check mode, absent) is owned by the Molecule scenario molecule/eks_cluster;
here: a token for another cluster, absent after the cluster went by other means.
"""

from __future__ import annotations

import importlib.util
import pathlib

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

    def run(state="present", args=()):
        return run_playbook(str(playbook), extra_vars={
            "eks_cluster_state": state,
            "eks_cluster_subnet_ids": sorted(subnets), "eks_cluster_kubeconfig_path": str(kubeconfig),
        }, args=args)

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
