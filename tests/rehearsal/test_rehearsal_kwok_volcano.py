# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's fake Trainium nodes (kwok) and Volcano, against the real API server.

The local inventory has one pool ``trn1`` of two trn1.32xlarge nodes; the
node figures and zone must be what the collection's own code derives from the
rehearsal's EC2 endpoint (moto).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import boto3
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAMESPACE = "default"
NEURON = "aws.amazon.com/neuron"
NEURONCORE = "aws.amazon.com/neuroncore"
EFA = "vpc.amazonaws.com/efa"
INSTANCE_TYPE = "trn1.32xlarge"
# The rehearsal makes no queue (the trainium.eks.volcano role makes the job's):
# these tests use one of their own.
QUEUE = "rehearsal-kwok"


# They change the shared cluster's nodes and use all their Neuron devices: one
# after another (with the other tests of the shared cluster).
pytestmark = pytest.mark.xdist_group("shared_kube")


def volcano_job(name, replicas, min_available, neuron=None, annotations=None):
    resources = {}
    if neuron:
        resources = {"requests": {NEURON: str(neuron)}, "limits": {NEURON: str(neuron)}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedulerName": "volcano",
            "queue": QUEUE,
            "minAvailable": min_available,
            "tasks": [{
                "name": "worker",
                "replicas": replicas,
                "template": {
                    "metadata": {"annotations": annotations or {}},
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": {"node.kubernetes.io/instance-type": INSTANCE_TYPE},
                        "containers": [{"name": "worker", "image": "rehearsal.invalid/worker:0", "resources": resources}],
                    },
                },
            }],
        },
    }


@pytest.fixture(scope="module")
def queue(kube, wait_until):
    """A Volcano queue of these tests, Open (the controller manager took it up); deleted afterwards."""
    kube.apply({
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": QUEUE},
        "spec": {"weight": 1, "reclaimable": True},
    })
    wait_until(
        lambda: (kube.json("get", "queues.scheduling.volcano.sh", QUEUE).get("status") or {}).get("state") == "Open",
        timeout=60, what=f"queue {QUEUE} to be Open",
    )
    yield QUEUE
    kube.kubectl("delete", "queues.scheduling.volcano.sh", QUEUE, "--ignore-not-found", "--wait=true", "--timeout=60s", check=False)


@pytest.fixture()
def jobs(kube, wait_until, queue):  # pylint: disable=unused-argument
    """Create Volcano Jobs; every one is deleted (with its pods) after the test."""
    created = []

    def create(job):
        kube.apply(job)
        created.append(job["metadata"]["name"])
        return job["metadata"]["name"]

    yield create
    for name in created:
        kube.kubectl("-n", NAMESPACE, "delete", "jobs.batch.volcano.sh", name, "--ignore-not-found", "--wait=true", "--timeout=60s", check=False)
    for name in created:
        wait_until(
            lambda name=name: not kube.json("-n", NAMESPACE, "get", "pods", "-l", f"volcano.sh/job-name={name}")["items"],
            timeout=60, what=f"the pods of {name} to go",
        )


def job_phase(kube, name):
    job = kube.json("-n", NAMESPACE, "get", "jobs.batch.volcano.sh", name)
    return (job.get("status", {}).get("state") or {}).get("phase")


def job_pods(kube, name):
    return kube.json("-n", NAMESPACE, "get", "pods", "-l", f"volcano.sh/job-name={name}")["items"]


def podgroup_of(kube, name):
    for group in kube.json("-n", NAMESPACE, "get", "podgroups.scheduling.volcano.sh")["items"]:
        if any(ref.get("name") == name for ref in group["metadata"].get("ownerReferences") or []):
            return group
    return None


def expected_zone(rehearsal, local_vars):
    """The zone the collection's placement picks for the trn1 pool."""
    sys.path.insert(0, str(ROOT / ".collections"))
    from ansible_collections.trainium.eks.plugins.module_utils.trainium_capacity import gather_capacity
    from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import place_node_pools

    region = local_vars["trainium_region"]
    client = boto3.session.Session(
        aws_access_key_id=rehearsal["AWS_ACCESS_KEY_ID"], aws_secret_access_key=rehearsal["AWS_SECRET_ACCESS_KEY"], region_name=region,
    ).client("ec2", endpoint_url=rehearsal["AWS_ENDPOINT_URL"])
    pools = local_vars["trainium_node_pools"]
    placed = place_node_pools(pools, gather_capacity(client, [p["instance_type"] for p in pools]), region)
    return {p["name"]: p["availability_zone"] for p in placed["node_pools"]}


def test_kwok_nodes_match_the_node_pool(kube, rehearsal, local_vars):
    zones = expected_zone(rehearsal, local_vars)
    assert zones == {"trn1": "us-west-2b"}
    nodes = {n["metadata"]["name"]: n for n in kube.json("get", "nodes", "-l", "type=kwok,trainium.eks/pool=trn1")["items"]}
    assert sorted(nodes) == ["trn1-0", "trn1-1"]
    for node in nodes.values():
        labels = node["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == INSTANCE_TYPE
        assert labels["topology.kubernetes.io/zone"] == zones["trn1"]
        assert labels["topology.kubernetes.io/region"] == "us-west-2"
        assert labels["eks.amazonaws.com/nodegroup"] == f"{local_vars['trainium_cluster_name']}-trn1"
        allocatable = node["status"]["allocatable"]
        assert (allocatable[NEURON], allocatable[NEURONCORE], allocatable[EFA]) == ("16", "32", "8")
        # 128 vCPUs and 512 GiB less the EKS AMI's kube-reserved (390m; 11 MiB x 110 pods + 255 MiB) and eviction (100 MiB)
        assert node["status"]["capacity"]["cpu"] == "128" and allocatable["cpu"] == "127610m"
        assert node["status"]["capacity"]["memory"] == "512Gi" and allocatable["memory"] == "522723Mi"
        ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", node["status"].get("conditions")
        # Loopback only: kube-apiserver reaches kwok's kubelet API (pod logs) at InternalIP:kubelet port.
        assert node["status"]["addresses"] == [{"type": "InternalIP", "address": "127.0.0.1"},
                                               {"type": "Hostname", "address": node["metadata"]["name"]}]
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == int(rehearsal["TRAINIUM_KWOK_PORT"])


def test_kwok_system_nodes_spread_over_the_cluster_zones_without_devices(kube, local_vars):
    """trainium_system_node_pool (unset: 2 x m7i.large) gives CPU nodes in both cluster zones, no Neuron or EFA."""
    assert "trainium_system_node_pool" not in local_vars  # the defaults
    nodes = {n["metadata"]["name"]: n for n in kube.json("get", "nodes", "-l", "type=kwok,trainium.eks/pool=system")["items"]}
    assert sorted(nodes) == ["system-0", "system-1"]
    zones = {node["metadata"]["labels"]["topology.kubernetes.io/zone"] for node in nodes.values()}
    assert len(zones) == 2, zones
    for node in nodes.values():
        labels = node["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == "m7i.large"
        assert labels["eks.amazonaws.com/nodegroup"] == f"{local_vars['trainium_cluster_name']}-system"
        allocatable = node["status"]["allocatable"]
        assert allocatable["cpu"] == "1930m" and allocatable["memory"] == "6627Mi"
        assert not {NEURON, NEURONCORE, EFA} & set(allocatable), allocatable


def test_gang_job_that_fits_runs(kube, jobs, wait_until):
    name = jobs(volcano_job("rehearsal-fits", replicas=2, min_available=2, neuron=16))
    wait_until(
        lambda: job_phase(kube, name) == "Running", timeout=120, what=f"Volcano job {name} to be Running",
        explain=lambda: kube.describe_pods(NAMESPACE, f"volcano.sh/job-name={name}"),
    )
    pods = job_pods(kube, name)
    assert len(pods) == 2
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["trn1-0", "trn1-1"]
    assert all(p["status"]["phase"] == "Running" for p in pods)


def test_the_rehearsal_runs_the_volcano_release_the_aws_inventory_installs(kube, shared_rehearsal):
    pinned = {
        inventory: yaml.safe_load((ROOT / "inventories" / inventory / "group_vars" / "all" / "volcano.yml").read_text(encoding="utf-8"))["volcano_version"]
        for inventory in ("aws", "local")
    }
    assert pinned["aws"] == pinned["local"], pinned
    state_bin = pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "bin"
    for binary in ("vc-scheduler", "vc-controller-manager"):
        printed = subprocess.run([str(state_bin / binary), "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
        assert f"Version: {pinned['aws']}" in printed.splitlines(), (binary, printed)
    # The CRDs the API server serves are those of that release's manifest (the one the AWS inventory applies).
    manifest = shared_rehearsal["TRAINIUM_VOLCANO_MANIFEST_URL"].removeprefix("file://")
    assert f"volcano.sh/volcano@{pinned['aws']}/" in manifest
    wanted = {d["metadata"]["name"] for d in yaml.safe_load_all(pathlib.Path(manifest).read_text(encoding="utf-8"))
              if d and d["kind"] == "CustomResourceDefinition"}
    served = {c["metadata"]["name"] for c in kube.json("get", "crd")["items"] if c["metadata"]["name"].endswith(".volcano.sh")}
    assert wanted and wanted <= served, sorted(wanted - served)


def test_gang_job_larger_than_the_cluster_stays_pending(kube, jobs, wait_until):
    sys.path.insert(0, str(ROOT / ".collections"))
    from ansible_collections.trainium.eks.plugins.module_utils.trainium_neuron_job import pending_reason

    name = jobs(volcano_job("rehearsal-too-big", replicas=3, min_available=3, neuron=16))

    def group_events():
        group = podgroup_of(kube, name)
        if not group:
            return None
        events = [e for e in kube.json("-n", NAMESPACE, "get", "events")["items"]
                  if e["involvedObject"].get("name") == group["metadata"]["name"] and e.get("reason") == "Unschedulable"]
        messages = {e["type"]: e["message"] for e in events}
        # The scheduler records its events before it writes the PodGroup's
        # status (seen in CI: both events there, status.phase still unset).
        return len(messages) == 2 and group.get("status", {}).get("phase") and (group, events, messages)

    group, events, messages = wait_until(group_events, timeout=90, what=f"the PodGroup of {name} to say why it waits")
    # Observed with Volcano v1.15.1: the enqueue action keeps the PodGroup
    # Pending (48 Neuron devices asked, 32 exist), so the controller creates
    # no pods. Volcano says why in two events on the PodGroup; it writes no
    # Unschedulable condition for a job without tasks (v1.10.0 did), so the
    # collection reads the events.
    assert group["status"].get("phase") == "Pending"
    assert not [c for c in group["status"].get("conditions") or [] if c.get("type") == "Unschedulable"], group["status"]
    assert "tasks in gang unschedulable" in messages["Warning"] and "3 minAvailable" in messages["Warning"], messages
    assert messages["Normal"] == f"queue resource quota insufficient: insufficient {NEURON}", messages
    # What the training stage prints for such a job.
    reason = pending_reason([], [group], events)
    assert messages["Normal"] in reason and "3 minAvailable" in reason, reason
    time.sleep(3)
    assert job_phase(kube, name) == "Pending"
    assert all(not p["spec"].get("nodeName") for p in job_pods(kube, name))


def test_node_lose_neuron_and_restore(kube, jobs, wait_until):
    def allocatable(node):
        return kube.json("get", "node", node)["status"]["allocatable"]

    try:
        kube.fault("node-lose-neuron", "trn1-1")
        assert (allocatable("trn1-1")[NEURON], allocatable("trn1-1")[NEURONCORE]) == ("0", "0")
        # The scheduler sees it: a gang that needs both nodes no longer fits.
        name = jobs(volcano_job("rehearsal-lost-neuron", replicas=2, min_available=2, neuron=16))
        time.sleep(8)
        assert job_phase(kube, name) == "Pending"
        assert allocatable("trn1-1")[NEURON] == "0", "the fault did not stick"
    finally:
        kube.fault("node-restore", "trn1-1")
    assert (allocatable("trn1-1")[NEURON], allocatable("trn1-1")[NEURONCORE]) == ("16", "32")
    wait_until(lambda: job_phase(kube, name) == "Running", timeout=90, what=f"Volcano job {name} to run once the node is back")


def test_pod_fail(kube, jobs, wait_until):
    name = jobs(volcano_job("rehearsal-pod-fail", replicas=1, min_available=1))
    pod = wait_until(
        lambda: next((p for p in job_pods(kube, name) if p["status"].get("phase") == "Running"), None),
        timeout=120, what=f"the pod of {name} to run", explain=lambda: kube.describe_pods(NAMESPACE, f"volcano.sh/job-name={name}"),
    )
    kube.fault("pod-fail", NAMESPACE, pod["metadata"]["name"])

    def failed_pod():
        current = kube.json("-n", NAMESPACE, "get", "pod", pod["metadata"]["name"])
        return current if current["status"].get("phase") == "Failed" else None

    failed = wait_until(failed_pod, timeout=60, what="the pod to fail")
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 1


def test_annotated_job_completes(kube, jobs, wait_until):
    name = jobs(volcano_job("rehearsal-completes", replicas=2, min_available=2, annotations={"rehearsal.trainium.eks/complete": "true"}))
    wait_until(
        lambda: job_phase(kube, name) == "Completed", timeout=120, what=f"Volcano job {name} to complete",
        explain=lambda: kube.describe_pods(NAMESPACE, f"volcano.sh/job-name={name}"),
    )
