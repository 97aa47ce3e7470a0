# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""What trainium.eks.neuron_node_check decides about Trainium nodes, and the Kubernetes calls it makes.

The decisions are pure functions of plain dicts (the JSON of the Kubernetes
API), so they are unit tested without a cluster. The calls read the nodes
with one paginated list (``limit`` per page, label selector on the pools)
and the device-plugin pods with one more; the JSON is parsed as is, without
the kubernetes client's model objects, which would take seconds for a
thousand nodes.
"""

from __future__ import annotations

import re

from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import POOL_LABEL
from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import logical_neuron_cores, pool_lnc

NEURON = "aws.amazon.com/neuron"
NEURONCORE = "aws.amazon.com/neuroncore"
EFA = "vpc.amazonaws.com/efa"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
UNHEALTHY_TAINT = "trainium.eks/neuron-unhealthy"
# The label app.kubernetes.io/name of each device plugin's pods, and the figure it serves.
DEVICE_PLUGINS = {"neuron-device-plugin": NEURON, "efa-device-plugin": EFA}
PAGE_SIZE = 2500
_LABEL_VALUE_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


class NodeCheckError(Exception):
    """A Kubernetes call failed; the message says which and why."""


def quantity(value):
    """An extended resource count (``"16"``); 0 when missing or not a whole number."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def expected_figures(instance_type, instance_types, lnc=None):
    """(devices, logical cores, EFA interfaces) a node of ``instance_type`` advertises at LNC ``lnc`` (unset: the type's
    default); None when the type is unknown."""
    info = (instance_types or {}).get(instance_type)
    if not info:
        return None
    cores = logical_neuron_cores(info.get("neuron_cores"), pool_lnc({"instance_type": instance_type, "logical_nc_config": lnc}))
    return (int(info.get("neuron_devices") or 0), cores, int(info.get("max_efa_interfaces") or 0))


def plugin_pods_by_node(pods):
    """{node name: {plugin: [ready, ...]}} of the device-plugin pods (label app.kubernetes.io/name)."""
    found = {}
    for pod in pods:
        plugin = ((pod.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/name")
        node = (pod.get("spec") or {}).get("nodeName")
        if plugin not in DEVICE_PLUGINS or not node:
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        found.setdefault(node, {}).setdefault(plugin, []).append(ready)
    return found


def node_ready(node):
    """(ready, reason) from the node's Ready condition."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True", condition.get("reason") or condition.get("status")
    return False, "no Ready condition"


def inspect_node(node, instance_types, plugins_here, require_device_plugins=True, lnc=None):
    """The report of one node: its figures, what it should have (NeuronCores at its pool's LNC), and its problems (one short
    phrase each)."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    spec = node.get("spec") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    instance_type = labels.get(INSTANCE_TYPE_LABEL)
    ready, reason = node_ready(node)
    report = {
        "name": metadata.get("name"),
        "pool": labels.get(POOL_LABEL),
        "instance_type": instance_type,
        "zone": labels.get(ZONE_LABEL),
        "ready": ready,
        "cordoned": bool(spec.get("unschedulable")),
        "neuron": quantity(allocatable.get(NEURON)),
        "neuroncore": quantity(allocatable.get(NEURONCORE)),
        "efa": quantity(allocatable.get(EFA)),
        "taints": [f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}" for t in spec.get("taints") or []],
        "device_plugins": {},
        "problems": [],
        "lost_devices": [],
    }
    problems = report["problems"]
    if not ready:
        problems.append(f"NotReady ({reason})")
    expected = expected_figures(instance_type, instance_types, lnc)
    if expected is None:
        problems.append(f"instance type {instance_type} is not among the types checked ({', '.join(sorted(instance_types or {})) or 'none'})")
        return report
    devices, cores, efa = expected
    report["expected"] = {"neuron": devices, "neuroncore": cores, "efa": efa}
    for key, resource, want in (("neuron", NEURON, devices), ("neuroncore", NEURONCORE, cores), ("efa", EFA, efa)):
        if report[key] < want:
            problems.append(f"{resource} {report[key]} of {want}")
            report["lost_devices"].append(f"{key}-{report[key]}-of-{want}")
    wanted_plugins = [plugin for plugin, resource in DEVICE_PLUGINS.items() if (resource == EFA and efa) or (resource == NEURON and devices)]
    for plugin in wanted_plugins:
        states = (plugins_here or {}).get(plugin, [])
        report["device_plugins"][plugin] = "Ready" if states and all(states) else ("not Ready" if states else "missing")
        if require_device_plugins and report["device_plugins"][plugin] != "Ready":
            problems.append(f"{plugin} pod {report['device_plugins'][plugin]}")
    return report


def pool_shortfalls(reports, pools, exact_count=False):
    """One problem per pool with fewer Ready nodes than its count (pools: [{name, count}]);
    with ``exact_count``, also per pool with more nodes (Ready or not) than its count."""
    problems = []
    for pool in pools:
        want = pool.get("count")
        if want is None:
            continue
        ready = sum(1 for r in reports if r["pool"] == pool["name"] and r["ready"])
        total = sum(1 for r in reports if r["pool"] == pool["name"])
        if ready < int(want):
            problems.append(f"pool {pool['name']}: {ready} Ready node(s) of {want}")
        elif exact_count and total > int(want):
            problems.append(f"pool {pool['name']}: {total} node(s), {total - int(want)} more than {want} (still leaving)")
    return problems


def taint_value(report):
    """The value of the unhealthy taint: what was lost, as a label value (at most 63 characters)."""
    value = _LABEL_VALUE_BAD.sub("-", "_".join(report["lost_devices"]) or "unhealthy").strip("-_.")
    return value[:63].rstrip("-_.") or "unhealthy"


def remediation_patch(node, report):
    """The merge patch that cordons ``node`` and taints it with the reason; None when it already is."""
    spec = node.get("spec") or {}
    taints = [t for t in spec.get("taints") or [] if t.get("key") != UNHEALTHY_TAINT]
    wanted = {"key": UNHEALTHY_TAINT, "value": taint_value(report), "effect": "NoSchedule"}
    current = [t for t in spec.get("taints") or [] if t.get("key") == UNHEALTHY_TAINT]
    if spec.get("unschedulable") and current == [wanted]:
        return None
    return {"spec": {"unschedulable": True, "taints": taints + [wanted]}}


def table(reports):
    """Text table of the node reports, one line per node."""
    header = ("node", "pool", "type", "zone", "ready", "neuron", "cores", "efa", "problems")
    rows = [header]
    for r in reports:
        expected = r.get("expected") or {}
        rows.append((
            r["name"], r["pool"] or "-", r["instance_type"] or "-", r["zone"] or "-",
            ("yes" if r["ready"] else "no") + (" (cordoned)" if r["cordoned"] else ""),
            f"{r['neuron']}/{expected.get('neuron', '?')}", f"{r['neuroncore']}/{expected.get('neuroncore', '?')}",
            f"{r['efa']}/{expected.get('efa', '?')}", "; ".join(r["problems"]) or "ok",
        ))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header) - 1)]
    return ["  ".join(str(cell).ljust(width) for cell, width in zip(row[:-1], widths)) + "  " + str(row[-1]) for row in rows]


def pool_selector(pool_names):
    return f"{POOL_LABEL} in ({','.join(sorted(pool_names))})"


class KubeReader:
    """The Kubernetes calls of the check, through a kubernetes ApiClient; counts them in ``calls``."""

    def __init__(self, api_client, page_size=PAGE_SIZE):
        from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel

        self.core = CoreV1Api(api_client)
        self.page_size = page_size
        self.calls = {"list_nodes": 0, "list_pods": 0, "patch_node": 0}

    def _pages(self, what, call, **kwargs):
        items = []
        for page in kube.list_pages(what.replace("_", " "), call, self.page_size, error=NodeCheckError, **kwargs):
            self.calls[what] += 1
            items.extend(page)
        return items

    def nodes(self, label_selector):
        return self._pages("list_nodes", self.core.list_node, label_selector=label_selector)

    def plugin_pods(self, namespace):
        selector = f"app.kubernetes.io/name in ({','.join(sorted(DEVICE_PLUGINS))})"
        return self._pages("list_pods", self.core.list_namespaced_pod, namespace=namespace, label_selector=selector)

    def patch_node(self, name, patch):
        self.calls["patch_node"] += 1
        kube.call_json(f"patch node {name}", self.core.patch_node, name, patch, error=NodeCheckError)


def check(reader, pools, instance_types, namespace="kube-system", remediate=False, require_device_plugins=True, check_mode=False,
          exact_count=False):
    """Read, judge and (with ``remediate``) cordon and taint; returns the module result without ``failed``."""
    names = [pool["name"] for pool in pools]
    nodes = reader.nodes(pool_selector(names)) if names else []
    plugins = plugin_pods_by_node(reader.plugin_pods(namespace)) if nodes else {}
    lnc = {pool["name"]: pool.get("logical_nc_config") for pool in pools}
    reports = [inspect_node(node, instance_types, plugins.get((node.get("metadata") or {}).get("name")), require_device_plugins,
                            lnc.get(((node.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)))
               for node in sorted(nodes, key=lambda n: (n.get("metadata") or {}).get("name") or "")]
    remediated = []
    if remediate:
        by_name = {(n.get("metadata") or {}).get("name"): n for n in nodes}
        for report in reports:
            if not report["lost_devices"]:
                continue
            patch = remediation_patch(by_name[report["name"]], report)
            if patch is None:
                continue
            if not check_mode:
                reader.patch_node(report["name"], patch)
            remediated.append({"name": report["name"], "taint": f"{UNHEALTHY_TAINT}={taint_value(report)}:NoSchedule"})
    bad = [report for report in reports if report["problems"]]
    pool_problems = pool_shortfalls(reports, pools, exact_count)
    return {
        "changed": bool(remediated),
        "nodes": reports,
        "bad_nodes": [report["name"] for report in bad],
        "pool_problems": pool_problems,
        "remediated": remediated,
        "table": table(bad) if bad else [],
        "api_calls": dict(reader.calls),
        "healthy": not bad and not pool_problems,
    }
