# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eks_cluster role on the rehearsal: moto EKS, the real kube-apiserver and its EKS token webhook."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import stat
import subprocess

import kubernetes
import pytest
import yaml

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
  post_tasks:
    - name: Save the facts for the test
      ansible.builtin.copy:
        content: "{{ eks_cluster_facts | to_json }}"
        dest: "{{ facts_file }}"
        mode: "0600"
      changed_when: false
"""


@pytest.fixture()
def deploy(aws, run_playbook, tmp_path):
    playbook = tmp_path / "eks_cluster.yml"
    playbook.write_text(PLAYBOOK)
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"] if s["AvailabilityZone"] in ("us-west-2b", "us-west-2d")]
    kubeconfig = tmp_path / "kube" / "trn.yaml"

    def run(state="present", args=()):
        return run_playbook(str(playbook), extra_vars={
            "eks_cluster_state": state, "facts_file": str(tmp_path / "facts.json"),
            "eks_cluster_subnet_ids": sorted(subnets), "eks_cluster_kubeconfig_path": str(kubeconfig),
        }, args=args)

    run.kubeconfig = kubeconfig
    run.facts = lambda: json.loads((tmp_path / "facts.json").read_text())
    return run


def listing(aws):
    """Clusters and IAM roles that exist (listed directly: the shared listing may ask moto for more)."""
    return {
        "eks_clusters": aws.client("eks").list_clusters()["clusters"],
        "iam_roles": [r["RoleName"] for r in aws.client("iam").list_roles()["Roles"]],
    }


def oidc_providers(aws):
    return [p["Arn"] for p in aws.client("iam").list_open_id_connect_providers()["OpenIDConnectProviderList"]]


def test_role_creates_cluster_and_a_working_kubeconfig(aws, deploy, rehearsal):
    first = deploy()
    assert first.rc == 0, first
    found = listing(aws)
    assert found["eks_clusters"] == ["trn-rehearsal"]
    assert "trn-rehearsal-cluster" in found["iam_roles"]
    assert len(oidc_providers(aws)) == 1
    cluster = aws.client("eks").describe_cluster(name="trn-rehearsal")["cluster"]
    assert cluster["version"] == "1.34"
    assert cluster["tags"]["ManagedBy"] == "trainium.eks"
    facts = deploy.facts()
    assert set(facts) == {"name", "arn", "endpoint", "certificate_authority", "version", "cluster_security_group_id", "service_ipv4_cidr",
                          "oidc_issuer", "oidc_provider_arn", "kubeconfig", "role_arn"}
    assert facts["endpoint"] == cluster["endpoint"] and facts["oidc_provider_arn"] == oidc_providers(aws)[0]

    # A second plain run changing nothing is Molecule's idempotence step (molecule/eks_cluster).
    checked = deploy(args=["--check"])
    assert checked.rc == 0 and checked.recap["changed"] == 0, checked

    # The kubeconfig: 0600, no token inside, works with kubectl (v1.34 from .rehearsal/bin) ...
    kubeconfig = deploy.kubeconfig
    assert stat.S_IMODE(os.stat(kubeconfig).st_mode) == 0o600
    assert "k8s-aws-v1." not in kubeconfig.read_text()
    assert yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    env = dict(rehearsal)
    env.pop("KUBECONFIG", None)
    listed = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "get", "namespaces", "-o", "name"],
                            capture_output=True, text=True, env=env, check=False)
    assert listed.returncode == 0, listed.stderr
    assert "namespace/kube-system" in listed.stdout.split()

    # ... and with the Kubernetes Python client (exec plugin run by the client).
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update(AWS_ACCESS_KEY_ID=rehearsal["AWS_ACCESS_KEY_ID"], AWS_SECRET_ACCESS_KEY=rehearsal["AWS_SECRET_ACCESS_KEY"])
    try:
        client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        names = [ns.metadata.name for ns in kubernetes.client.CoreV1Api(client).list_namespace().items]
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert "kube-system" in names


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


def test_absent_removes_cluster_oidc_provider_and_role(aws, deploy):
    assert deploy().rc == 0
    assert oidc_providers(aws)
    gone = deploy("absent")
    assert gone.rc == 0, gone
    found = listing(aws)
    assert found["eks_clusters"] == []
    assert "trn-rehearsal-cluster" not in found["iam_roles"]
    assert oidc_providers(aws) == []
    assert not deploy.kubeconfig.exists()
    again = deploy("absent")
    assert again.rc == 0 and again.recap["changed"] == 0, again


def test_absent_when_only_the_iam_role_is_left(aws, deploy):
    assert deploy().rc == 0
    aws.client("eks").delete_cluster(name="trn-rehearsal")
    gone = deploy("absent")
    assert gone.rc == 0, gone
    assert "trn-rehearsal-cluster" not in listing(aws)["iam_roles"]
    assert oidc_providers(aws) == []
