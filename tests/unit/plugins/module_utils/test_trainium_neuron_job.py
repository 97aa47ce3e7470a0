# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium_neuron_job with a stubbed Kubernetes: hash idempotence, replace, check mode, absent, the precompile
skip and record, the scheduler's pending reason, the failed pod's log tail, the rank-0 LOG line."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_neuron_job as nj

PARAMS = {"name": "bert", "namespace": "training", "queue": "test", "image": "reg/bert:1", "script": "/opt/trainium-eks/train_bert.py",
          "script_args": ["--batch_size", "16", "--max_steps", "50"], "nnodes": 2, "nproc_per_node": 32, "instance_type": "trn1.32xlarge",
          "rdzv_backend": "etcd", "bf16": True, "cacheset": "bert-large", "claim_name": "fsx-claim", "mount_path": "/data",
          "max_retry": 3, "mode": "train", "labels": {"app.kubernetes.io/managed-by": "trainium.eks", "trainium.eks/cluster": "c"},
          "tolerations": [], "node_selector": {}, "env": {}, "log_lines": 3, "state": "present"}
PRECOMPILE = dict(PARAMS, mode="precompile", steps_this_run=10)


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(nj.time, "sleep", lambda seconds: None)


class StubApi:
    """The calls of KubeJobApi on dicts; a created Job is there at once, a deleted one is gone after ``linger`` reads."""

    def __init__(self, linger=0):
        self.jobs, self.pod_list, self.groups, self.event_list, self.logs, self.configmaps = {}, {}, {}, [], {}, {}
        self.node_list = []
        self.calls = []
        self.linger = linger
        self.deleting = {}

    def get_job(self, namespace, name):
        self.calls.append(("get", name))
        if name in self.deleting:
            self.deleting[name] -= 1
            if self.deleting[name] < 0:
                del self.deleting[name]
                self.jobs.pop(name, None)
                self.pod_list.pop(name, None)
        return copy.deepcopy(self.jobs.get(name))

    def create_job(self, namespace, body):
        self.calls.append(("create", body["metadata"]["name"]))
        self.jobs[body["metadata"]["name"]] = copy.deepcopy(body)

    def delete_job(self, namespace, name, propagation):
        self.calls.append(("delete", name, propagation))
        self.deleting[name] = self.linger

    def pods(self, namespace, name):
        return copy.deepcopy(self.pod_list.get(name, []))

    def podgroups(self, namespace, name):
        return self.groups.get(name, [])

    def events(self, namespace, names):
        return [e for e in self.event_list if e["involvedObject"]["name"] in names]

    def nodes(self, selector):
        return self.node_list

    def log(self, namespace, pod, lines):
        self.calls.append(("log", pod, lines))
        text = self.logs.get(pod)
        if isinstance(text, Exception):
            return None, f"log unavailable: {text}"
        return "\n".join(text.splitlines()[-lines:]), None

    def get_configmap(self, namespace, name):
        return copy.deepcopy(self.configmaps.get(name))

    def put_configmap_key(self, namespace, name, key, value, labels):
        self.calls.append(("configmap", name, key))
        self.configmaps.setdefault(name, {"metadata": {"labels": labels}, "data": {}})["data"][key] = value


def pod(name, phase, replica, conditions=None, terminated=None, deleting=False, created="2024-01-01T00:00:00Z"):
    status = {"phase": phase, "conditions": conditions or []}
    if terminated:
        status["containerStatuses"] = [{"name": "c", "state": {"terminated": terminated}}]
    metadata = {"name": name, "creationTimestamp": created,
                "labels": {"torchx.pytorch.org/replica-id": str(replica), nj.VOLCANO_TASK_LABEL: f"role1-{replica}"}}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:01:00Z"
    return {"metadata": metadata, "status": status}


def with_phase(job, phase, retry=0):
    job = copy.deepcopy(job)
    job["status"] = {"state": {"phase": phase}, "retryCount": retry}
    return job


def test_render_facts():
    job = nj.render(PARAMS)
    assert job["metadata"]["name"] == "bert" and job["spec"]["minAvailable"] == 2 and job["spec"]["queue"] == "test"
    pod0 = job["spec"]["tasks"][0]["template"]
    assert pod0["metadata"]["labels"]["trainium.eks/workload"] == "training"
    assert pod0["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "trainium.eks"  # the labels option wins
    assert job["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "trainium.eks", "trainium.eks/cluster": "c",
                                         "trainium.eks/workload": "training"}
    line = pod0["spec"]["containers"][0]["command"][2]
    assert line.startswith("python3 -m torch.distributed.run --rdzv_backend etcd --rdzv_endpoint etcd-server:2379 --rdzv_id 'bert-")
    assert line.endswith("--nnodes 2 --nproc_per_node 32 --tee 3 --role '' /opt/trainium-eks/train_bert.py --batch_size 16 --max_steps 50")
    # Guaranteed QoS: cpu and memory of a trn1.32xlarge (128 vCPUs, 512 GiB) less 1/32 of the vCPUs and 1/8 of the memory for the node, requests = limits.
    assert pod0["spec"]["containers"][0]["resources"]["requests"] == {nj.NEURON: "16", nj.EFA: "8", "cpu": "124", "memory": "448Gi"}
    assert pod0["spec"]["containers"][0]["resources"]["limits"] == pod0["spec"]["containers"][0]["resources"]["requests"]
    # the same options render the same Job; another option another hash
    assert nj.render(PARAMS) == job
    assert nj.render(dict(PARAMS, nnodes=3))["metadata"]["annotations"][nj.SPEC_HASH] != job["metadata"]["annotations"][nj.SPEC_HASH]


def test_precompile_render_and_types():
    job = nj.render(PRECOMPILE)
    assert job["metadata"]["name"] == "bert-precompile"
    container = job["spec"]["tasks"][1]["template"]["spec"]["containers"][0]
    assert container["command"][0] == "neuron_parallel_compile" and len(container["command"]) == 2
    assert container["command"][1].endswith("--max_steps 50 --steps_this_run 10")
    assert job["spec"]["tasks"][1]["template"]["metadata"]["labels"]["trainium.eks/workload"] == "precompile"
    small = nj.render(dict(PARAMS, instance_type="trn1.2xlarge", nnodes=1, nproc_per_node=2))
    # trn1.2xlarge: 8 vCPUs and 32 GiB, the node's share at its floor (1 vCPU, 6 GiB).
    assert small["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        nj.NEURON: "1", "cpu": "7", "memory": "26Gi"}
    # trn2.48xlarge: 192 vCPUs and 2 TiB
    assert nj.worker_resources(dict(PARAMS, instance_type="trn2.48xlarge")) == {"cpu": "186", "memory": "1792Gi"}
    trn2 = nj.render(dict(PARAMS, instance_type="trn2.48xlarge", cpu="100", memory="1500Gi"))
    assert trn2["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        nj.NEURON: "16", nj.EFA: "16", "cpu": "100", "memory": "1500Gi"}
    c10d = nj.render(dict(PARAMS, rdzv_backend="c10d"))["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][2]
    assert "--rdzv_backend c10d --rdzv_endpoint bert-role1-0-0.bert:29500" in c10d
    assert nj.render(dict(PARAMS, max_retry=0))["spec"]["tasks"][0].get("policies") is None


def test_render_compact_over_the_size_limit():
    """A Job too heavy for one etcd request in TorchX's shape (1,000 nodes: about 2.3 MB) is one task of nnodes replicas."""
    small = nj.render(dict(PARAMS, nnodes=400))
    assert len(small["spec"]["tasks"]) == 400 and len(json.dumps(small, separators=(",", ":"))) <= nj.MAX_JOB_BYTES
    job = nj.render(dict(PARAMS, nnodes=1000))
    assert len(json.dumps(job, separators=(",", ":"))) < 10000
    (task,) = job["spec"]["tasks"]
    assert task["name"] == "role1" and task["replicas"] == 1000 and job["spec"]["minAvailable"] == 1000
    assert task["policies"] == [{"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "RestartJob"}]
    labels = task["template"]["metadata"]["labels"]
    assert "torchx.pytorch.org/replica-id" not in labels and labels["torchx.pytorch.org/role-name"] == "role1"
    container = task["template"]["spec"]["containers"][0]
    assert container["name"] == "role1" and "--nnodes 1000 --nproc_per_node 32" in container["command"][2]
    env = container["env"]
    assert env[0] == {"name": "TRAINIUM_REPLICA", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['volcano.sh/task-index']"}}}
    values = {item["name"]: item.get("value") for item in env}
    assert values["NEURON_CC_FLAGS"] == "--cache_dir=/data/neuron_cache/bert-large_$(TRAINIUM_REPLICA)"
    assert values["TRANSFORMERS_CACHE"] == "/data/transformers_cache/bert-large_$(TRAINIUM_REPLICA)"
    assert "TORCHX_RANK0_HOST" not in values and [item["name"] for item in env[-2:]] == ["TRAINIUM_JOB_GROUP", "TRAINIUM_JOB_VERSION"]
    assert nj.gang_size(job) == 1000 and nj.gang_size(small) == 400
    assert nj.render(dict(PARAMS, nnodes=1000)) == job
    assert nj.render(dict(PARAMS, nnodes=999))["metadata"]["annotations"][nj.SPEC_HASH] != job["metadata"]["annotations"][nj.SPEC_HASH]
    c10d = nj.render(dict(PARAMS, nnodes=1000, rdzv_backend="c10d"))["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][2]
    assert "--rdzv_endpoint bert-role1-0.bert:29500" in c10d
    precompile = nj.render(dict(PRECOMPILE, nnodes=1000))["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"]
    assert precompile[0] == "neuron_parallel_compile" and precompile[1].endswith("--steps_this_run 10")


def test_status_of_a_compact_job():
    """Its pods' replica comes from Volcano's task-index label; nnodes and the gang's shortfall count the replicas."""
    api = StubApi()
    job = with_phase(nj.render(dict(PARAMS, nnodes=1000)), "Running")
    api.jobs["bert"] = job

    def compact_pod(index, phase):
        return {"metadata": {"name": f"bert-role1-{index}", "creationTimestamp": "2024-01-01T00:00:00Z",
                             "labels": {nj.VOLCANO_TASK_LABEL: "role1", nj.VOLCANO_INDEX_LABEL: str(index)}},
                "status": {"phase": phase}}

    api.pod_list["bert"] = [compact_pod(i, "Running") for i in range(999, -1, -1)]
    api.logs["bert-role1-0"] = "LOG x - (0, 3) step_loss : 5.0 learning_rate : 1e-4 throughput : 3.0"
    summary = nj.status(api, PARAMS)
    assert summary["nnodes"] == 1000 and summary["pods"]["running"] == 1000 and summary["last_log"].startswith("LOG x")
    assert nj.replica_of(api.pod_list["bert"][0]) == 999
    assert [nj.replica_of(p) for p in nj.log_candidates(api.pod_list["bert"])][:1] == [0]
    assert len(nj.log_candidates(api.pod_list["bert"])) == nj.LOG_SEARCH_PODS
    nodes = [{"metadata": {"labels": {nj.INSTANCE_TYPE_LABEL: "trn1.32xlarge"}}, "status": {"allocatable": {nj.NEURON: "16", nj.EFA: "8"}}}] * 999
    assert nj.shortfall(job, nodes) == ("Insufficient aws.amazon.com/neuron: the gang of 1000 pod(s) asks 16000, the 999 schedulable "
                                        "trn1.32xlarge node(s) have 15984; Insufficient vpc.amazonaws.com/efa: the gang of 1000 pod(s) "
                                        "asks 8000, the 999 schedulable trn1.32xlarge node(s) have 7992")


def test_problems():
    assert nj.problems(PARAMS) == []
    found = nj.problems(dict(PARAMS, cacheset="a/b", instance_type="p5.48xlarge", report_every=60, mode="precompile", name="Bad_Name"))
    assert len(found) == 5 and any("cacheset" in p for p in found) and any("report_every" in p for p in found)
    assert any("steps_this_run" in p for p in found) and any("p5.48xlarge" in p for p in found)
    # an unknown type needs its devices and its pod size spelled out
    assert nj.problems(dict(PARAMS, instance_type="p5.48xlarge", neuron_devices=0, efa_interfaces=0)) == [
        "instance_type: got 'p5.48xlarge' without cpu, memory; allowed: trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge, "
        "trn2.48xlarge, or any type with these options set"]
    assert nj.problems(dict(PARAMS, instance_type="p5.48xlarge", neuron_devices=0, efa_interfaces=0, cpu="180", memory="1900Gi")) == []
    capabilities = ["DAC_OVERRIDE", "IPC_LOCK", "CAP_SYS_ADMIN", "SYS_ADMIN"]
    assert nj.problems(dict(PARAMS, cpu="lots", memory="10 GB", run_as_user=0, add_capabilities=capabilities)) == [
        "cpu: got 'lots'; allowed: a Kubernetes quantity such as 124 or 500m",
        "memory: got '10 GB'; allowed: a Kubernetes quantity such as 448Gi",
        "run_as_user: got 0; allowed: a user id of 1 or more (not root), or unset for the image's user",
        *(f"add_capabilities: got {cap!r}; allowed: AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, "
          "NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT (what Pod Security's baseline level admits; no CAP_ prefix)"
          for cap in ("IPC_LOCK", "CAP_SYS_ADMIN", "SYS_ADMIN")),
    ]


def test_present_creates_then_same_hash_changes_nothing_whatever_the_phase():
    api = StubApi()
    first = nj.present(api, PARAMS)
    assert first["changed"] is True and first["would"] == "create" and ("create", "bert") in api.calls
    api.jobs["bert"] = with_phase(api.jobs["bert"], "Completed")
    api.calls.clear()
    again = nj.present(api, PARAMS)
    assert again["changed"] is False and again["would"] == "nothing" and again["status"]["phase"] == "Completed"
    assert not [c for c in api.calls if c[0] in ("create", "delete")]


def test_another_hash_deletes_waits_gone_and_recreates():
    api = StubApi(linger=2)
    nj.present(api, PARAMS)
    old = api.jobs["bert"]["metadata"]["annotations"][nj.SPEC_HASH]
    api.pod_list["bert"] = [pod("bert-role1-0-0", "Running", 0)]
    api.calls.clear()
    result = nj.present(api, dict(PARAMS, nnodes=3), delete_timeout=30)
    assert result["changed"] is True and result["would"] == "replace"
    kinds = [c[0] for c in api.calls]
    assert kinds.index("delete") < kinds.index("create") and kinds.count("get") >= 3  # waited until gone
    assert api.jobs["bert"]["metadata"]["annotations"][nj.SPEC_HASH] != old and len(api.jobs["bert"]["spec"]["tasks"]) == 3


def test_wait_gone_times_out_with_what_is_left():
    api = StubApi(linger=10 ** 6)
    api.jobs["bert"] = nj.render(PARAMS)
    api.delete_job("training", "bert", "Foreground")
    ticks = iter(range(100))
    with pytest.raises(nj.JobError, match="the Job still there 5 s after the delete"):
        nj.wait_gone(api, "training", "bert", 5, sleep=lambda s: None, clock=lambda: next(ticks))


def test_check_mode_returns_the_manifest_and_creates_nothing():
    api = StubApi()
    planned = nj.present(api, PARAMS, check_mode=True)
    assert planned["changed"] is True and planned["would"] == "create" and planned["manifest"]["kind"] == "Job"
    assert api.jobs == {}
    nj.present(api, PARAMS)
    replaced = nj.present(api, dict(PARAMS, image="reg/bert:2"), check_mode=True)
    assert replaced["would"] == "replace" and api.jobs["bert"]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] == "reg/bert:1"


def test_absent_deletes_and_waits():
    api = StubApi(linger=1)
    assert nj.absent(api, PARAMS)["changed"] is False
    nj.present(api, PARAMS)
    assert nj.absent(api, PARAMS, check_mode=True)["would"] == "delete" and "bert" in api.jobs
    gone = nj.absent(api, dict(PARAMS, propagation_policy="Background"))
    assert gone["changed"] is True and "bert" not in api.jobs and ("delete", "bert", "Background") in api.calls


def test_precompile_records_on_completed_then_skips():
    api = StubApi()
    first = nj.present(api, PRECOMPILE)
    assert first["changed"] is True and first["job"]["name"] == "bert-precompile"
    running = nj.status(api, PRECOMPILE)
    assert running["done"] is False and nj.CACHE_CONFIGMAP not in api.configmaps
    api.jobs["bert-precompile"] = with_phase(api.jobs["bert-precompile"], "Completed")
    assert nj.status(api, PRECOMPILE, check_mode=True).get("cache_record_written") is None and not api.configmaps
    done = nj.status(api, PRECOMPILE)
    assert done["cache_recorded"] is True and done["cache_record_written"] is True
    record = json.loads(api.configmaps[nj.CACHE_CONFIGMAP]["data"]["bert-large"])
    assert record["fingerprint"] == nj.fingerprint(PRECOMPILE) and record["job"] == "bert-precompile"
    del api.jobs["bert-precompile"]  # even without the Job, the record says the set is complete
    skipped = nj.present(api, dict(PRECOMPILE, steps_this_run=99, script_args=PARAMS["script_args"][:2] + ["--max_steps=7"]))
    assert skipped["changed"] is False and skipped["skipped_precompile"] is True and "bert-large is complete" in skipped["msg"]
    assert "bert-precompile" not in api.jobs
    other = nj.present(api, dict(PRECOMPILE, image="reg/bert:2"))
    assert other["changed"] is True and other.get("skipped_precompile") is None


def test_pending_reason_from_the_pods_condition():
    message = ("pod group is not ready, 2 Pending, 2 minAvailable; Pending: 2 Unschedulable. Origin reason is bert-role1-1-0: "
               "0/4 nodes are unavailable: 2 Insufficient aws.amazon.com/neuron, 2 node(s) didn't match Pod's node affinity/selector.")
    pods = [pod("bert-role1-0-0", "Pending", 0, [{"type": "PodScheduled", "status": "False", "message": message}]),
            pod("bert-role1-1-0", "Pending", 1)]
    groups = [{"status": {"phase": "Inqueue", "conditions": [{"type": "Unschedulable", "status": "True", "message": "2/2 tasks in gang unschedulable"}]}}]
    job = with_phase(nj.render(PARAMS), "Pending")
    summary = nj.summarize(job, pods, groups, [])
    assert summary["pending_reason"] == message and summary["pods"]["pending"] == 2


def test_pending_reason_of_a_gang_volcano_does_not_enqueue_names_what_is_missing():
    job = with_phase(nj.render(dict(PARAMS, nnodes=3)), "Pending")
    nodes = [{"metadata": {"labels": {nj.INSTANCE_TYPE_LABEL: "trn1.32xlarge"}}, "status": {"allocatable": {nj.NEURON: "16", nj.EFA: "8"}}}
             for node in range(2)] + [{"metadata": {"labels": {nj.INSTANCE_TYPE_LABEL: "m5.large"}}, "status": {"allocatable": {}}}]
    groups = [{"metadata": {"name": "bert-uid"}, "status": {"phase": "Pending", "conditions": [
        {"type": "Unschedulable", "status": "True", "message": "3/0 tasks in gang unschedulable: pod group is not ready, 3 minAvailable"}]}}]
    events = [{"involvedObject": {"name": "bert-uid"}, "type": "Normal", "reason": "Unschedulable", "message": "queue resource quota insufficient",
               "lastTimestamp": "2024-01-01T00:00:05Z"}]
    summary = nj.summarize(job, [], groups, events, nodes)
    reason = summary["pending_reason"]
    assert reason.startswith("3/0 tasks in gang unschedulable") and "queue resource quota insufficient" in reason
    assert "Insufficient aws.amazon.com/neuron: the gang of 3 pod(s) asks 48, the 2 schedulable trn1.32xlarge node(s) have 32" in reason
    assert nj.summarize(with_phase(nj.render(PARAMS), "Running"), [pod("p", "Running", 0)], [], [])["pending_reason"] is None


def test_failed_pod_log_tail_and_rank0_log_line():
    api = StubApi()
    nj.present(api, dict(PARAMS, max_retry=0))
    api.jobs["bert"] = with_phase(api.jobs["bert"], "Running")
    api.pod_list["bert"] = [
        pod("bert-role1-0-0", "Running", 0),
        pod("bert-role1-0-0-old", "Running", 0, deleting=True),
        pod("bert-role1-1-0", "Failed", 1, terminated={"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2024-01-01T00:02:00Z"}),
    ]
    api.logs["bert-role1-0-0"] = "warmup\nLOG Mon Jan 1 - (0, 9) step_loss : 7.1 learning_rate : 1e-4 throughput : 9.5\nnoise"
    api.logs["bert-role1-1-0"] = "a\nb\nc\nd\nTraceback: boom"
    summary = nj.status(api, dict(PARAMS, max_retry=0))
    assert summary["last_log"] == "LOG Mon Jan 1 - (0, 9) step_loss : 7.1 learning_rate : 1e-4 throughput : 9.5"
    failed = summary["failed_pods"][0]
    assert failed["name"] == "bert-role1-1-0" and failed["exit_code"] == 137 and failed["log"] == ["c", "d", "Traceback: boom"]
    assert summary["failed_for_good"] is True and summary["pods"] == {"pending": 0, "running": 1, "succeeded": 0, "failed": 1, "terminating": 1}
    # with restarts left, the same failure is not final
    restarting = nj.summarize(with_phase(nj.render(PARAMS), "Restarting", retry=1), api.pod_list["bert"], [], [])
    assert restarting["failed_for_good"] is False
    assert summary["last_step_log"] == summary["last_log"]
    # A run that logged its end after its last step: the last line is the end, the step figures stay readable.
    api.logs["bert-role1-0-0"] += "\nLOG done: step 9 of 9, checkpoint /data/output/bert/checkpoints/ckpt_9.pt"
    done = nj.status(api, dict(PARAMS, max_retry=0))
    assert done["last_log"].startswith("LOG done: step 9 of 9")
    assert done["last_step_log"] == "LOG Mon Jan 1 - (0, 9) step_loss : 7.1 learning_rate : 1e-4 throughput : 9.5"
    api.logs["bert-role1-0-0"] = RuntimeError("403 pods/log is forbidden")
    assert nj.status(api, dict(PARAMS, max_retry=0))["log_error"] == "log unavailable: 403 pods/log is forbidden"


def test_the_failure_shown_is_the_cause_not_the_peer_whose_rendezvous_closed():
    # Both pods failed in the same second; replica 0's agent only saw replica 1 close the rendezvous.
    api = StubApi()
    nj.present(api, dict(PARAMS, max_retry=0))
    api.jobs["bert"] = with_phase(api.jobs["bert"], "Failed")
    same_second = {"exitCode": 1, "reason": "Error", "finishedAt": "2024-01-01T00:02:00Z"}
    api.pod_list["bert"] = [pod("bert-role1-0-0", "Failed", 0, terminated=same_second),
                            pod("bert-role1-1-0", "Failed", 1, terminated=same_second)]
    api.logs["bert-role1-0-0"] = "Traceback (most recent call last):\n    raise RendezvousClosedError\ntorch...RendezvousClosedError"
    api.logs["bert-role1-1-0"] = "usage: train_bert.py [-h]\ntrain_bert.py: error: unrecognized arguments: --no_such_flag"
    summary = nj.status(api, dict(PARAMS, max_retry=0))
    assert [p["name"] for p in summary["failed_pods"]] == ["bert-role1-1-0", "bert-role1-0-0"]
    assert summary["failed_pods"][0]["log"][-1].endswith("unrecognized arguments: --no_such_flag")
    # When every log is a follow-on (or none says), the first failed pod stays first.
    api.logs["bert-role1-1-0"] = "RendezvousClosedError"
    assert nj.status(api, dict(PARAMS, max_retry=0))["failed_pods"][0]["name"] == "bert-role1-0-0"


def test_fingerprint_ignores_run_length_only():
    base = nj.fingerprint(PRECOMPILE)
    assert nj.fingerprint(dict(PRECOMPILE, steps_this_run=5, script_args=["--batch_size", "16", "--max_steps", "9"])) == base
    for change in ({"bf16": False}, {"nnodes": 4}, {"image": "x"}, {"script_args": ["--batch_size", "8"]}, {"instance_type": "trn1n.32xlarge"}):
        assert nj.fingerprint(dict(PRECOMPILE, **change)) != base


def test_the_log_line_comes_from_whichever_pod_holds_global_rank_0():
    # etcd rendezvous gives node rank 0 to the first agent that arrives: here replica 1's pod.
    api = StubApi()
    nj.present(api, PARAMS)
    api.jobs["bert"] = with_phase(api.jobs["bert"], "Running")
    api.pod_list["bert"] = [pod("bert-role1-0-0", "Running", 0), pod("bert-role1-1-0", "Running", 1)]
    api.logs["bert-role1-0-0"] = "INFO rendezvous complete\nINFO waiting"
    api.logs["bert-role1-1-0"] = "[0]:LOG Tue Dec 1 - (0, 12) step_loss : 6.5 learning_rate : 1e-3 throughput : 99.0"
    summary = nj.status(api, PARAMS)
    assert summary["last_log"] == "LOG Tue Dec 1 - (0, 12) step_loss : 6.5 learning_rate : 1e-3 throughput : 99.0"
    assert summary["log_error"] is None
    # replica 0 is read first, and the search stops at the pod that has the line
    reads = [call[1] for call in api.calls if call[0] == "log"]
    assert reads == ["bert-role1-0-0", "bert-role1-1-0"]


def test_a_job_that_failed_for_good_is_run_again_by_the_next_present():
    api = StubApi()
    nj.present(api, PARAMS)
    api.jobs["bert"] = with_phase(api.jobs["bert"], "Failed", retry=3)
    again = nj.present(api, PARAMS)
    assert again["changed"] is True and again["would"] == "replace" and again["replaced_failed"] == "Failed"
    assert [c[0] for c in api.calls if c[0] in ("delete", "create")] == ["create", "delete", "create"]
    # a Completed job with the same spec stays as it is
    api.jobs["bert"] = with_phase(api.jobs["bert"], "Completed")
    assert nj.present(api, PARAMS)["changed"] is False


def test_pods_carry_no_api_token_and_no_privilege_escalation():
    spec = nj.render(PARAMS)["spec"]["tasks"][0]["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False and spec["enableServiceLinks"] is False
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    container = spec["containers"][0]
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                            "readOnlyRootFilesystem": True}
    # the read-only root's writable /tmp
    assert {"mountPath": "/tmp", "name": "tmp"} in container["volumeMounts"] and {"emptyDir": {}, "name": "tmp"} in spec["volumes"]


def test_pod_hardening_options():
    spec = nj.render(dict(PARAMS, read_only_root_filesystem=False, run_as_user=1000, add_capabilities=["DAC_OVERRIDE"],
                          service_account_name="trainium-eks-training"))["spec"]["tasks"][1]["template"]["spec"]
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": True, "runAsUser": 1000,
                                       "runAsGroup": 1000}
    assert spec["containers"][0]["securityContext"] == {"allowPrivilegeEscalation": False,
                                                        "capabilities": {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]}}
    assert all(v["name"] != "tmp" for v in spec["volumes"]) and all(m["name"] != "tmp" for m in spec["containers"][0]["volumeMounts"])
    assert spec["serviceAccountName"] == "trainium-eks-training" and spec["automountServiceAccountToken"] is False
    # a user that is not the image's own gets a home it can write
    assert {"name": "HOME", "value": "/tmp"} in spec["containers"][0]["env"]
    assert "HOME" not in {e["name"] for e in nj.render(dict(PARAMS, read_only_root_filesystem=False))[
        "spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"]}
    # the module's constant is not changed by an option
    assert nj.CONTAINER_SECURITY == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def _env_names(params):
    return {e["name"]: e.get("value") for e in nj.environment(params, 0)}


def test_trn2_pods_get_the_lnc_and_the_fingerprint_follows_it():
    """NEURON_LOGICAL_NC_CONFIG on trn2 (default 2); nothing on trn1, which has LNC 1 only; the compile cache depends on it."""
    assert "NEURON_LOGICAL_NC_CONFIG" not in _env_names(dict(PARAMS, logical_nc_config=1))
    trn2 = dict(PARAMS, instance_type="trn2.48xlarge", nproc_per_node=64)
    assert _env_names(trn2)["NEURON_LOGICAL_NC_CONFIG"] == "2"
    assert _env_names(dict(trn2, logical_nc_config=1))["NEURON_LOGICAL_NC_CONFIG"] == "1"
    precompile = dict(trn2, mode="precompile", steps_this_run=10)
    assert nj.fingerprint(dict(precompile, logical_nc_config=2)) == nj.fingerprint(precompile)
    assert nj.fingerprint(dict(precompile, logical_nc_config=1)) != nj.fingerprint(precompile)
    assert nj.fingerprint(dict(PRECOMPILE, logical_nc_config=1)) == nj.fingerprint(PRECOMPILE)
    assert nj.problems(trn2) == [] and nj.problems(dict(trn2, logical_nc_config=1)) == []
    assert nj.problems(dict(PARAMS, logical_nc_config=2)) == [
        "logical_nc_config: got 2 for trn1.32xlarge; allowed: 1 (Neuron: LNC 2 exists on Trainium2 and later)"]
