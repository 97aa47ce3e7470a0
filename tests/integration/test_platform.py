# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform stage end to end: site.yml on the rehearsal, then playbooks/platform.yml again.

site.yml builds the AWS side in moto and reaches the rehearsal's
kube-apiserver as EKS makes it reachable (DescribeCluster, an EKS token);
the platform roles then apply their objects there. Every assertion reads the
cluster (as its admin) or the account, never the playbook's own report.
Nothing connects to a pod, node or Service address: readiness comes from the
API (kwok makes the pods on its fake nodes Ready).
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.xdist_group("shared_stack")  # EKS token through the shared authenticator; changes the shared nodes

SITE = "site.yml"
PLATFORM = "playbooks/platform.yml"
TEARDOWN = "playbooks/teardown.yml"
CLUSTER = "trn-rehearsal"
TRN_NODES = ["trn1-0", "trn1-1"]
SYSTEM_NODES = {"system-0", "system-1"}
MANAGED = "app.kubernetes.io/managed-by=trainium.eks"
UNHEALTHY = "trainium.eks/neuron-unhealthy"
DAEMONSETS = ("neuron-device-plugin", "efa-device-plugin", "neuron-monitor")
VOLCANO_CRDS = ("jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh")


@pytest.fixture()
def args(tmp_path):
    """Where the kubeconfig goes, and short polls."""
    return ["-e", json.dumps({"trainium_kubeconfig": str(tmp_path / "kube" / f"{CLUSTER}.yaml"),
                              "fsx_lustre_wait_delay": 1, "eks_cluster_wait_delay": 1})]


def ready(obj):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"].get("conditions", []))


def managed_versions(kube):
    """resourceVersion of every object the platform roles made (a dry run must change none)."""
    kinds = "daemonsets,deployments,statefulsets,services,serviceaccounts,persistentvolumeclaims,queues.scheduling.volcano.sh"
    listed = kube.json("get", kinds, "-A", "-l", MANAGED)["items"]
    listed += kube.json("get", "persistentvolumes,clusterroles,clusterrolebindings,csidrivers", "-l", MANAGED)["items"]
    return {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in listed}


def assert_platform_is_up(kube, aws, local_vars):
    job = local_vars["trainium_job"]
    # Device plugins and neuron-monitor: Ready on the Trainium nodes, on nothing else.
    for name in DAEMONSETS:
        ds = kube.json("-n", "kube-system", "get", "daemonset", name)
        status = ds["status"]
        assert status["desiredNumberScheduled"] == 2 and status["numberReady"] == 2, (name, status)
        pods = kube.json("-n", "kube-system", "get", "pods", "-l", f"app.kubernetes.io/name={name}")["items"]
        assert sorted(p["spec"]["nodeName"] for p in pods) == TRN_NODES, name
        assert all(ready(p) for p in pods), name

    # Volcano: CRDs established, the job's queue open.
    for crd in VOLCANO_CRDS:
        conditions = kube.json("get", "crd", crd)["status"]["conditions"]
        assert any(c["type"] == "Established" and c["status"] == "True" for c in conditions), crd
    queue = kube.json("get", "queues.scheduling.volcano.sh", job["queue"])
    assert queue["status"]["state"] == "Open"

    # etcd: the StatefulSet Ready behind Service etcd-server:2379, on the system pool.
    namespace = job["namespace"]
    service = kube.json("-n", namespace, "get", "service", "etcd-server")
    assert 2379 in [p["port"] for p in service["spec"]["ports"]]
    statefulsets = kube.json("-n", namespace, "get", "statefulsets", "-l", MANAGED)["items"]
    assert len(statefulsets) == 1
    assert statefulsets[0]["status"].get("readyReplicas") == statefulsets[0]["spec"]["replicas"]
    etcd_pods = kube.json("-n", namespace, "get", "pods", "-l", "app.kubernetes.io/name=etcd-server")["items"]
    assert etcd_pods and {p["spec"]["nodeName"] for p in etcd_pods} <= SYSTEM_NODES

    # FSx CSI: the controller on the system pool, fsx-claim Bound to the file system the infrastructure made.
    controllers = kube.json("-n", "kube-system", "get", "pods", "-l", "app.kubernetes.io/name=fsx-csi-controller")["items"]
    assert controllers and {p["spec"]["nodeName"] for p in controllers} <= SYSTEM_NODES
    (fs,) = aws.client("fsx").describe_file_systems()["FileSystems"]
    claim = kube.json("-n", namespace, "get", "pvc", "fsx-claim")
    assert claim["status"]["phase"] == "Bound"
    volume = kube.json("get", "pv", claim["spec"]["volumeName"])
    csi = volume["spec"]["csi"]
    assert csi["driver"] == "fsx.csi.aws.com" and csi["volumeHandle"] == fs["FileSystemId"]
    assert csi["volumeAttributes"] == {"dnsname": fs["DNSName"], "mountname": fs["LustreConfiguration"]["MountName"]}
    assert volume["spec"]["accessModes"] == ["ReadWriteMany"] and "flock" in volume["spec"]["mountOptions"]


def test_platform_comes_up_idempotent_checkable_and_the_node_check_finds_a_lost_device(
        aws, run_playbook, kube, args, local_vars, wait_until):
    baseline = aws.resources()
    first = run_playbook(SITE, args=args)
    try:
        assert first.rc == 0, first
        assert_platform_is_up(kube, aws, local_vars)
        assert "RETRYING" not in first.output

        again = run_playbook(PLATFORM, args=args)
        assert again.rc == 0, again
        assert again.recap["changed"] == 0, again.changed_tasks

        before = managed_versions(kube)
        planned = run_playbook(PLATFORM, args=args + ["--check", "--diff"])
        assert planned.rc == 0, planned
        assert planned.recap["changed"] == 0, planned.changed_tasks
        assert managed_versions(kube) == before

        # One node loses its NeuronCores: the check names it and the resource; remediation cordons it alone.
        kube.fault("node-lose-neuron", "trn1-0")
        try:
            lost = run_playbook(PLATFORM, args=args + ["--tags", "neuron_node_check"])
            assert lost.rc != 0, lost
            bad = [line for line in lost.output.splitlines() if line.strip().startswith("trn1-")]
            assert any("trn1-0" in line and "aws.amazon.com/neuroncore" in line for line in bad), lost.output[-3000:]
            assert not any("trn1-1" in line for line in bad), bad
            fixed = run_playbook(PLATFORM, args=args + ["--tags", "neuron_node_check", "-e", "trainium_node_check_remediate=true"])
            assert fixed.rc != 0, fixed  # still not healthy: cordoned, not repaired
            nodes = {n["metadata"]["name"]: n["spec"] for n in kube.json("get", "nodes", "-l", "trainium.eks/pool=trn1")["items"]}
            assert nodes["trn1-0"].get("unschedulable") is True
            assert any(t["key"] == UNHEALTHY for t in nodes["trn1-0"].get("taints", []))
            assert not nodes["trn1-1"].get("unschedulable") and not nodes["trn1-1"].get("taints")
        finally:
            kube.fault("node-restore", "trn1-0")
            kube.kubectl("taint", "nodes", "trn1-0", f"{UNHEALTHY}-", check=False)
            kube.kubectl("uncordon", "trn1-0")
    finally:
        down = run_playbook(TEARDOWN, args=args)
    assert down.rc == 0, down
    assert aws.resources() == baseline
    assert managed_versions(kube) == {}
