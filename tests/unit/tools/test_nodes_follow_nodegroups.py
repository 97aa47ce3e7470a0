# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's kwok nodes follow their node groups (tools/rehearsal/nodes.py): a pool whose node group
exists has as many nodes as its desiredSize; without one (or while it is deleted) the inventory's count holds."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re

import boto3
import pytest
from botocore.stub import Stubber

_PATH = pathlib.Path(__file__).resolve().parents[3] / "tools" / "rehearsal" / "nodes.py"
_SPEC = importlib.util.spec_from_file_location("rehearsal_nodes_follow", _PATH)
nodes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(nodes)

TRN1 = {"vcpus": 128, "memory_mib": 524288, "neuron_devices": 16, "neuron_cores": 32, "max_efa_interfaces": 8}
CPU = {"vcpus": 2, "memory_mib": 8192}


def _planned():
    return [
        {"pool": {"name": "trn1", "instance_type": "trn1.32xlarge", "count": 2}, "info": TRN1, "zones": ["us-west-2b"], "region": "us-west-2"},
        {"pool": {"name": "system", "instance_type": "m7i.large", "count": 2}, "info": CPU, "zones": ["us-west-2b", "us-west-2d"],
         "region": "us-west-2"},
    ]


def _eks():
    return boto3.session.Session(region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x").client("eks")


def _nodegroup(name, status, desired):
    return {"nodegroup": {"nodegroupName": name, "clusterName": "trn", "status": status,
                          "scalingConfig": {"minSize": 0, "maxSize": max(desired, 1), "desiredSize": desired}}}


def test_sizes_come_from_the_node_groups_that_exist_and_are_not_being_deleted():
    eks = _eks()
    with Stubber(eks) as stub:
        stub.add_response("list_clusters", {"clusters": ["other", "trn"]}, {})
        stub.add_response("list_nodegroups", {"nodegroups": ["trn-trn1", "trn-system", "trn-other"]}, {"clusterName": "trn"})
        stub.add_response("describe_nodegroup", _nodegroup("trn-trn1", "UPDATING", 3), {"clusterName": "trn", "nodegroupName": "trn-trn1"})
        stub.add_response("describe_nodegroup", _nodegroup("trn-system", "DELETING", 2), {"clusterName": "trn", "nodegroupName": "trn-system"})
        sizes = nodes.nodegroup_sizes(eks, "trn", ["trn1", "system"])
    assert sizes == {"trn1": 3}
    planned = nodes.sized(_planned(), sizes)
    assert [item["pool"]["count"] for item in planned] == [3, 2]
    assert [item["pool"]["count"] for item in _planned()] == [2, 2]  # the plan itself is not changed
    names = sorted(nodes.node_objects(planned, "trn", set()))
    assert names == ["system-0", "system-1", "trn1-0", "trn1-1", "trn1-2"]


def test_no_cluster_means_the_inventory_counts():
    eks = _eks()
    with Stubber(eks) as stub:
        stub.add_response("list_clusters", {"clusters": ["other"]}, {})
        assert nodes.nodegroup_sizes(eks, "trn", ["trn1"]) == {}
        stub.add_response("list_clusters", {"clusters": ["trn"]}, {})
        stub.add_client_error("list_nodegroups", "ResourceNotFoundException", "No cluster found for name: trn.", 404)
        assert nodes.nodegroup_sizes(eks, "trn", ["trn1"]) == {}


def test_a_node_group_parked_at_zero_has_no_nodes():
    eks = _eks()
    with Stubber(eks) as stub:
        stub.add_response("list_clusters", {"clusters": ["trn"]}, {})
        stub.add_response("list_nodegroups", {"nodegroups": ["trn-trn1"]}, {"clusterName": "trn"})
        stub.add_response("describe_nodegroup", _nodegroup("trn-trn1", "ACTIVE", 0), {"clusterName": "trn", "nodegroupName": "trn-trn1"})
        sizes = nodes.nodegroup_sizes(eks, "trn", ["trn1", "system"])
    assert sizes == {"trn1": 0}
    assert sorted(nodes.node_objects(nodes.sized(_planned(), sizes), "trn", set())) == ["system-0", "system-1"]


class _Kubectl:
    """Records the calls; the node listing is what an earlier apply left."""

    def __init__(self, existing):
        self.existing = existing
        self.calls = []

    def __call__(self, *args, stdin=None):
        self.calls.append((args, stdin))
        if args[:2] == ("get", "nodes"):
            return json.dumps({"items": self.existing})
        return ""


def test_a_smaller_node_group_deletes_the_nodes_past_its_size():
    kubectl = _Kubectl([{"metadata": {"name": f"trn1-{i}", "labels": {nodes.POOL_LABEL: "trn1"}}} for i in range(3)])
    line = nodes.apply_nodes(kubectl, nodes.sized(_planned()[:1], {"trn1": 1}), "trn")
    assert line.endswith("1 applied, deleted trn1-1 trn1-2"), line
    assert (("delete", "node", "trn1-1", "trn1-2"), None) in kubectl.calls
    applied = json.loads(next(stdin for args, stdin in kubectl.calls if args[0] == "apply" and "--subresource=status" not in args))
    assert [item["metadata"]["name"] for item in applied["items"]] == ["trn1-0"]


def test_the_follower_dials_only_a_loopback_endpoint():
    for endpoint in ("http://127.0.0.1:5000", "http://127.3.2.1:5000/", "http://localhost:5000", "http://[::1]:5000"):
        assert nodes.loopback_endpoint(endpoint) == endpoint
    for endpoint in ("http://10.96.0.1:5000", "https://ec2.us-west-2.amazonaws.com", "http://192.168.1.5", "not a url"):
        with pytest.raises(SystemExit, match=f"got {re.escape(repr(endpoint))}; allowed: the rehearsal's moto on a loopback"):
            nodes.loopback_endpoint(endpoint)
