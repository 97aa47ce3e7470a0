# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.neuron_node_check against the rehearsal's kube-apiserver and its fake Trainium nodes (kwok).

The device-plugin pods are stand-ins bound to the nodes (kwok runs them Ready), in a namespace of the test's own;
a lost device is tools/rehearsal/fault.sh node-lose-neuron, as the Neuron device plugin would report it.
"""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.xdist_group("shared_kube")  # it changes the shared fake nodes

TYPES = {"trn1.32xlarge": {"neuron_devices": 16, "neuron_cores": 32, "max_efa_interfaces": 8}}
NODES = ("trn1-0", "trn1-1")
TAINT = "trainium.eks/neuron-unhealthy"


def plugin_pod(name, plugin, node):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/name": plugin}},
            "spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "plugin", "image": "registry.invalid/device-plugin:0"}]}}


@pytest.fixture
def plugins(kube, wait_until):
    """Ready device-plugin pods on both nodes, in a namespace of the test's own."""
    namespace = f"nodecheck-{uuid.uuid4().hex[:8]}"
    kube.kubectl("create", "namespace", namespace)
    for node in NODES:
        for plugin in ("neuron-device-plugin", "efa-device-plugin"):
            kube.apply(plugin_pod(f"{plugin}-{node}", plugin, node), namespace=namespace)

    def all_ready():
        pods = kube.json("-n", namespace, "get", "pods")["items"]
        return len(pods) == 4 and all(any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
                                      for p in pods)

    wait_until(all_ready, timeout=90, what="the stand-in device-plugin pods to be Ready")
    yield namespace
    kube.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_healthy_nodes_pass_a_lost_device_fails_and_remediation_cordons_that_node_only(kube, run_module, plugins, local_vars, wait_until):
    pools = [dict(local_vars["trainium_node_pools"][0])]
    args = {"pools": pools, "instance_types": TYPES, "device_plugin_namespace": plugins, "kubeconfig": kube.env["KUBECONFIG"]}

    def healthy_check():
        """the check to pass (on a loaded machine kwok may report a node or a pod late)"""
        result = run_module("trainium.eks.neuron_node_check", args)
        return result if result.get("healthy") else None

    healthy = wait_until(healthy_check, timeout=90, interval=3)
    assert [n["name"] for n in healthy["nodes"]] == list(NODES)
    assert all(n["device_plugins"] == {"neuron-device-plugin": "Ready", "efa-device-plugin": "Ready"} for n in healthy["nodes"])
    assert healthy["api_calls"] == {"list_nodes": 1, "list_pods": 1, "patch_node": 0}

    try:
        kube.fault("node-lose-neuron", "trn1-0")
        lost = run_module("trainium.eks.neuron_node_check", args)
        assert lost["failed"] is True and "trn1-0" in lost["bad_nodes"], lost
        line = next(line for line in lost["msg"].splitlines() if line.startswith("trn1-0 "))
        assert "aws.amazon.com/neuron 0 of 16; aws.amazon.com/neuroncore 0 of 32" in line and "0/32" in line
        # The other node lost nothing (it may show as not Ready for a moment on a loaded machine, never as short of devices).
        other = next(n for n in lost["nodes"] if n["name"] == "trn1-1")
        assert (other["neuron"], other["neuroncore"], other["efa"]) == (16, 32, 8)

        planned = run_module("trainium.eks.neuron_node_check", dict(args, remediate=True), check=True)
        assert planned["remediated"] == [{"name": "trn1-0", "taint": f"{TAINT}=neuron-0-of-16_neuroncore-0-of-32:NoSchedule"}]
        assert not kube.json("get", "node", "trn1-0")["spec"].get("unschedulable")

        fixed = run_module("trainium.eks.neuron_node_check", dict(args, remediate=True, fail_on_unhealthy=False))
        assert fixed.get("failed") is not True and fixed["changed"] is True, fixed
        assert [r["name"] for r in fixed["remediated"]] == ["trn1-0"]
        cordoned = {name: kube.json("get", "node", name)["spec"] for name in NODES}
        assert cordoned["trn1-0"].get("unschedulable") is True
        assert {"key": TAINT, "value": "neuron-0-of-16_neuroncore-0-of-32", "effect": "NoSchedule"} in cordoned["trn1-0"]["taints"]
        assert not cordoned["trn1-1"].get("unschedulable") and all(t["key"] != TAINT for t in cordoned["trn1-1"].get("taints", []))

        again = run_module("trainium.eks.neuron_node_check", dict(args, remediate=True, fail_on_unhealthy=False))
        assert again["changed"] is False and again["remediated"] == [] and again["api_calls"]["patch_node"] == 0
    finally:
        kube.fault("node-restore", "trn1-0")
        kube.kubectl("taint", "nodes", "trn1-0", f"{TAINT}-", check=False)
        kube.kubectl("uncordon", "trn1-0")
    wait_until(healthy_check, timeout=90, interval=3)
