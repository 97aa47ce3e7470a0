# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.neuron_job against the rehearsal: Volcano gang-schedules the job on the fake trn1 nodes (kwok).

Each test uses a namespace and a Volcano queue of its own (nj-test-<random>) and a claim fsx-claim bound to a
hostPath volume there. kwok makes the pods Running; the annotation rehearsal.trainium.eks/complete: "true" makes
one Succeeded and rehearsal.trainium.eks/fail: "true" makes it fail with exit code 1 (tools/rehearsal/kwok/stages),
so these tests do not depend on the pod runner. The pods' logs may not be served on the rehearsal; the module then
says "log unavailable: <reason>".
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import uuid

import pytest

pytestmark = pytest.mark.xdist_group("shared_kube")  # it takes the fake trn1 nodes' Neuron devices

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(os.environ.get("VENV", ROOT / ".venv")) / "bin"
NODES = {"trn1-0", "trn1-1"}


@pytest.fixture
def space(kube, wait_until):
    """A namespace, a Volcano queue and a bound claim fsx-claim of the test's own."""
    name = f"nj-test-{uuid.uuid4().hex[:8]}"
    kube.kubectl("create", "namespace", name)
    # Its pods stay kwok fakes that the test finishes or fails by annotation: the pod runner leaves them alone.
    kube.kubectl("label", "namespace", name, "rehearsal.trainium.eks/pods=fake")
    kube.apply({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                "spec": {"weight": 1, "reclaimable": False}})
    kube.apply({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "persistentVolumeReclaimPolicy": "Retain",
                         "storageClassName": "", "hostPath": {"path": f"/tmp/{name}"},
                         "claimRef": {"namespace": name, "name": "fsx-claim"}}})
    kube.apply({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "fsx-claim"},
                "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": name,
                         "resources": {"requests": {"storage": "1Gi"}}}}, namespace=name)
    wait_until(lambda: kube.json("-n", name, "get", "pvc", "fsx-claim")["status"].get("phase") == "Bound", timeout=30,
               what="the claim fsx-claim to be Bound")
    yield name
    kube.kubectl("-n", name, "delete", "jobs.batch.volcano.sh", "--all", "--wait=false", check=False)
    kube.kubectl("delete", "namespace", name, "--wait=false", check=False)
    kube.kubectl("delete", "queue", name, "--wait=false", check=False)
    kube.kubectl("delete", "pv", name, "--wait=false", check=False)


@pytest.fixture
def neuron_job(shared_rehearsal, kube):
    """``neuron_job(args, check=False)``: (result, progress lines) of the module (with its action plugin) on localhost."""

    def run(args, check=False):
        env = dict(shared_rehearsal, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
                   ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
        cmd = [str(VENV_BIN / "ansible"), "localhost", "-i", "inventories/local", "-m", "trainium.eks.neuron_job",
               "-a", json.dumps(dict(args, kubeconfig=kube.env["KUBECONFIG"]))] + (["--check"] if check else [])
        completed = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        lines = completed.stdout.splitlines()
        start = lines.index("{")  # the action plugin's progress lines come before the JSON callback's report
        report = json.loads("\n".join(lines[start:]))
        return report["plays"][0]["tasks"][0]["hosts"]["localhost"], lines[:start]

    return run


def job_args(namespace, name, **more):
    args = {"name": name, "namespace": namespace, "queue": namespace, "image": "registry.invalid/bert-pretrain-neuron:test",
            "script": "/opt/trainium-eks/train_bert.py", "script_args": ["--max_steps", "5"], "nnodes": 2, "nproc_per_node": 2,
            "bf16": True, "cacheset": "itest", "report_every": 5, "wait_for": "running", "wait_timeout": 120,
            "labels": {"app.kubernetes.io/part-of": "trainium-eks", "app.kubernetes.io/managed-by": "trainium.eks"}}
    args.update(more)
    return args


def pods_of(kube, namespace, job):
    return kube.json("-n", namespace, "get", "pods", "-l", f"volcano.sh/job-name={job}")["items"]


def vcjob(kube, namespace, job):
    found = kube.json("-n", namespace, "get", "jobs.batch.volcano.sh")["items"]
    return next((j for j in found if j["metadata"]["name"] == job), None)


def test_check_mode_create_rerun_complete_and_absent(kube, space, neuron_job, wait_until):
    args = job_args(space, "bert")
    planned = neuron_job(args, check=True)[0]
    assert planned.get("failed") is not True and planned["changed"] is True and planned["would"] == "create", planned
    assert planned["manifest"]["spec"]["minAvailable"] == 2 and vcjob(kube, space, "bert") is None

    created, lines = neuron_job(args)
    assert created.get("failed") is not True and created["changed"] is True, created
    assert created["status"]["phase"] == "Running" and created["status"]["pods"]["running"] == 2
    assert any("Volcano Job " + space + "/bert: Running, 2 running, 0 pending" in line for line in lines), lines
    pods = pods_of(kube, space, "bert")
    assert {p["spec"]["nodeName"] for p in pods} == NODES  # one pod per node, gang-scheduled by Volcano
    assert all(p["metadata"]["labels"]["trainium.eks/workload"] == "training" for p in pods)
    assert all(p["spec"]["schedulerName"] == "volcano" for p in pods)
    groups = kube.json("-n", space, "get", "podgroups.scheduling.volcano.sh")["items"]
    assert [g["spec"]["minMember"] for g in groups] == [2]
    # rank 0's log: served by the rehearsal's pod runner, or the reason it is not
    status = created["status"]
    assert status["last_log"] is not None or status["log_error"].startswith("log unavailable: "), status
    uid = vcjob(kube, space, "bert")["metadata"]["uid"]

    again = neuron_job(args)[0]
    assert again.get("failed") is not True and again["changed"] is False and again["would"] == "nothing", again

    for p in pods:
        kube.kubectl("-n", space, "annotate", "pod", p["metadata"]["name"], "rehearsal.trainium.eks/complete=true")
    completed = neuron_job(dict(args, wait_for="completed"))[0]
    assert completed.get("failed") is not True and completed["changed"] is False and completed["status"]["phase"] == "Completed", completed
    rerun = neuron_job(dict(args, wait_for="completed"))[0]
    assert rerun["changed"] is False and rerun["status"]["phase"] == "Completed"
    assert vcjob(kube, space, "bert")["metadata"]["uid"] == uid  # a Completed job stays Completed: a rerun is a no-op

    replaced = neuron_job(dict(args, image="registry.invalid/bert-pretrain-neuron:other"))[0]
    assert replaced["changed"] is True and replaced["would"] == "replace", replaced
    assert vcjob(kube, space, "bert")["metadata"]["uid"] != uid

    gone = neuron_job({"name": "bert", "namespace": space, "state": "absent"})[0]
    assert gone["changed"] is True and vcjob(kube, space, "bert") is None and pods_of(kube, space, "bert") == []
    assert neuron_job({"name": "bert", "namespace": space, "state": "absent"})[0]["changed"] is False


def test_too_many_nodes_fails_fast_with_the_schedulers_reason(space, neuron_job):
    result, lines = neuron_job(job_args(space, "toobig", nnodes=3, pending_timeout=10))
    assert result["failed"] is True and "stays Pending" in result["msg"], result
    assert "Insufficient aws.amazon.com/neuron" in result["msg"], result["msg"]
    assert result["elapsed"] < 60 and lines


def test_failed_pod_restarts_the_job_and_without_retries_fails_naming_it(kube, space, neuron_job, wait_until):
    args = job_args(space, "flaky", max_retry=3)
    started = neuron_job(args)[0]
    assert started.get("failed") is not True, started
    victim = next(p for p in pods_of(kube, space, "flaky") if p["metadata"]["name"].endswith("role1-1-0"))
    kube.kubectl("-n", space, "annotate", "pod", victim["metadata"]["name"], "rehearsal.trainium.eks/fail=true")

    def restarted():
        """Volcano to restart the job (retryCount 1) with new Running pods"""
        job = vcjob(kube, space, "flaky")
        pods = pods_of(kube, space, "flaky")
        return (job["status"].get("retryCount", 0) >= 1 and len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)
                and victim["metadata"]["uid"] not in {p["metadata"]["uid"] for p in pods})

    wait_until(restarted, timeout=90, interval=2)
    back = neuron_job(args)[0]
    assert back.get("failed") is not True and back["changed"] is False and back["status"]["retry_count"] >= 1

    assert neuron_job({"name": "flaky", "namespace": space, "state": "absent"})[0]["changed"] is True  # the nodes are free again

    strict = job_args(space, "strict", max_retry=0)
    assert neuron_job(strict)[0].get("failed") is not True
    victim = next(p for p in pods_of(kube, space, "strict") if p["metadata"]["name"].endswith("role1-1-0"))["metadata"]["name"]
    kube.kubectl("-n", space, "annotate", "pod", victim, "rehearsal.trainium.eks/fail=true")
    failed = neuron_job(dict(strict, wait_for="completed"))[0]
    assert failed["failed"] is True and f"pod {victim} exited with code 1" in failed["msg"], failed
    assert "log lines:" in failed["msg"] or "log unavailable: " in failed["msg"]
