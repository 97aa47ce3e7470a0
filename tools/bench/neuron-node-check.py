# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long trainium.eks.neuron_node_check takes over 16, 128 and 1,000 fake trn1.32xlarge nodes.

    .venv/bin/python tools/bench/neuron-node-check.py [--sizes 16,128,1000] [--runs 3] [--keep]

Against the rehearsal's kube-apiserver (source .rehearsal/env.sh first, or
the script reads it): it creates the nodes (pools bench-a, bench-b, bench-c
so that each size is a set of whole pools), their Ready condition and
figures through the status subresource, and a Ready Neuron and EFA
device-plugin pod per node in the namespace bench-node-check; then it runs
the module's check (the module_utils code the module runs, in this process,
through the kubeconfig of env.sh) and prints, per size, the best and median
seconds of --runs runs and the Kubernetes API calls of one run, and draws
them in .cache/bench/neuron-node-check.svg. The objects
are not kwok's (no kubelet, no heartbeat); they are deleted at the end
unless --keep. Target (issue 10): 1,000 nodes in 5 s or less with 3 list
calls or fewer.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.trainium.eks.plugins.module_utils import trainium_node_check as nc  # noqa: E402

NAMESPACE = "bench-node-check"
LABEL = "trainium.eks/bench"
TYPES = {"trn1.32xlarge": {"neuron_devices": 16, "neuron_cores": 32, "max_efa_interfaces": 8}}
FIGURES = {nc.NEURON: "16", nc.NEURONCORE: "32", nc.EFA: "8", "cpu": "128", "memory": "512Gi", "pods": "110"}


def env_from_rehearsal():
    env_file = pathlib.Path(os.environ.get("TRAINIUM_REHEARSAL_DIR", ROOT / ".rehearsal")) / "env.sh"
    if "KUBECONFIG" not in os.environ and env_file.exists():
        for line in env_file.read_text().splitlines():
            if line.startswith("export KUBECONFIG="):
                os.environ["KUBECONFIG"] = line.split("=", 1)[1].strip().strip("'\"")
    if "KUBECONFIG" not in os.environ:
        sys.exit("no KUBECONFIG: start the rehearsal (make rehearsal-up) and source .rehearsal/env.sh")


def pools_for(sizes):
    """[(pool, first index, last index + 1)] so that the first k pools hold sizes[k-1] nodes."""
    pools, start = [], 0
    for letter, size in zip("abcdefgh", sizes):
        pools.append((f"bench-{letter}", start, size))
        start = size
    return pools


def ready_now():
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now, "lastTransitionTime": now}]


def create_all(core, pools, workers=16):
    from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel

    try:
        core.create_namespace({"metadata": {"name": NAMESPACE, "labels": {LABEL: "true"}}})
    except ApiException as e:
        if e.status != 409:
            raise

    def one(pool, index):
        name = f"{pool}-{index:04d}"
        core.create_node({"metadata": {"name": name, "labels": {
            LABEL: "true", nc.POOL_LABEL: pool, nc.INSTANCE_TYPE_LABEL: "trn1.32xlarge", nc.ZONE_LABEL: "us-west-2b"}}})
        core.patch_node_status(name, {"status": {"capacity": FIGURES, "allocatable": FIGURES, "conditions": ready_now()}})
        for plugin in nc.DEVICE_PLUGINS:
            pod = f"{plugin}-{name}"
            core.create_namespaced_pod(NAMESPACE, {"metadata": {"name": pod, "labels": {"app.kubernetes.io/name": plugin, LABEL: "true"}},
                                                   "spec": {"nodeName": name, "tolerations": [{"operator": "Exists"}],
                                                            "containers": [{"name": "plugin", "image": "registry.invalid/plugin:0"}]}})
            core.patch_namespaced_pod_status(pod, NAMESPACE, {"status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}]}})

    jobs = [(pool, index) for pool, start, end in pools for index in range(start, end)]
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as executor:
        for done, _result in enumerate(executor.map(lambda job: one(*job), jobs), start=1):
            if done % 100 == 0 or done == len(jobs):
                print(f"  created {done}/{len(jobs)} nodes with their plugin pods ({time.monotonic() - started:.0f} s)", flush=True)


def delete_all(core, wait=True):
    """Delete the fake nodes and the namespace (with its pods); with ``wait``, until both are gone."""
    from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel

    # No kubelet confirms the pods' end: delete them at once, then the nodes and the namespace.
    try:
        core.delete_collection_namespaced_pod(NAMESPACE, label_selector=f"{LABEL}=true", grace_period_seconds=0)
    except ApiException as e:
        if e.status != 404:
            raise
    core.delete_collection_node(label_selector=f"{LABEL}=true")
    try:
        core.delete_namespace(NAMESPACE)
    except ApiException as e:
        if e.status != 404:
            raise
    started = time.monotonic()
    while wait:
        nodes = len(core.list_node(label_selector=f"{LABEL}=true").items)
        namespaces = [n for n in core.list_namespace().items if n.metadata.name == NAMESPACE]
        if not nodes and not namespaces:
            return
        print(f"  waiting for the bench objects to be deleted: {nodes} nodes, namespace "
              f"{'terminating' if namespaces else 'gone'} ({time.monotonic() - started:.0f} s)", flush=True)
        time.sleep(3)


def svg_chart(rows, target=5.0):
    """A bar chart of the best seconds per size, with the 5 s target line (an SVG any browser shows)."""
    width, height, left, bottom = 520, 260, 60, 40
    top = max([target] + [row[1] for row in rows]) * 1.1
    bar_width = (width - left - 20) / max(len(rows), 1)

    def y(seconds):
        return height - bottom - (height - bottom - 20) * seconds / top

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
             f'<text x="{left}" y="14">neuron_node_check: best seconds per check (list calls on the bars)</text>',
             f'<line x1="{left}" y1="{y(target):.1f}" x2="{width - 10}" y2="{y(target):.1f}" stroke="red" stroke-dasharray="4"/>',
             f'<text x="{width - 90}" y="{y(target) - 4:.1f}" fill="red">target {target:g} s</text>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="black"/>']
    for index, (size, best, _median, lists, _calls) in enumerate(rows):
        x = left + index * bar_width + bar_width * 0.2
        parts.append(f'<rect x="{x:.1f}" y="{y(best):.1f}" width="{bar_width * 0.6:.1f}" height="{height - bottom - y(best):.1f}" fill="steelblue"/>')
        parts.append(f'<text x="{x:.1f}" y="{y(best) - 4:.1f}">{best:.2f} s, {lists} calls</text>')
        parts.append(f'<text x="{x:.1f}" y="{height - bottom + 16}">{size} nodes</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,128,1000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="leave the fake nodes and pods")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    env_from_rehearsal()
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel

    api = config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
    api.configuration.connection_pool_maxsize = 32
    core = client.CoreV1Api(api)
    pools = pools_for(sizes)
    delete_all(core)  # what an interrupted run left
    print(f"creating {sizes[-1]} fake trn1.32xlarge nodes in pools {', '.join(pool[0] for pool in pools)} ...", flush=True)
    create_all(core, pools)
    rows = []
    try:
        for count, size in enumerate(sizes, start=1):
            wanted = [{"name": pool, "count": end - start} for pool, start, end in pools[:count]]
            times, calls = [], None
            for _run in range(args.runs):
                reader = nc.KubeReader(config.new_client_from_config(config_file=os.environ["KUBECONFIG"]))
                started = time.monotonic()
                result = nc.check(reader, wanted, TYPES, namespace=NAMESPACE)
                times.append(time.monotonic() - started)
                calls = result["api_calls"]
                assert len(result["nodes"]) == size, (len(result["nodes"]), size)
            lists = calls["list_nodes"] + calls["list_pods"]
            # Without a kubelet, the node lifecycle controller marks the fake nodes NotReady after
            # --node-monitor-grace-period; the check reads and judges them the same either way.
            health = "all healthy" if result["healthy"] else f"{len(result['bad_nodes'])} not healthy"
            rows.append((size, min(times), statistics.median(times), lists, calls))
            print(f"{size:5d} nodes: best {min(times):.2f} s, median {statistics.median(times):.2f} s of {args.runs}; "
                  f"{lists} list calls ({calls['list_nodes']} nodes, {calls['list_pods']} pods), {health}", flush=True)
    finally:
        if not args.keep:
            delete_all(core)
    print("\n| nodes | best s | median s | list calls |\n|---:|---:|---:|---:|")
    for size, best, median, lists, _calls in rows:
        print(f"| {size} | {best:.2f} | {median:.2f} | {lists} |")
    chart = ROOT / ".cache" / "bench" / "neuron-node-check.svg"
    chart.parent.mkdir(parents=True, exist_ok=True)
    chart.write_text(svg_chart(rows))
    print(f"\nchart: {chart}")
    target = next((row for row in rows if row[0] == 1000), None)
    if target:
        verdict = "met" if target[1] <= 5 and target[3] <= 3 else "NOT met"
        print(f"\ntarget 1,000 nodes in <= 5 s with <= 3 list calls: {verdict} ({target[1]:.2f} s, {target[3]} calls)")


if __name__ == "__main__":
    main()
