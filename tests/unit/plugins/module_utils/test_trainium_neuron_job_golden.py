# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Volcano Job of trainium.eks.neuron_job against TorchX 0.7.0's, field for field.

tests/golden/neuron_job/*.yaml are TorchX's own dry runs (tools/torchx/generate_golden.py, run in a throwaway
virtualenv with torchx 0.7.0) of the trn1_dist_ddp component. Our rendering of the same inputs must be equal once
only these are normalized: the random parts (TorchX's job-name suffix, which is also its --rdzv_id; ours are the
given name and <name>-<hash>), and our listed additions (trainium_neuron_job.ADDITIONS), each removed by name below.
"""

from __future__ import annotations

import copy
import pathlib
import re

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_neuron_job as nj

GOLDEN = pathlib.Path(__file__).resolve().parents[3] / "golden" / "neuron_job"
CASES = sorted(path.stem for path in GOLDEN.glob("*.yaml"))
DEFAULTS = {"namespace": "training", "rdzv_backend": "etcd", "claim_name": "fsx-claim", "mount_path": "/data", "max_retry": 3,
            "labels": {}, "tolerations": [], "node_selector": {}, "env": {}}


def load(case):
    data = yaml.safe_load((GOLDEN / f"{case}.yaml").read_text())
    return dict(DEFAULTS, **data["inputs"]), data["torchx"]


def without_random_parts(job, name):
    """The job with its name and its rdzv_id replaced by JOB and RDZV."""
    job = copy.deepcopy(job)
    real = job["metadata"]["name"]
    for task in job["spec"]["tasks"]:
        container = task["template"]["spec"]["containers"][0]
        container["command"] = [re.sub(r"--rdzv_id '[^']*'", "--rdzv_id 'RDZV'", word) for word in container["command"]]
        labels = task["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == real
        labels["app.kubernetes.io/instance"] = "JOB"
    job["metadata"]["name"] = "JOB"
    assert real.startswith(f"{name}-") or real == name
    return job


def without_additions(job, params):
    """Our job without the additions of ADDITIONS, each checked for its value before it goes."""
    job = copy.deepcopy(job)
    metadata = job["metadata"]
    assert metadata.pop("namespace") == params["namespace"]
    assert metadata.pop("labels") == {nj.WORKLOAD_LABEL: nj.workload(params)}
    annotations = metadata.pop("annotations")
    assert re.fullmatch(r"[0-9a-f]{64}", annotations.pop(nj.SPEC_HASH))
    if params["mode"] == "precompile":
        assert annotations.pop(nj.FINGERPRINT) == nj.fingerprint(params)
    assert annotations == {}
    assert job["spec"].pop("minAvailable") == params["nnodes"]
    for task in job["spec"]["tasks"]:
        template = task["template"]
        assert template["metadata"]["labels"].pop(nj.WORKLOAD_LABEL) == nj.workload(params)
        for key, value in nj.POD_HARDENING.items():
            assert template["spec"].pop(key) == value
        container = template["spec"]["containers"][0]
        assert container["securityContext"] == dict(nj.CONTAINER_SECURITY, readOnlyRootFilesystem=True)
        container["securityContext"] = {}
        assert container["volumeMounts"].pop() == nj.TMP_MOUNT and template["spec"]["volumes"].pop() == nj.TMP_VOLUME
        resources = container["resources"]
        assert resources["requests"] == resources["limits"]
        resources["requests"] = {}
        assert {resources["limits"].pop("cpu"), resources["limits"].pop("memory")} == set(nj.worker_resources(params).values())
        # The rendezvous of each Job object and attempt: its PodGroup and version from the pod's annotations, after the rdzv_id.
        assert container["env"].pop() == {"name": nj.JOB_VERSION_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.annotations['{nj.JOB_VERSION_ANNOTATION}']"}}}
        assert container["env"].pop() == {"name": nj.JOB_GROUP_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.annotations['{nj.JOB_GROUP_ANNOTATION}']"}}}
        assert container["env"].pop() == {"name": "HOME", "value": "/tmp"}  # the read-only root's home
        suffix = f"-\"${{{nj.JOB_GROUP_ENV}:-0}}\"-\"v${{{nj.JOB_VERSION_ENV}:-0}}\""
        assert suffix in container["command"][-1]
        container["command"][-1] = container["command"][-1].replace(suffix, "")
    return job


@pytest.mark.parametrize("case", CASES)
def test_rendering_is_torchx_0_7_0_field_for_field(case):
    params, torchx = load(case)
    ours = nj.render(params)
    assert nj.problems(params) == []
    # The random parts: TorchX's suffix; ours is the given name, and the rdzv_id is <name>-<8 hex of the spec hash>.
    assert ours["metadata"]["name"] == nj.job_name(params)
    rdzv = re.search(r"--rdzv_id '([^']*)'", ours["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][-1]).group(1)
    assert rdzv == f"{nj.job_name(params)}-{ours['metadata']['annotations'][nj.SPEC_HASH][:8]}"
    expected = without_random_parts(torchx, params["name"])
    got = without_random_parts(without_additions(ours, params), nj.job_name(params))
    assert got == expected


def test_the_goldens_say_what_the_issue_asks():
    """The facts of the issue, read from TorchX's files themselves (so a regenerated golden cannot drift unseen)."""
    assert {"trn1-32xl-2x32-bf16-bert-large", "trn1n-32xl-2x32-bf16-bert-large"} <= set(CASES)
    for case, efa in (("trn1-32xl-2x32-bf16-bert-large", "8"), ("trn1n-32xl-2x32-bf16-bert-large", "16")):
        params, torchx = load(case)
        tasks = torchx["spec"]["tasks"]
        assert [t["name"] for t in tasks] == ["role1-0", "role1-1"] and all(t["replicas"] == 1 for t in tasks)
        pod = tasks[1]["template"]["spec"]
        container = pod["containers"][0]
        assert container["resources"]["limits"] == {nj.NEURON: "16", nj.EFA: efa}
        assert pod["nodeSelector"] == {nj.INSTANCE_TYPE_LABEL: params["instance_type"]}
        assert {"emptyDir": {"medium": "Memory"}, "name": "dshm"} in pod["volumes"]
        assert {"name": "mount-0", "persistentVolumeClaim": {"claimName": "fsx-claim"}} in pod["volumes"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["NEURON_CC_FLAGS"] == "--cache_dir=/data/neuron_cache/bert-large_1" and env["XLA_DOWNCAST_BF16"] == "1"
        assert env["FI_PROVIDER"] == "efa" and env["CCOM_SOCKET_IFNAME"] == "eth0"
        assert container["command"][:2] == ["bash", "-c"]
        assert "--rdzv_backend etcd --rdzv_endpoint etcd-server:2379" in container["command"][2]
        assert "--nnodes 2 --nproc_per_node 32" in container["command"][2]
        assert tasks[0]["policies"] == [{"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "RestartJob"}]
        assert torchx["spec"]["maxRetry"] == 3 and tasks[0]["maxRetry"] == 3


def test_a_difference_is_caught():
    """The comparison is not vacuous: one changed value in our rendering shows up."""
    params, torchx = load("trn1-32xl-2x32-bf16-bert-large")
    ours = nj.render(dict(params, efa_interfaces=16))
    assert without_random_parts(without_additions(ours, params), params["name"]) != without_random_parts(torchx, params["name"])
