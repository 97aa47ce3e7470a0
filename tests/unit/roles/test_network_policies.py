# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The NetworkPolicies of the job namespace, as the roles render them (issue 27).

Rendered with ansible-core's Templar, the role's defaults and vars and the template lookup's settings (trim_blocks,
backslashes kept), as a run renders them; the plugin loader is left alone (initialising it in the test process would
hand the collection's imports to Ansible's collection finder). The Molecule scenarios read the objects back from the rehearsal's API server and
tests/integration/test_site_end_to_end.py reads them on the converged rehearsal; nothing enforces them there
(kwok pods have no network), so what each policy selects is checked here against the labels the pods really
carry: the Volcano Job's pod templates from trainium.eks.neuron_job's renderer (plus the label Volcano adds),
the staging Job's and TensorBoard's pod templates from their role templates.
"""

from __future__ import annotations

import copy
import pathlib

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.trainium.eks.plugins.action.validate_variables import _trusted  # pylint: disable=protected-access
from ansible_collections.trainium.eks.plugins.module_utils import trainium_neuron_job as nj

ROOT = pathlib.Path(__file__).resolve().parents[3]
CLUSTER = "trn-test"
NAMESPACE = "training"
JOB = {"name": "bert-pretrain", "namespace": NAMESPACE, "rdzv_backend": "etcd", "queue": "training"}
DEPLOYMENT = {"cluster_name": CLUSTER, "job": JOB, "kubeconfig": "/dev/null"}
ETCD_CLIENTS = {"matchExpressions": [
    {"key": "trainium.eks/workload", "operator": "In", "values": ["training", "precompile"]},
    {"key": "volcano.sh/job-name", "operator": "Exists"},
]}
POLICY_ROLES = ("etcd", "training_job", "training_data", "monitoring")


def render(role, template, **overrides):
    """The template's documents, rendered as the role's tasks render it (defaults, then vars, then ``overrides``)."""
    variables = {}
    for part in ("defaults", "vars"):
        variables.update(yaml.safe_load((ROOT / "roles" / role / part / "main.yml").read_text()) or {})
    variables = _trusted(variables)
    variables.update(trainium_deployment=DEPLOYMENT, trainium_job=JOB, trainium_dataset={"name": "wiki", "source": "synthetic", "seq_len": 128})
    # What the role's image_digest task registers before etcd.yaml.j2 is rendered: the image by a digest.
    variables.update(etcd_image_digests={"images": {variables.get("etcd_image"): f"{variables.get('etcd_image')}@sha256:{'0' * 64}"}})
    variables.update(overrides)
    text = trust_as_template((ROOT / "roles" / role / "templates" / template).read_text(encoding="utf-8"))
    rendered = Templar(loader=DataLoader(), variables=variables).template(text, escape_backslashes=False, overrides={"trim_blocks": True})
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def policies(docs):
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "NetworkPolicy"}


def selects(selector, labels):
    """Whether a Kubernetes label selector (matchLabels, matchExpressions) selects a pod with ``labels``."""
    if not all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        found = {"In": key in labels and labels[key] in values, "NotIn": key not in labels or labels[key] not in values,
                 "Exists": key in labels, "DoesNotExist": key not in labels}[operator]
        if not found:
            return False
    return True


def no_empty_lists(value, path="spec"):
    """The API server drops empty lists; sending one would make every server-side apply a change."""
    if isinstance(value, list):
        assert value, path
        for index, item in enumerate(value):
            no_empty_lists(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            no_empty_lists(item, f"{path}.{key}")


def volcano_pod_labels(mode, job_name):
    """The labels of a pod of the Volcano Job trainium.eks.neuron_job renders, plus Volcano's own."""
    params = {"name": JOB["name"], "namespace": NAMESPACE, "queue": "training", "image": "reg/bert:1",
              "script": "/opt/trainium-eks/train_bert.py", "script_args": [], "nnodes": 2, "nproc_per_node": 2,
              "instance_type": "trn1.32xlarge", "rdzv_backend": "etcd", "bf16": True, "cacheset": "c", "claim_name": "fsx-claim",
              "max_retry": 3, "mode": mode, "steps_this_run": 5 if mode == "precompile" else None,
              "labels": {"app.kubernetes.io/name": JOB["name"], "app.kubernetes.io/part-of": "trainium-eks",
                         "app.kubernetes.io/managed-by": "trainium.eks", "trainium.eks/cluster": CLUSTER}}
    job = nj.render(params)
    assert job["metadata"]["name"] == job_name
    labels = copy.deepcopy(job["spec"]["tasks"][0]["template"]["metadata"]["labels"])
    labels.update({"volcano.sh/job-name": job_name, "volcano.sh/job-namespace": NAMESPACE, "volcano.sh/task-spec": "role1-0"})
    return labels


def staging_pod_labels(source="synthetic"):
    (job,) = render("training_data", "job.yaml.j2", training_data_image="reg/bert:1", training_data_source=source)
    return job["spec"]["template"]["metadata"]["labels"]


def tensorboard_pod_labels():
    docs = render("monitoring", "tensorboard.yaml.j2", monitoring_tensorboard_image="reg/bert:1")
    (deployment,) = [doc for doc in docs if doc["kind"] == "Deployment"]
    return deployment["spec"]["template"]["metadata"]["labels"]


def etcd_pod_labels():
    (statefulset,) = [doc for doc in render("etcd", "etcd.yaml.j2") if doc["kind"] == "StatefulSet"]
    return statefulset["spec"]["template"]["metadata"]["labels"]


# The job namespace: deny all, then DNS.

def test_the_namespace_denies_every_pod_all_traffic():
    found = policies(render("etcd", "network-policy.yaml.j2"))
    assert list(found) == ["trainium-eks-default-deny", "trainium-eks-allow-dns"]
    deny = found["trainium-eks-default-deny"]
    assert deny["metadata"]["namespace"] == NAMESPACE
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def test_every_pod_may_ask_coredns_and_nothing_else_through_the_dns_policy():
    dns = policies(render("etcd", "network-policy.yaml.j2"))["trainium-eks-allow-dns"]["spec"]
    assert dns["podSelector"] == {} and dns["policyTypes"] == ["Egress"] and "ingress" not in dns
    assert dns["egress"] == [{
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
        "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
    }]


def test_the_namespace_policies_outlive_etcd_absent_and_the_c10d_backend():
    """absent (and present with c10d) deletes the NetworkPolicies that carry all of etcd's labels: not these."""
    etcd_labels = etcd_pod_labels()
    for policy in policies(render("etcd", "network-policy.yaml.j2")).values():
        labels = policy["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "trainium.eks" and labels["trainium.eks/cluster"] == CLUSTER
        assert not selects({"matchLabels": etcd_labels}, labels)


# etcd: admitted only from the pods of the training and precompile jobs.

def test_etcd_admits_2379_only_from_the_rendezvous_clients_and_opens_nothing():
    found = policies(render("etcd", "etcd.yaml.j2"))
    assert list(found) == ["etcd-server", "etcd-server-clients"]
    spec = found["etcd-server"]["spec"]
    assert spec["podSelector"] == {"matchLabels": etcd_pod_labels()}
    assert spec["policyTypes"] == ["Ingress", "Egress"] and "egress" not in spec
    assert spec["ingress"] == [{"from": [{"podSelector": ETCD_CLIENTS}], "ports": [{"port": 2379, "protocol": "TCP"}]}]


def test_the_rendezvous_clients_may_open_2379_to_etcd_only():
    spec = policies(render("etcd", "etcd.yaml.j2"))["etcd-server-clients"]["spec"]
    assert spec["podSelector"] == ETCD_CLIENTS and spec["policyTypes"] == ["Egress"] and "ingress" not in spec
    assert spec["egress"] == [{"to": [{"podSelector": {"matchLabels": etcd_pod_labels()}}], "ports": [{"port": 2379, "protocol": "TCP"}]}]


@pytest.mark.parametrize("mode, job_name", [("train", "bert-pretrain"), ("precompile", "bert-pretrain-precompile")])
def test_the_training_and_precompile_pods_are_rendezvous_clients(mode, job_name):
    assert selects(ETCD_CLIENTS, volcano_pod_labels(mode, job_name))


@pytest.mark.parametrize("what, labels", [
    ("dataset staging (synthetic)", staging_pod_labels),
    ("dataset staging (S3)", lambda: staging_pod_labels("s3://bucket/key.tar")),
    ("TensorBoard", tensorboard_pod_labels),
    ("etcd itself", etcd_pod_labels),
    ("a pod that only claims the training workload", lambda: {"trainium.eks/workload": "training"}),
    ("a pod of another Volcano Job", lambda: {"volcano.sh/job-name": "other"}),
])
def test_no_other_pod_of_the_namespace_reaches_etcd(what, labels):
    assert not selects(ETCD_CLIENTS, labels()), what


def test_etcd_network_policy_false_renders_no_policy():
    assert not policies(render("etcd", "etcd.yaml.j2", etcd_network_policy=False))


# The pods of one Volcano Job among themselves.

@pytest.mark.parametrize("mode, job_name", [("train", "bert-pretrain"), ("precompile", "bert-pretrain-precompile")])
def test_the_pods_of_one_job_reach_each_other_on_every_port(mode, job_name):
    (policy,) = render("training_job", "peers-policy.yaml.j2", training_job_mode=mode)
    assert policy["metadata"]["name"] == f"{job_name}-peers" and policy["metadata"]["namespace"] == NAMESPACE
    # Not Volcano's own name (<job>): its svc plugin creates that one and deletes it with the Job.
    assert policy["metadata"]["name"] != job_name
    same_job = {"podSelector": {"matchLabels": {"volcano.sh/job-name": job_name}}}
    spec = policy["spec"]
    assert spec["podSelector"] == same_job["podSelector"] and spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [same_job]}] and spec["egress"] == [{"to": [same_job]}]
    assert selects(spec["podSelector"], volcano_pod_labels(mode, job_name))
    other = "bert-pretrain-precompile" if mode == "train" else "bert-pretrain"
    assert not selects(spec["podSelector"], volcano_pod_labels("precompile" if mode == "train" else "train", other))


# The staging pod: HTTPS to public addresses for an S3 source, nothing for synthetic, nothing in.

def test_the_staging_pod_opens_only_https_to_public_addresses_for_an_s3_source():
    (policy,) = render("training_data", "network-policy.yaml.j2", training_data_source="s3://neuron-s3/training_datasets/x.tar")
    spec = policy["spec"]
    assert selects(spec["podSelector"], staging_pod_labels("s3://neuron-s3/training_datasets/x.tar"))
    assert not selects(spec["podSelector"], tensorboard_pod_labels())
    assert spec["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in spec
    (rule,) = spec["egress"]
    assert rule["ports"] == [{"port": 443, "protocol": "TCP"}]
    assert rule["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [
        "10.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"]}}]


def test_the_staging_pod_of_a_synthetic_dataset_opens_nothing():
    (policy,) = render("training_data", "network-policy.yaml.j2", training_data_source="synthetic")
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "egress" not in policy["spec"] and "ingress" not in policy["spec"]


# TensorBoard: from the load balancer's source ranges only; port-forward needs no rule.

def test_tensorboard_behind_clusterip_takes_no_connection_and_opens_none():
    found = policies(render("monitoring", "tensorboard.yaml.j2", monitoring_tensorboard_image="reg/bert:1"))
    spec = found["tensorboard"]["spec"]
    assert selects(spec["podSelector"], tensorboard_pod_labels())
    assert spec["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in spec and "egress" not in spec


def test_tensorboard_behind_the_internal_load_balancer_takes_6006_from_its_source_ranges_only():
    ranges = ["10.0.0.0/16", "fd00::/8"]
    docs = render("monitoring", "tensorboard.yaml.j2", monitoring_tensorboard_image="reg/bert:1",
                  monitoring_tensorboard_service="internal-lb", monitoring_lb_source_ranges=ranges)
    spec = policies(docs)["tensorboard"]["spec"]
    assert spec["ingress"] == [{"from": [{"ipBlock": {"cidr": cidr}} for cidr in ranges], "ports": [{"port": 6006, "protocol": "TCP"}]}]
    assert "egress" not in spec
    (service,) = [doc for doc in docs if doc["kind"] == "Service"]
    # The pod sees the client's address (the one the source ranges admitted), not a node's.
    assert service["spec"]["externalTrafficPolicy"] == "Local" and service["spec"]["loadBalancerSourceRanges"] == ranges


def test_monitoring_network_policy_false_renders_no_policy():
    assert not policies(render("monitoring", "tensorboard.yaml.j2", monitoring_tensorboard_image="reg/bert:1", monitoring_network_policy=False))


# Every policy, every role.

@pytest.mark.parametrize("role, template, overrides", [
    ("etcd", "network-policy.yaml.j2", {}),
    ("etcd", "etcd.yaml.j2", {}),
    ("training_job", "peers-policy.yaml.j2", {}),
    ("training_data", "network-policy.yaml.j2", {"training_data_source": "synthetic"}),
    ("training_data", "network-policy.yaml.j2", {"training_data_source": "s3://b/k.tar"}),
    ("monitoring", "tensorboard.yaml.j2", {"monitoring_tensorboard_image": "reg/bert:1"}),
    ("monitoring", "tensorboard.yaml.j2", {"monitoring_tensorboard_image": "reg/bert:1", "monitoring_tensorboard_service": "internal-lb",
                                           "monitoring_lb_source_ranges": ["10.0.0.0/16"]}),
])
def test_policies_are_in_the_job_namespace_labelled_and_stable_under_server_side_apply(role, template, overrides):
    found = policies(render(role, template, **overrides))
    assert found
    for policy in found.values():
        assert policy["apiVersion"] == "networking.k8s.io/v1" and policy["metadata"]["namespace"] == NAMESPACE
        assert policy["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "trainium.eks"
        assert policy["metadata"]["labels"]["trainium.eks/cluster"] == CLUSTER
        no_empty_lists(policy["spec"])


@pytest.mark.parametrize("role", POLICY_ROLES)
def test_the_switch_is_on_by_default_in_defaults_and_every_argument_spec(role):
    variable = f"{role}_network_policy"
    assert yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())[variable] is True
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    for entry in specs.values():
        assert entry["options"][variable]["type"] == "bool" and entry["options"][variable]["default"] is True
