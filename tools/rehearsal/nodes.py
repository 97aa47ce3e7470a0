# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Create the rehearsal's fake Trainium nodes (kwok) from the inventory's node pools.

    .venv/bin/python tools/rehearsal/nodes.py [INVENTORY-DIR] [--dry-run] [--follow SECONDS --heartbeat FILE]

For every pool in ``trainium_node_pools`` this makes ``count`` Node objects
``<pool>-<index>`` that look like EKS managed-node-group nodes of that type:
instance type, zone and node group labels, the pool's labels and taints, and
capacity/allocatable as the device plugins of a real node report them
(``aws.amazon.com/neuron``, ``aws.amazon.com/neuroncore``,
``vpc.amazonaws.com/efa``, cpu, memory; allocatable cpu and memory less what
the EKS AMI's kubelet reserves, ``kube_reserved``). The figures and the zone come from
the collection's own code (``gather_capacity`` against the rehearsal's EC2
endpoint, then ``place_node_pools``), so they match what the AWS side says.

Every node's address is loopback: InternalIP 127.0.0.1 (and its name as
Hostname), with kwok's port (``TRAINIUM_KWOK_PORT``, default 10247) as its
kubelet port, so kube-apiserver (which dials InternalIP only) reaches kwok's
kubelet API for pod logs and never a private-range address.

Node groups: when the rehearsal's EKS (moto) holds the pool's node group
``<cluster>-<pool>`` (in any state but DELETING), the pool has as many nodes as
the node group's ``desiredSize``, as a managed node group's Auto Scaling group
would launch, so that ``playbooks/scale.yml`` sees nodes join and leave; without
a node group the inventory's ``count`` holds (the rehearsal has its nodes
before any infrastructure run, so that the platform roles can be tried alone).
``--follow`` keeps doing that: it polls the node groups every SECONDS, applies
the nodes again only when a pool's size changed, and touches ``--heartbeat``
on every poll (the rehearsal's health check of the follower).

Idempotent: nodes are applied with server-side apply (object, then the status
subresource); kwok nodes that belong to no pool any more are deleted. A node
that ``fault.sh node-lose-neuron`` marked keeps reporting 0 Neuron devices.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import urllib.parse

import boto3
import botocore.exceptions
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.trainium.eks.plugins.module_utils.trainium_capacity import gather_capacity  # noqa: E402
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import (  # noqa: E402
    POOL_LABEL,
    place_node_pools,
    system_pool,
)
from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import logical_neuron_cores, pool_lnc  # noqa: E402

FIELD_MANAGER = "rehearsal-nodes"
KWOK_LABEL = ("type", "kwok")
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# Set by fault.sh node-lose-neuron; the value holds the figures to restore.
NEURON_LOST = "rehearsal.trainium.eks/neuron-lost"
NEURON_RESOURCES = ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore")
MAX_PODS = 110
NODE_IP = "127.0.0.1"
# What the EKS AMI's kubelet keeps back from allocatable (kube-reserved, as nodeadm and the AL2 bootstrap compute it):
# CPU 6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of every further one; memory
# 11 MiB per pod the node may run plus 255 MiB; and the hard eviction threshold memory.available<100Mi.
EVICTION_MEMORY_MIB = 100


def kube_reserved(vcpus, max_pods=MAX_PODS):
    """(millicores, MiB) the kubelet reserves on an EKS node of ``vcpus`` that runs at most ``max_pods`` pods."""
    tenths = sum(600 if core == 0 else 100 if core == 1 else 50 if core < 4 else 25 for core in range(vcpus))
    return tenths // 10, 11 * max_pods + 255


def load_variables(inventory):
    """The inventory's group_vars/all (every *.yml in it), Jinja-valued keys left out."""
    group_vars = pathlib.Path(inventory) / "group_vars" / "all"
    files = sorted(group_vars.glob("*.yml")) + sorted(group_vars.glob("*.yaml")) if group_vars.is_dir() else [group_vars.with_suffix(".yml")]
    variables = {}
    for path in files:
        variables.update(yaml.safe_load(path.read_text()) or {})
    return {key: value for key, value in variables.items() if not (isinstance(value, str) and "{{" in value)}


def loopback_endpoint(endpoint):
    """The endpoint when its host is loopback (127.0.0.0/8, ::1 or localhost); else exit: the rehearsal dials nothing else."""
    host = urllib.parse.urlsplit(endpoint).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        sys.exit(f"nodes.py: TRAINIUM_AWS_ENDPOINT_URL: got {endpoint!r}; allowed: the rehearsal's moto on a loopback address "
                 "(http://127.0.0.1:<port>)")
    return endpoint


def aws_client(service, region):
    endpoint = os.environ.get("TRAINIUM_AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        sys.exit("nodes.py: TRAINIUM_AWS_ENDPOINT_URL is not set; source .rehearsal/env.sh first")
    return boto3.session.Session(region_name=region).client(service, endpoint_url=loopback_endpoint(endpoint))


def ec2_client(region):
    return aws_client("ec2", region)


def nodegroup_sizes(eks, cluster, pool_names):
    """Pool name -> ``desiredSize`` of its node group ``<cluster>-<pool>``, for the node groups that exist and are not being deleted."""
    # moto answers ListNodegroups of a cluster it does not hold with a 500, not ResourceNotFoundException.
    clusters = [name for page in eks.get_paginator("list_clusters").paginate() for name in page.get("clusters", [])]
    if cluster not in clusters:
        return {}
    try:
        existing = set()
        for page in eks.get_paginator("list_nodegroups").paginate(clusterName=cluster):
            existing.update(page.get("nodegroups", []))
    except eks.exceptions.ResourceNotFoundException:
        return {}
    sizes = {}
    for name in pool_names:
        nodegroup_name = f"{cluster}-{name}"
        if nodegroup_name not in existing:
            continue
        try:
            nodegroup = eks.describe_nodegroup(clusterName=cluster, nodegroupName=nodegroup_name)["nodegroup"]
        except eks.exceptions.ResourceNotFoundException:
            continue
        if nodegroup.get("status") != "DELETING":
            sizes[name] = int((nodegroup.get("scalingConfig") or {}).get("desiredSize") or 0)
    return sizes


def sized(planned, sizes):
    """``planned`` with each pool's count replaced by its node group's size where ``sizes`` has one."""
    return [dict(item, pool=dict(item["pool"], count=sizes[item["pool"]["name"]])) if item["pool"]["name"] in sizes else item
            for item in planned]


def plan_pools(variables):
    """Every pool with its instance figures and zones, as the collection computes them.

    The Trainium pools sit in the zone preflight chooses; the system pool
    (trainium_system_node_pool, unless disabled) spreads over the cluster's
    zones, as a managed node group over its subnets does.
    """
    pools = variables.get("trainium_node_pools") or []
    region = variables["trainium_region"]
    system = system_pool(variables.get("trainium_system_node_pool"))
    types = [p["instance_type"] for p in pools] + ([system["instance_type"]] if system["enabled"] else [])
    capacity = gather_capacity(ec2_client(region), types)
    placement = place_node_pools(pools, capacity, region)
    if placement["errors"]:
        sys.exit("nodes.py: the node pools cannot be placed:\n" + json.dumps(placement["errors"], indent=2))
    zones = {p["name"]: p["availability_zone"] for p in placement["node_pools"]}
    planned = []
    for pool in pools:
        info = capacity["instance_types"][pool["instance_type"]]
        planned.append({"pool": pool, "info": info, "zones": [zones[pool["name"]]], "region": region})
    if system["enabled"]:
        planned.append({
            "pool": {"name": "system", "instance_type": system["instance_type"], "count": system["count"]},
            "info": capacity["instance_types"][system["instance_type"]],
            "zones": placement["cluster_availability_zones"],
            "region": region,
        })
    return planned


def resources(info, lnc=1):
    """What the node reports: the device plugins add Neuron and EFA only where the type has them, and count
    NeuronCores as the node's Logical NeuronCore configuration groups them (64 on a trn2.48xlarge at LNC=2)."""
    devices = {
        "aws.amazon.com/neuron": str(info.get("neuron_devices") or 0),
        "aws.amazon.com/neuroncore": str(logical_neuron_cores(info.get("neuron_cores"), lnc)),
        "vpc.amazonaws.com/efa": str(info.get("max_efa_interfaces") or 0),
    }
    return {
        **{name: value for name, value in devices.items() if value != "0"},
        "cpu": str(info["vcpus"]),
        # MiB, written the way the API server stores the quantity (524288Mi
        # comes back as 512Gi), so that a second apply changes nothing.
        "memory": quantity_mib(info["memory_mib"]),
        "pods": str(MAX_PODS),
        "ephemeral-storage": "100Gi",
    }


def quantity_cpu(millicores):
    """Millicores the way the API server stores them (128000m comes back as 128)."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def quantity_mib(mib):
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def allocatable(figures, info):
    """What the scheduler may hand out: the capacity less the kubelet's reservation and the eviction threshold."""
    cpu, memory = kube_reserved(int(info["vcpus"]))
    return dict(figures, cpu=quantity_cpu(int(info["vcpus"]) * 1000 - cpu),
                memory=quantity_mib(int(info["memory_mib"]) - memory - EVICTION_MEMORY_MIB))


def taint(spec):
    out = {"key": spec["key"], "effect": spec.get("effect", "NoSchedule")}
    if spec.get("value") is not None:
        out["value"] = str(spec["value"])
    return out


def kubelet_port():
    return int(os.environ.get("TRAINIUM_KWOK_PORT") or 10247)


def node_objects(planned, cluster, lost):
    """The Node objects (metadata+spec) and their status, by name."""
    nodes = {}
    for item in planned:
        pool, info = item["pool"], item["info"]
        labels = {str(k): str(v) for k, v in (pool.get("labels") or {}).items()}
        labels.update({
            "node.kubernetes.io/instance-type": pool["instance_type"],
            "topology.kubernetes.io/region": item["region"],
            "eks.amazonaws.com/nodegroup": f"{cluster}-{pool['name']}",
            # The node group of the pool (trn_nodegroup) labels its nodes with the pool's name.
            POOL_LABEL: pool["name"],
            "eks.amazonaws.com/capacityType": pool.get("capacity_type", "ON_DEMAND"),
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            KWOK_LABEL[0]: KWOK_LABEL[1],
        })
        for index in range(int(pool["count"])):
            name = f"{pool['name']}-{index}"
            zone = item["zones"][index % len(item["zones"])]
            # The node's LNC: its launch template's config file, else the AMI's default for the type.
            figures = resources(info, pool_lnc(pool))
            if name in lost:
                figures.update({resource: "0" for resource in NEURON_RESOURCES})
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": dict(labels, **{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}),
                    "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"},
                },
                "spec": {},
                "status": {
                    "capacity": figures,
                    "allocatable": allocatable(figures, info),
                    "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": name}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port()}},
                },
            }
            if pool.get("taints"):
                node["spec"]["taints"] = [taint(t) for t in pool["taints"]]
            nodes[name] = node
    return nodes


class KubectlError(RuntimeError):
    """A kubectl call that failed."""


class Kubectl:
    def __init__(self):
        state = pathlib.Path(os.environ.get("TRAINIUM_REHEARSAL_DIR", ROOT / ".rehearsal"))
        local = state / "bin" / "kubectl"
        self.binary = str(local) if local.exists() else shutil.which("kubectl")
        if not self.binary:
            sys.exit("nodes.py: no kubectl in $TRAINIUM_REHEARSAL_DIR/bin or on PATH")

    def __call__(self, *args, stdin=None):
        completed = subprocess.run([self.binary, *args], input=stdin, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise KubectlError(f"nodes.py: kubectl {' '.join(args)} failed:\n{completed.stderr}")
        return completed.stdout


def apply_nodes(kubectl, planned, cluster):
    """Apply the pools' nodes (object, then status), delete the kwok nodes of no pool; returns the summary line."""
    existing = json.loads(kubectl("get", "nodes", "-l", "=".join(KWOK_LABEL), "-o", "json"))["items"]
    lost = {n["metadata"]["name"] for n in existing if NEURON_LOST in (n["metadata"].get("annotations") or {})}
    nodes = node_objects(planned, cluster, lost)
    apply = ("apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}", "-f", "-")
    if nodes:
        listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(nodes.values())})
        kubectl(*apply, stdin=listing)
        statuses = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": node["status"]} for name, node in nodes.items()]
        kubectl(*apply[:-2], "--subresource=status", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": statuses}))
    stale = sorted(n["metadata"]["name"] for n in existing if n["metadata"]["name"] not in nodes)
    if stale:
        kubectl("delete", "node", *stale)
    summary = ", ".join(f"{item['pool']['name']}: {item['pool']['count']} x {item['pool']['instance_type']} in {'/'.join(item['zones'])}" for item in planned)
    return f"kwok nodes: {summary}; {len(nodes)} applied{', deleted ' + ' '.join(stale) if stale else ''}"


def follow(kubectl, planned, cluster, eks, interval, heartbeat):
    """Keep the pools' nodes at their node groups' sizes until stopped (SIGTERM)."""
    names = [item["pool"]["name"] for item in planned]
    # What `up` applied just before: no second apply of the same nodes.
    existing = json.loads(kubectl("get", "nodes", "-l", "=".join(KWOK_LABEL), "-o", "json"))["items"]
    pools = [(n["metadata"].get("labels") or {}).get(POOL_LABEL) for n in existing]
    applied = {name: pools.count(name) for name in names}
    while True:
        try:
            sizes = nodegroup_sizes(eks, cluster, names)
            wanted = sized(planned, sizes)
            counts = {item["pool"]["name"]: int(item["pool"]["count"]) for item in wanted}
            if counts != applied:
                print(f"node groups: {', '.join(f'{k} {applied.get(k)} -> {v}' for k, v in counts.items() if applied.get(k) != v)}", flush=True)
                print(apply_nodes(kubectl, wanted, cluster), flush=True)
                applied = counts
        except (KubectlError, botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
            # moto or the API server restarting, a test resetting moto: try again at the next poll.
            print(f"nodes.py: {error}", flush=True)
        pathlib.Path(heartbeat).touch()
        time.sleep(interval)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("inventory", nargs="?", default=str(ROOT / "inventories" / "local"))
    parser.add_argument("--dry-run", action="store_true", help="print the nodes as JSON and apply nothing")
    parser.add_argument("--follow", type=float, metavar="SECONDS", help="keep following the node groups' sizes, polling every SECONDS")
    parser.add_argument("--heartbeat", help="with --follow: a file touched on every poll")
    args = parser.parse_args()
    if args.follow is not None and (args.follow <= 0 or not args.heartbeat):
        parser.error("--follow needs a positive number of seconds and --heartbeat FILE")

    variables = load_variables(args.inventory)
    cluster = variables["trainium_cluster_name"]
    planned = plan_pools(variables)
    if args.dry_run:
        print(json.dumps(list(node_objects(planned, cluster, set()).values()), indent=2))
        return

    kubectl = Kubectl()
    eks = aws_client("eks", variables["trainium_region"])
    try:
        if args.follow is not None:
            follow(kubectl, planned, cluster, eks, args.follow, args.heartbeat)
        sizes = nodegroup_sizes(eks, cluster, [item["pool"]["name"] for item in planned])
        print(apply_nodes(kubectl, sized(planned, sizes), cluster))
    except KubectlError as error:
        sys.exit(str(error))


if __name__ == "__main__":
    main()
