# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium_node_check: the judgement of Trainium nodes (pure) and the calls it makes (a fake CoreV1Api)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_node_check as nc

TYPES = {"trn1.32xlarge": {"neuron_devices": 16, "neuron_cores": 32, "max_efa_interfaces": 8},
         "trn1.2xlarge": {"neuron_devices": 1, "neuron_cores": 2, "max_efa_interfaces": 0},
         # DescribeInstanceTypes counts physical cores: 16 devices x 8.
         "trn2.48xlarge": {"neuron_devices": 16, "neuron_cores": 128, "max_efa_interfaces": 16}}


def node(name, pool="trn1", instance_type="trn1.32xlarge", ready=True, neuron="16", cores="32", efa="8", unschedulable=False, taints=None):
    allocatable = {"cpu": "128"}
    for key, value in ((nc.NEURON, neuron), (nc.NEURONCORE, cores), (nc.EFA, efa)):
        if value is not None:
            allocatable[key] = value
    return {
        "metadata": {"name": name, "labels": {nc.POOL_LABEL: pool, nc.INSTANCE_TYPE_LABEL: instance_type, nc.ZONE_LABEL: "us-west-2b"}},
        "spec": dict({"unschedulable": True} if unschedulable else {}, **({"taints": taints} if taints else {})),
        "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                               "reason": "KubeletReady" if ready else "KubeletNotReady"}]},
    }


def pod(plugin, node_name, ready=True):
    return {"metadata": {"labels": {"app.kubernetes.io/name": plugin}}, "spec": {"nodeName": node_name},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def plugins_for(*names, efa=True):
    pods = [pod("neuron-device-plugin", n) for n in names] + ([pod("efa-device-plugin", n) for n in names] if efa else [])
    return nc.plugin_pods_by_node(pods)


def test_a_healthy_node_has_no_problem():
    report = nc.inspect_node(node("trn1-0"), TYPES, plugins_for("trn1-0")["trn1-0"])
    assert report["problems"] == [] and report["expected"] == {"neuron": 16, "neuroncore": 32, "efa": 8}
    assert report["device_plugins"] == {"neuron-device-plugin": "Ready", "efa-device-plugin": "Ready"}


def test_trn2_nodes_advertise_logical_cores_of_their_pool_lnc():
    """At the default LNC=2 a healthy trn2.48xlarge advertises 64 NeuronCores; a pool at LNC=1 wants 128."""
    trn2 = node("trn2-0", pool="trn2", instance_type="trn2.48xlarge", cores="64", efa="16")
    plugins = plugins_for("trn2-0")["trn2-0"]
    report = nc.inspect_node(trn2, TYPES, plugins)
    assert report["problems"] == [] and report["expected"] == {"neuron": 16, "neuroncore": 64, "efa": 16}
    assert nc.inspect_node(trn2, TYPES, plugins, lnc=2)["problems"] == []
    assert nc.inspect_node(trn2, TYPES, plugins, lnc=1)["problems"] == ["aws.amazon.com/neuroncore 64 of 128"]


def test_check_takes_the_lnc_of_the_node_pool():
    nodes = [node("trn1-0", instance_type="trn2.48xlarge", cores="64", efa="16")]
    pods = [pod(p, "trn1-0") for p in ("neuron-device-plugin", "efa-device-plugin")]
    assert nc.check(reader_with(nodes, pods), [{"name": "trn1", "logical_nc_config": 2}], TYPES)["healthy"] is True
    result = nc.check(reader_with(nodes, pods), [{"name": "trn1", "logical_nc_config": 1}], TYPES)
    assert result["healthy"] is False and result["nodes"][0]["problems"] == ["aws.amazon.com/neuroncore 64 of 128"]


def test_lost_cores_are_named_with_the_figures():
    report = nc.inspect_node(node("trn1-0", cores="0"), TYPES, plugins_for("trn1-0")["trn1-0"])
    assert report["problems"] == ["aws.amazon.com/neuroncore 0 of 32"]
    assert nc.taint_value(report) == "neuroncore-0-of-32"


def test_missing_resources_not_ready_and_plugins_are_each_a_problem():
    report = nc.inspect_node(node("trn1-0", ready=False, neuron=None, efa="4"), TYPES, {"neuron-device-plugin": [False]})
    assert report["problems"] == ["NotReady (KubeletNotReady)", "aws.amazon.com/neuron 0 of 16", "vpc.amazonaws.com/efa 4 of 8",
                                  "neuron-device-plugin pod not Ready", "efa-device-plugin pod missing"]


def test_a_type_without_efa_needs_no_efa_plugin():
    report = nc.inspect_node(node("small-0", instance_type="trn1.2xlarge", neuron="1", cores="2", efa=None), TYPES,
                             plugins_for("small-0", efa=False)["small-0"])
    assert report["problems"] == [] and report["device_plugins"] == {"neuron-device-plugin": "Ready"}


def test_an_unknown_type_is_a_problem_not_a_crash():
    report = nc.inspect_node(node("x-0", instance_type="m7i.large"), TYPES, {})
    assert report["problems"] == ["instance type m7i.large is not among the types checked (trn1.2xlarge, trn1.32xlarge, trn2.48xlarge)"]


def test_pool_shortfall_counts_ready_nodes():
    reports = [nc.inspect_node(node("trn1-0"), TYPES, {}), nc.inspect_node(node("trn1-1", ready=False), TYPES, {})]
    assert nc.pool_shortfalls(reports, [{"name": "trn1", "count": 2}, {"name": "other"}]) == ["pool trn1: 1 Ready node(s) of 2"]


def test_exact_count_also_waits_for_the_nodes_a_smaller_pool_loses():
    reports = [nc.inspect_node(node(f"trn1-{i}", ready=i != 2), TYPES, {}) for i in range(3)]
    pools = [{"name": "trn1", "count": 2}]
    assert nc.pool_shortfalls(reports, pools) == []
    assert nc.pool_shortfalls(reports, pools, exact_count=True) == ["pool trn1: 3 node(s), 1 more than 2 (still leaving)"]
    assert nc.pool_shortfalls(reports[:2], pools, exact_count=True) == []
    # Too few Ready nodes is said first, once.
    assert nc.pool_shortfalls(reports[1:], [{"name": "trn1", "count": 2}], exact_count=True) == ["pool trn1: 1 Ready node(s) of 2"]


def test_remediation_patch_cordons_and_taints_once():
    bad = node("trn1-0", cores="0", taints=[{"key": "aws.amazon.com/neuron", "effect": "NoSchedule"}])
    report = nc.inspect_node(bad, TYPES, {})
    patch = nc.remediation_patch(bad, report)
    assert patch == {"spec": {"unschedulable": True, "taints": [
        {"key": "aws.amazon.com/neuron", "effect": "NoSchedule"},
        {"key": nc.UNHEALTHY_TAINT, "value": "neuroncore-0-of-32", "effect": "NoSchedule"}]}}
    done = node("trn1-0", cores="0", unschedulable=True, taints=patch["spec"]["taints"])
    assert nc.remediation_patch(done, nc.inspect_node(done, TYPES, {})) is None


def test_table_has_a_header_and_a_line_per_node():
    lines = nc.table([nc.inspect_node(node("trn1-0", cores="0"), TYPES, {})])
    assert lines[0].split()[:4] == ["node", "pool", "type", "zone"]
    assert lines[1].startswith("trn1-0") and "0/32" in lines[1] and lines[1].endswith("efa-device-plugin pod missing")


class FakeAnswer:
    def __init__(self, data):
        self.data = json.dumps(data).encode()


class FakeCore:
    """list_node / list_namespaced_pod with pages, patch_node recorded."""

    def __init__(self, nodes, pods, page):
        self.nodes, self.pods, self.page, self.patched = nodes, pods, page, []

    def _page(self, items, limit, token):
        start = int(token or 0)
        chunk = items[start:start + limit]
        following = start + limit if start + limit < len(items) else None
        return FakeAnswer({"items": chunk, "metadata": {"continue": str(following) if following else None}})

    def list_node(self, limit=None, _continue=None, _preload_content=True, label_selector=None):
        assert label_selector == "trainium.eks/pool in (trn1)" and not _preload_content
        return self._page(self.nodes, limit, _continue)

    def list_namespaced_pod(self, namespace, limit=None, _continue=None, _preload_content=True, label_selector=None):
        assert namespace == "kube-system" and label_selector == "app.kubernetes.io/name in (efa-device-plugin,neuron-device-plugin)"
        return self._page(self.pods, limit, _continue)

    def patch_node(self, name, body, _preload_content=True):
        self.patched.append((name, body))


def reader_with(nodes, pods, page=500):
    reader = nc.KubeReader.__new__(nc.KubeReader)
    reader.core, reader.page_size, reader.calls = FakeCore(nodes, pods, page), page, {"list_nodes": 0, "list_pods": 0, "patch_node": 0}
    return reader


@pytest.mark.parametrize("count, page, node_calls", [(16, 500, 1), (1000, 500, 2), (1000, 1000, 1)])
def test_nodes_and_pods_are_read_with_paginated_lists(count, page, node_calls):
    names = [f"trn1-{i}" for i in range(count)]
    pods = [pod("neuron-device-plugin", n) for n in names] + [pod("efa-device-plugin", n) for n in names]
    reader = reader_with([node(n) for n in names], pods, page)
    result = nc.check(reader, [{"name": "trn1", "count": count}], TYPES)
    assert result["healthy"] is True and len(result["nodes"]) == count
    assert result["api_calls"] == {"list_nodes": node_calls, "list_pods": -(-2 * count // page), "patch_node": 0}


def test_check_remediates_only_the_nodes_that_lost_devices_and_not_in_check_mode():
    nodes = [node("trn1-0", cores="0"), node("trn1-1", ready=False), node("trn1-2")]
    pods = [pod(p, n["metadata"]["name"]) for n in nodes for p in ("neuron-device-plugin", "efa-device-plugin")]
    planned = nc.check(reader_with(nodes, pods), [{"name": "trn1"}], TYPES, remediate=True, check_mode=True)
    assert planned["changed"] is True and planned["api_calls"]["patch_node"] == 0
    reader = reader_with(nodes, pods)
    result = nc.check(reader, [{"name": "trn1"}], TYPES, remediate=True)
    assert result["bad_nodes"] == ["trn1-0", "trn1-1"] and result["healthy"] is False
    assert [patched[0] for patched in reader.core.patched] == ["trn1-0"]
    assert result["remediated"] == [{"name": "trn1-0", "taint": "trainium.eks/neuron-unhealthy=neuroncore-0-of-32:NoSchedule"}]
