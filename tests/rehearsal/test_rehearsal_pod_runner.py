# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's pod runner (tools/rehearsal/pod_runner.py) against a running stack.

A tiny image (FROM scratch, only /opt/trainium-eks/*.py; the host's python
runs them) is pushed to the rehearsal registry with buildah; workload pods
bound to a fake trn1 node run it. Logs are read the way the collection reads
them: the API's pods/log (kube-apiserver -> kwok on 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAULT = ROOT / "tools" / "rehearsal" / "fault.sh"
NODE = "trn1-0"
CLAIM = "fsx-claim"
TAINT_TOLERATIONS = [{"operator": "Exists"}]

HELLO = """\
import os, sys
print("hello from", os.environ.get("HOSTNAME"), os.environ.get("POD_NAMESPACE"), sys.argv[1:], flush=True)
"""
LAUNCHER = """\
# A stand-in for torchrun's process tree: the launcher (its argv names torchrun) and two python workers.
import subprocess, sys, time
workers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(2)]
print("workers", " ".join(str(w.pid) for w in workers), flush=True)
while all(w.poll() is None for w in workers):
    time.sleep(0.2)
print("a worker died", [w.returncode for w in workers], flush=True)
sys.exit(1)
"""
ETCD_CHECK = """\
import json, urllib.request
with urllib.request.urlopen("http://etcd-server:2379/version", timeout=10) as answer:
    print("etcd version", json.load(answer)["etcdserver"], flush=True)
"""

pytestmark = pytest.mark.xdist_group("shared_kube")


def buildah(env, *args):
    command = ["buildah", *env["TRAINIUM_BUILDAH_OPTS"].split(), *args]
    completed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, f"{' '.join(args)}:\n{completed.stdout}{completed.stderr}"
    return completed.stdout.strip()


@pytest.fixture(scope="module")
def image(shared_rehearsal, tmp_path_factory):
    """A FROM scratch test image with /opt/trainium-eks/{hello,launcher,etcd_check}.py in the rehearsal registry."""
    env = dict(shared_rehearsal)
    context = tmp_path_factory.mktemp("image")
    (context / "opt" / "trainium-eks").mkdir(parents=True)
    for name, text in (("hello.py", HELLO), ("launcher_torchrun.py", LAUNCHER), ("etcd_check.py", ETCD_CHECK)):
        (context / "opt" / "trainium-eks" / name).write_text(text)
    tag = uuid.uuid4().hex[:10]
    local = f"localhost/rehearsal-pod-runner-test:{tag}"
    container = buildah(env, "from", "scratch")
    try:
        buildah(env, "copy", container, str(context / "opt"), "/opt")
        buildah(env, "config", "--workingdir", "/opt/trainium-eks", container)
        buildah(env, "commit", "-q", container, local)
    finally:
        buildah(env, "rm", container)
    reference = f"{env['TRAINIUM_REGISTRY']}/rehearsal-test/pod-runner:{tag}"
    buildah(env, "push", "--cert-dir", env["TRAINIUM_REGISTRY_CERT_DIR"],
            "--creds", f"{env['TRAINIUM_REGISTRY_USERNAME']}:{env['TRAINIUM_REGISTRY_PASSWORD']}", local, f"docker://{reference}")
    buildah(env, "rmi", local)
    return reference


@pytest.fixture()
def namespace(kube):
    """A namespace with a bound claim fsx-claim (a static PV); both deleted afterwards."""
    name = f"runner-{uuid.uuid4().hex[:8]}"
    kube.kubectl("create", "namespace", name)
    kube.apply({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{name}-pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
                 "hostPath": {"path": "/nonexistent/rehearsal"}, "claimRef": {"namespace": name, "name": CLAIM}},
    })
    kube.apply({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM, "namespace": name},
        "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": f"{name}-pv",
                 "resources": {"requests": {"storage": "1Gi"}}},
    })
    yield name
    kube.kubectl("delete", "namespace", name, "--wait=false", check=False)
    kube.kubectl("delete", "pv", f"{name}-pv", "--wait=false", check=False)


def pod(name, image, command, workload="training", env=None):
    labels = {"app.kubernetes.io/part-of": "trainium-eks"}
    if workload:
        labels["trainium.eks/workload"] = workload
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "tolerations": TAINT_TOLERATIONS,
            "restartPolicy": "Never",
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": CLAIM}},
                        {"name": "shm", "emptyDir": {"medium": "Memory"}}],
            "containers": [{
                "name": "main", "image": image, "command": command,
                "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "OUT", "value": "/data/out/hello.txt"}] + (env or []),
                "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "shm", "mountPath": "/dev/shm"}],
            }],
        },
    }


def phase(kube, namespace, name):
    return kube.core.read_namespaced_pod(name, namespace).status.phase


def log_of(kube, namespace, name):
    try:
        # An empty log comes back as None.
        return kube.core.read_namespaced_pod_log(name, namespace, container="main") or ""
    except kube.kubernetes.client.ApiException as error:
        return f"<{error.status}: {error.body}>"


def pod_processes(state, uid):
    return json.loads((pathlib.Path(state) / "pods" / uid / "process.json").read_text())


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = pathlib.Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_workload_pod_runs_writes_the_shared_volume_logs_and_succeeds(kube, shared_rehearsal, namespace, image, wait_until):
    script = "mkdir -p /data/out && echo written-by-$HOSTNAME > $OUT && python3 /opt/trainium-eks/hello.py --cache_dir=/data/neuron_cache/x"
    kube.apply(pod("hello", image, ["bash", "-c", script]), namespace)
    wait_until(lambda: phase(kube, namespace, "hello") in ("Succeeded", "Failed"), timeout=90, what="hello to end",
               explain=lambda: log_of(kube, namespace, "hello"))
    shared = pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_SHARED_DIR"]) / namespace / CLAIM
    log = log_of(kube, namespace, "hello")
    assert phase(kube, namespace, "hello") == "Succeeded", log
    assert (shared / "out" / "hello.txt").read_text() == "written-by-hello\n"
    assert f"hello from hello {namespace} ['--cache_dir={shared}/neuron_cache/x']" in log
    status = kube.core.read_namespaced_pod("hello", namespace).status.container_statuses[0]
    assert status.state.terminated.exit_code == 0


def test_nonzero_exit_fails_the_pod_with_its_exit_code(kube, namespace, image, wait_until):
    kube.apply(pod("three", image, ["bash", "-c", "echo about to fail >&2; exit 3"]), namespace)
    wait_until(lambda: phase(kube, namespace, "three") == "Failed", timeout=90, what="three to fail")
    terminated = kube.core.read_namespaced_pod("three", namespace).status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (3, "Error")
    assert "about to fail" in log_of(kube, namespace, "three")


def test_deleting_a_running_pod_kills_its_process(kube, shared_rehearsal, namespace, image, wait_until):
    kube.apply(pod("sleeper", image, ["sleep", "600"]), namespace)
    uid = kube.core.read_namespaced_pod("sleeper", namespace).metadata.uid
    state = shared_rehearsal["TRAINIUM_REHEARSAL_DIR"]
    process = wait_until(lambda: (pathlib.Path(state) / "pods" / uid / "process.json").exists() and pod_processes(state, uid),
                         timeout=90, what="the sleeper's process")
    assert alive(process["pid"])
    wait_until(lambda: phase(kube, namespace, "sleeper") == "Running", timeout=60, what="sleeper Running")
    kube.kubectl("-n", namespace, "delete", "pod", "sleeper", "--wait=false")
    wait_until(lambda: not alive(process["pid"]), timeout=30, what="the sleeper's process to be killed")


def test_kill_worker_kills_one_worker_under_torchrun(kube, namespace, image, wait_until):
    kube.apply(pod("trainer", image, ["python3", "/opt/trainium-eks/launcher_torchrun.py"]), namespace)
    wait_until(lambda: "workers" in log_of(kube, namespace, "trainer"), timeout=90, what="the workers to start")
    workers = [int(pid) for pid in re.search(r"workers (\d+) (\d+)", log_of(kube, namespace, "trainer")).groups()]
    out = subprocess.run([str(FAULT), "kill-worker", namespace, "trainer"], env=kube.env, capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    killed = int(re.search(r"killed worker pid (\d+)", out.stdout).group(1))
    assert killed in workers
    wait_until(lambda: phase(kube, namespace, "trainer") == "Failed", timeout=60, what="the trainer to fail")
    assert "a worker died" in log_of(kube, namespace, "trainer")
    assert "-9" in log_of(kube, namespace, "trainer")


def test_pod_without_the_workload_label_is_not_run(kube, shared_rehearsal, namespace, image, wait_until):
    kube.apply(pod("fake", image, ["bash", "-c", "exit 5"], workload=None), namespace)
    wait_until(lambda: phase(kube, namespace, "fake") == "Running", timeout=60, what="the fake pod Running")
    uid = kube.core.read_namespaced_pod("fake", namespace).metadata.uid
    assert not (pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "pods" / uid).exists()
    assert phase(kube, namespace, "fake") == "Running"


def test_image_missing_from_the_registry_fails_with_the_pull_message(kube, shared_rehearsal, namespace, wait_until):
    missing = f"{shared_rehearsal['TRAINIUM_REGISTRY']}/rehearsal-test/missing:{uuid.uuid4().hex[:8]}"
    kube.apply(pod("nopull", missing, ["true"]), namespace)
    wait_until(lambda: phase(kube, namespace, "nopull") == "Failed", timeout=90, what="nopull to fail")
    log = log_of(kube, namespace, "nopull")
    assert "ErrImagePull" in log and missing in log and "not in the rehearsal registry" in log
    terminated = kube.core.read_namespaced_pod("nopull", namespace).status.container_statuses[0].state.terminated
    assert terminated.reason == "ErrImagePull"


def test_etcd_server_resolves_to_the_rendezvous_etcd(kube, namespace, image, wait_until):
    kube.apply(pod("rdzv", image, ["python3", "/opt/trainium-eks/etcd_check.py"]), namespace)
    wait_until(lambda: phase(kube, namespace, "rdzv") in ("Succeeded", "Failed"), timeout=90, what="rdzv to end")
    log = log_of(kube, namespace, "rdzv")
    assert phase(kube, namespace, "rdzv") == "Succeeded", log
    assert re.search(r"etcd version 3\.5\.\d+", log), log
