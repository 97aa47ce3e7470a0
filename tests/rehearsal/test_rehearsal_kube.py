# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's Kubernetes control plane and its TorchElastic rendezvous etcd.

These run against the real processes `tools/rehearsal/rehearsal.sh up` starts:
kube-apiserver, kube-controller-manager and kube-scheduler v1.35.4 on an etcd
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

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
REHEARSAL = ROOT / "tools" / "rehearsal" / "rehearsal.sh"
KUBE_VERSION = "v1.35.4"
API = "https://127.0.0.1:6443"
RDZV = "http://127.0.0.1:2379"
DAEMONS = ("etcd-kube", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd-rendezvous", "kwok", "podrunner")


# Tests that change the shared cluster (namespaces, Deployments on the fake
# nodes) run one after another with the Volcano tests (group shared_kube);
# those that run `rehearsal.sh up` or kill a daemon of the shared stack run with
# the tests of the shared moto (group shared_stack), which a restart would
# disturb.
SHARED_KUBE = pytest.mark.xdist_group("shared_kube")
SHARED_STACK = pytest.mark.xdist_group("shared_stack")


@pytest.fixture()
def namespace(kube):
    name = f"rehearsal-{uuid.uuid4().hex[:8]}"
    kube.kubectl("create", "namespace", name)
    yield name
    kube.kubectl("delete", "namespace", name, "--wait=false", check=False)


@SHARED_KUBE
def test_kubectl_is_built_from_the_pinned_version(kube, shared_rehearsal):
    state_bin = pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "bin"
    assert shared_rehearsal["PATH"].split(os.pathsep)[0] == str(state_bin)
    assert (state_bin / "kubectl").exists()
    # kubectl as a shell that sourced env.sh finds it: first on PATH.
    found = subprocess.run(["kubectl", "version", "-o", "json"], env=shared_rehearsal, capture_output=True, text=True, timeout=60, check=True)
    versions = json.loads(found.stdout)
    assert versions["clientVersion"]["gitVersion"] == KUBE_VERSION
    assert versions["serverVersion"]["gitVersion"] == KUBE_VERSION
    assert kube.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"


@SHARED_KUBE
def test_unauthenticated_requests_are_refused(shared_rehearsal):
    context = ssl.create_default_context(cafile=shared_rehearsal["TRAINIUM_KUBE_CA_FILE"])
    with pytest.raises(urllib.error.HTTPError) as refused:
        with urllib.request.urlopen(f"{API}/api/v1/namespaces", context=context, timeout=10):
            pass
    assert refused.value.code in (401, 403)


@SHARED_KUBE
def test_rbac_denies_a_service_account_without_bindings(kube):
    answer = kube.kubectl("auth", "can-i", "list", "secrets", "--as=system:serviceaccount:default:default", check=False)
    assert answer.stdout.strip() == "no"
    assert answer.returncode != 0
    admin = kube.kubectl("auth", "can-i", "list", "secrets", "--all-namespaces")
    assert admin.stdout.strip() == "yes"


@SHARED_KUBE
def test_new_namespace_gets_service_account_and_root_ca(kube, namespace, wait_until):
    def ready():
        """the default ServiceAccount and kube-root-ca.crt ConfigMap exist"""
        account = kube.kubectl("-n", namespace, "get", "serviceaccount", "default", check=False)
        config_map = kube.kubectl("-n", namespace, "get", "configmap", "kube-root-ca.crt", check=False)
        return account.returncode == 0 and config_map.returncode == 0

    wait_until(ready)
    ca = kube.json("-n", namespace, "get", "configmap", "kube-root-ca.crt")["data"]["ca.crt"]
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


@SHARED_KUBE
def test_controller_manager_turns_a_deployment_into_pods(kube, namespace, wait_until):
    kube.apply(DEPLOYMENT, namespace)

    def replica_sets():
        """the Deployment has a ReplicaSet"""
        return kube.json("-n", namespace, "get", "replicasets", "-l", "app=web")["items"]

    def pods():
        """the ReplicaSet made two Pods"""
        found = kube.json("-n", namespace, "get", "pods", "-l", "app=web")["items"]
        return found if len(found) == 2 else None

    owner = wait_until(replica_sets)[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Deployment", "web")
    for pod in wait_until(pods):
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        # Without nodes (kwok adds them) Pending is the expected state; with them kwok runs the pods.
        assert pod["status"].get("phase", "Pending") in ("Pending", "Running")


@SHARED_KUBE
def test_scheduler_binds_pods_when_there_are_nodes(kube, namespace, wait_until):
    ready = [
        node["metadata"]["name"] for node in kube.json("get", "nodes")["items"]
        if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
        and not node["spec"].get("unschedulable")
    ]
    assert ready, "the rehearsal's kwok nodes are missing or not Ready"
    kube.apply(DEPLOYMENT, namespace)

    def scheduled():
        """kube-scheduler set spec.nodeName on both Pods"""
        found = kube.json("-n", namespace, "get", "pods", "-l", "app=web")["items"]
        names = [pod["spec"].get("nodeName") for pod in found]
        return names if len(names) == 2 and all(names) else None

    assert set(wait_until(scheduled)) <= set(ready)


@SHARED_KUBE
def test_python_kubernetes_client_uses_the_generated_kubeconfig(kube):
    # The kube fixture's client is built from env.sh's KUBECONFIG alone.
    names = [ns.metadata.name for ns in kube.core.list_namespace().items]
    assert {"default", "kube-system"} <= set(names)


@SHARED_KUBE
def test_rendezvous_etcd_speaks_the_v2_api(shared_rehearsal):
    assert shared_rehearsal["TRAINIUM_RDZV_ENDPOINT"] == "127.0.0.1:2379"
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


@SHARED_STACK
def test_second_up_is_quick_and_restarts_nothing(shared_rehearsal):
    state = pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"])
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


@SHARED_STACK
def test_crashed_daemon_is_restarted_by_the_next_up(shared_rehearsal):
    state = pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"])
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
