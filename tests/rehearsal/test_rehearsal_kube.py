# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's Kubernetes control plane and its TorchElastic rendezvous etcd.

These run against the real processes `tools/rehearsal/rehearsal.sh up` starts:
kube-apiserver, kube-controller-manager and kube-scheduler v1.34.4 on an etcd
3.5, and a second etcd with the v2 API for torchrun's etcd rendezvous.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import kubernetes
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
REHEARSAL = ROOT / "tools" / "rehearsal" / "rehearsal.sh"
KUBE_VERSION = "v1.34.4"
API = "https://127.0.0.1:6443"
RDZV = "http://127.0.0.1:2379"
DAEMONS = ("etcd-kube", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd-rendezvous")


@pytest.fixture(scope="module")
def kube_env(rehearsal):
    """The process environment of a shell that sourced .rehearsal/env.sh."""
    return dict(rehearsal)


@pytest.fixture(scope="module")
def kubectl(kube_env):
    """Run the rehearsal's kubectl (from $STATE/bin, first on PATH) and return the completed process."""

    def run(*args, check=True, stdin=None):
        completed = subprocess.run(["kubectl", *args], env=kube_env, input=stdin, capture_output=True, text=True,
                                   timeout=60, check=False)
        if check:
            assert completed.returncode == 0, completed.stderr
        return completed

    return run


@pytest.fixture()
def namespace(kubectl):
    name = f"rehearsal-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    yield name
    kubectl("delete", "namespace", name, "--wait=false", check=False)


def eventually(probe, timeout=60, interval=1):
    """Poll until probe() returns something truthy; return it (or fail with the last value)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value or time.monotonic() > deadline:
            assert value, f"not true within {timeout}s: {probe.__doc__ or probe}"
            return value
        time.sleep(interval)


def kubectl_json(kubectl, *args):
    return json.loads(kubectl(*args, "-o", "json").stdout)


def test_kubectl_is_built_from_the_pinned_version(kubectl, kube_env):
    state_bin = pathlib.Path(kube_env["TRAINIUM_REHEARSAL_DIR"]) / "bin"
    assert kube_env["PATH"].split(os.pathsep)[0] == str(state_bin)
    assert (state_bin / "kubectl").exists()
    versions = json.loads(kubectl("version", "-o", "json").stdout)
    assert versions["clientVersion"]["gitVersion"] == KUBE_VERSION
    assert versions["serverVersion"]["gitVersion"] == KUBE_VERSION
    assert kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"


def test_unauthenticated_requests_are_refused(rehearsal):
    context = ssl.create_default_context(cafile=rehearsal["TRAINIUM_KUBE_CA_FILE"])
    with pytest.raises(urllib.error.HTTPError) as refused:
        with urllib.request.urlopen(f"{API}/api/v1/namespaces", context=context, timeout=10):
            pass
    assert refused.value.code in (401, 403)


def test_rbac_denies_a_service_account_without_bindings(kubectl):
    answer = kubectl("auth", "can-i", "list", "secrets", "--as=system:serviceaccount:default:default", check=False)
    assert answer.stdout.strip() == "no"
    assert answer.returncode != 0
    admin = kubectl("auth", "can-i", "list", "secrets", "--all-namespaces")
    assert admin.stdout.strip() == "yes"


def test_new_namespace_gets_service_account_and_root_ca(kubectl, namespace):
    def ready():
        """the default ServiceAccount and kube-root-ca.crt ConfigMap exist"""
        account = kubectl("-n", namespace, "get", "serviceaccount", "default", check=False)
        config_map = kubectl("-n", namespace, "get", "configmap", "kube-root-ca.crt", check=False)
        return account.returncode == 0 and config_map.returncode == 0

    eventually(ready)
    ca = kubectl_json(kubectl, "-n", namespace, "get", "configmap", "kube-root-ca.crt")["data"]["ca.crt"]
    assert "BEGIN CERTIFICATE" in ca


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "web", "image": "registry.invalid/web:1"}],
                # Any node will do, whatever taints the fake nodes carry.
                "tolerations": [{"operator": "Exists"}],
            },
        },
    },
}


def test_controller_manager_turns_a_deployment_into_pods(kubectl, namespace):
    kubectl("-n", namespace, "apply", "-f", "-", stdin=json.dumps(DEPLOYMENT))

    def replica_sets():
        """the Deployment has a ReplicaSet"""
        return kubectl_json(kubectl, "-n", namespace, "get", "replicasets", "-l", "app=web")["items"]

    def pods():
        """the ReplicaSet made two Pods"""
        found = kubectl_json(kubectl, "-n", namespace, "get", "pods", "-l", "app=web")["items"]
        return found if len(found) == 2 else None

    owner = eventually(replica_sets)[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Deployment", "web")
    for pod in eventually(pods):
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        # Without nodes (kwok adds them) Pending is the expected state; with them kwok runs the pods.
        assert pod["status"].get("phase", "Pending") in ("Pending", "Running")


def test_scheduler_binds_pods_when_there_are_nodes(kubectl, namespace):
    ready = [
        node["metadata"]["name"] for node in kubectl_json(kubectl, "get", "nodes")["items"]
        if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
        and not node["spec"].get("unschedulable")
    ]
    assert ready, "the rehearsal's kwok nodes are missing or not Ready"
    kubectl("-n", namespace, "apply", "-f", "-", stdin=json.dumps(DEPLOYMENT))

    def scheduled():
        """kube-scheduler set spec.nodeName on both Pods"""
        found = kubectl_json(kubectl, "-n", namespace, "get", "pods", "-l", "app=web")["items"]
        names = [pod["spec"].get("nodeName") for pod in found]
        return names if len(names) == 2 and all(names) else None

    assert set(eventually(scheduled)) <= set(ready)


def test_python_kubernetes_client_uses_the_generated_kubeconfig(rehearsal):
    client = kubernetes.config.new_client_from_config(config_file=rehearsal["KUBECONFIG"])
    names = [ns.metadata.name for ns in kubernetes.client.CoreV1Api(client).list_namespace().items]
    assert {"default", "kube-system"} <= set(names)


def test_rendezvous_etcd_speaks_the_v2_api(rehearsal):
    assert rehearsal["TRAINIUM_RDZV_ENDPOINT"] == "127.0.0.1:2379"
    key = f"{RDZV}/v2/keys/rehearsal-test/{uuid.uuid4().hex}"
    put = urllib.request.Request(key, data=b"value=hello", method="PUT",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(put, timeout=10) as answer:
        assert answer.status in (200, 201)
        assert json.load(answer)["node"]["value"] == "hello"
    with urllib.request.urlopen(key, timeout=10) as answer:
        assert json.load(answer)["node"]["value"] == "hello"
    delete = urllib.request.Request(key, method="DELETE")
    with urllib.request.urlopen(delete, timeout=10) as answer:
        assert answer.status == 200


def _pids(state):
    run = state / "run"
    return {name: (run / f"{name}.pid").read_text().strip() for name in DAEMONS}


def test_second_up_is_quick_and_restarts_nothing(rehearsal):
    state = pathlib.Path(rehearsal["TRAINIUM_REHEARSAL_DIR"])
    # A first `up` makes sure everything runs (another test or a person may have touched the stack).
    subprocess.run([str(REHEARSAL), "up"], capture_output=True, text=True, timeout=900, check=True)
    before = _pids(state)
    started = time.monotonic()
    completed = subprocess.run([str(REHEARSAL), "up"], capture_output=True, text=True, timeout=120, check=False)
    took = time.monotonic() - started
    print(f"second rehearsal.sh up took {took:.1f}s")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert took < 30, completed.stdout
    assert _pids(state) == before
    for name in DAEMONS:
        assert f"{name} already healthy" in completed.stdout


def test_crashed_daemon_is_restarted_by_the_next_up(rehearsal):
    state = pathlib.Path(rehearsal["TRAINIUM_REHEARSAL_DIR"])
    pidfile = state / "run" / "kube-scheduler.pid"
    old = int(pidfile.read_text())
    os.kill(old, signal.SIGKILL)
    completed = subprocess.run([str(REHEARSAL), "up"], capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "starting kube-scheduler" in completed.stdout
    assert "kube-scheduler healthy" in completed.stdout
    new = int(pidfile.read_text())
    assert new != old
    os.kill(new, 0)  # alive
    assert "kube-apiserver already healthy" in completed.stdout
