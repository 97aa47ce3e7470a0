# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's kwok nodes (tools/rehearsal/nodes.py) for the system pool: CPU nodes without
Neuron or EFA resources, spread over the cluster's zones, next to the Trainium pools' nodes."""

from __future__ import annotations

import copy
import importlib.util
import pathlib

import pytest
from botocore.stub import Stubber

_PATH = pathlib.Path(__file__).resolve().parents[3] / "tools" / "rehearsal" / "nodes.py"
_SPEC = importlib.util.spec_from_file_location("rehearsal_nodes", _PATH)
nodes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(nodes)

DEVICE_RESOURCES = ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "vpc.amazonaws.com/efa")

# As trainium_facts.summarize_instance_type gives them.
M7I_LARGE = {
    "instance_type": "m7i.large", "neuron_device_name": None, "neuron_devices": 0, "neuron_cores": 0, "neuron_cores_per_device": 0,
    "neuron_device_memory_mib": 0, "efa_supported": False, "max_efa_interfaces": 0, "network_cards": 1, "max_network_interfaces": 3,
    "vcpus": 2, "memory_mib": 8192,
}
TRN1_32XL = {
    "instance_type": "trn1.32xlarge", "neuron_device_name": "Trainium", "neuron_devices": 16, "neuron_cores": 32, "neuron_cores_per_device": 2,
    "neuron_device_memory_mib": 524288, "efa_supported": True, "max_efa_interfaces": 8, "network_cards": 8, "max_network_interfaces": 40,
    "vcpus": 128, "memory_mib": 524288,
}


def _system_item(count=2, zones=("us-west-2b", "us-west-2d")):
    return {"pool": {"name": "system", "instance_type": "m7i.large", "count": count}, "info": copy.deepcopy(M7I_LARGE),
            "zones": list(zones), "region": "us-west-2"}


def _trn_item():
    pool = {"name": "trn1", "instance_type": "trn1.32xlarge", "count": 2, "labels": {"team": "ml"},
            "taints": [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}]}
    return {"pool": pool, "info": copy.deepcopy(TRN1_32XL), "zones": ["us-west-2b"], "region": "us-west-2"}


def test_resources_of_a_cpu_type_have_no_device_resources():
    assert nodes.resources(M7I_LARGE) == {"cpu": "2", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"}


def test_resources_of_a_type_without_neuron_fields_at_all():
    assert nodes.resources({"vcpus": 4, "memory_mib": 16000}) == {"cpu": "4", "memory": "16000Mi", "pods": "110", "ephemeral-storage": "100Gi"}


def test_resources_of_a_trainium_type_keep_the_devices():
    figures = nodes.resources(TRN1_32XL)
    assert {name: figures[name] for name in DEVICE_RESOURCES} == {
        "aws.amazon.com/neuron": "16", "aws.amazon.com/neuroncore": "32", "vpc.amazonaws.com/efa": "8"}
    assert figures["memory"] == "512Gi"


def test_trn2_nodes_advertise_the_logical_cores_of_their_pool():
    """The stand-in device plugin counts as Neuron's does: 128 physical cores are 64 at the trn2 default LNC=2."""
    trn2 = dict(TRN1_32XL, instance_type="trn2.48xlarge", neuron_cores=128, neuron_cores_per_device=8, max_efa_interfaces=16)
    assert nodes.resources(trn2, 2)["aws.amazon.com/neuroncore"] == "64"
    assert nodes.resources(trn2, 1)["aws.amazon.com/neuroncore"] == "128"
    item = {"pool": {"name": "trn2", "instance_type": "trn2.48xlarge", "count": 1}, "info": trn2, "zones": ["us-west-2d"], "region": "us-west-2"}
    (node,) = nodes.node_objects([item], "trn-bert", set()).values()
    assert node["status"]["allocatable"]["aws.amazon.com/neuroncore"] == "64"
    item["pool"]["logical_nc_config"] = 1
    (node,) = nodes.node_objects([item], "trn-bert", set()).values()
    assert node["status"]["allocatable"]["aws.amazon.com/neuroncore"] == "128"


def test_system_nodes_alternate_over_the_cluster_zones():
    made = nodes.node_objects([_system_item(count=3)], "trn-rehearsal", set())
    assert list(made) == ["system-0", "system-1", "system-2"]
    zones = [made[name]["metadata"]["labels"]["topology.kubernetes.io/zone"] for name in made]
    assert zones == ["us-west-2b", "us-west-2d", "us-west-2b"]


def test_system_nodes_look_like_nodes_of_the_system_node_group():
    made = nodes.node_objects([_system_item()], "trn-rehearsal", set())
    node = made["system-1"]
    assert node["metadata"]["labels"] == {
        "node.kubernetes.io/instance-type": "m7i.large",
        "topology.kubernetes.io/region": "us-west-2",
        "topology.kubernetes.io/zone": "us-west-2d",
        "eks.amazonaws.com/nodegroup": "trn-rehearsal-system",
        "trainium.eks/pool": "system",
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": "system-1",
        "type": "kwok",
    }
    assert node["spec"] == {}
    # allocatable: the capacity less the kubelet's reservation (EKS AMI: 70m and 1,465 MiB at 110 pods) and eviction (100 MiB)
    assert node["status"]["allocatable"] == dict(node["status"]["capacity"], cpu="1930m", memory="6627Mi")
    assert not set(DEVICE_RESOURCES) & set(node["status"]["capacity"])
    assert node["status"]["capacity"]["cpu"] == "2"


def test_a_trainium_pool_stays_in_its_one_zone_beside_the_system_pool():
    made = nodes.node_objects([_trn_item(), _system_item()], "trn-rehearsal", set())
    assert sorted(made) == ["system-0", "system-1", "trn1-0", "trn1-1"]
    assert {made[n]["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in ("trn1-0", "trn1-1")} == {"us-west-2b"}
    assert made["trn1-0"]["status"]["capacity"]["aws.amazon.com/neuron"] == "16"
    assert made["trn1-0"]["spec"]["taints"] == [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}]
    assert made["trn1-0"]["metadata"]["labels"]["team"] == "ml"
    assert "taints" not in made["system-0"]["spec"]


def test_a_single_zone_puts_every_system_node_in_it():
    made = nodes.node_objects([_system_item(zones=["us-west-2a"])], "c", set())
    assert {node["metadata"]["labels"]["topology.kubernetes.io/zone"] for node in made.values()} == {"us-west-2a"}


# --- plan_pools: the zones come from the collection's placement, against a stubbed EC2

def _instance_type(name, vcpus, memory_mib, neuron=None, efa=0):
    entry = {"InstanceType": name, "VCpuInfo": {"DefaultVCpus": vcpus}, "MemoryInfo": {"SizeInMiB": memory_mib},
             "NetworkInfo": {"MaximumNetworkInterfaces": 3, "MaximumNetworkCards": max(efa, 1), "EfaSupported": bool(efa)}}
    if efa:
        entry["NetworkInfo"]["EfaInfo"] = {"MaximumEfaInterfaces": efa}
    if neuron:
        entry["NeuronInfo"] = {"NeuronDevices": [{"Count": neuron, "Name": "Trainium", "CoreInfo": {"Count": 2, "Version": 2},
                                                  "MemoryInfo": {"SizeInMiB": 32768}}]}
    return entry


ZONES = [
    {"ZoneName": name, "ZoneId": zone_id, "ZoneType": "availability-zone", "State": "available", "RegionName": "us-west-2"}
    for name, zone_id in (("us-west-2a", "usw2-az2"), ("us-west-2b", "usw2-az1"), ("us-west-2c", "usw2-az3"), ("us-west-2d", "usw2-az4"))
]
OFFERINGS = [
    {"InstanceType": "trn1.32xlarge", "LocationType": "availability-zone", "Location": "us-west-2d"},
    *({"InstanceType": "m7i.large", "LocationType": "availability-zone", "Location": zone["ZoneName"]} for zone in ZONES),
]
TYPES = [_instance_type("trn1.32xlarge", 128, 524288, neuron=16, efa=8), _instance_type("m7i.large", 2, 8192)]


@pytest.fixture
def stubbed_ec2(monkeypatch, boto3_session):
    client = boto3_session.client("ec2", endpoint_url="http://127.0.0.1:1")
    with Stubber(client) as stubber:
        monkeypatch.setattr(nodes, "ec2_client", lambda region: client)
        yield stubber
        stubber.assert_no_pending_responses()


def _stub(stubber, types):
    filters = {"Filters": [{"Name": "instance-type", "Values": types}]}
    stubber.add_response("describe_instance_types", {"InstanceTypes": [t for t in TYPES if t["InstanceType"] in types]}, filters)
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": [o for o in OFFERINGS if o["InstanceType"] in types]},
                         dict(filters, LocationType="availability-zone"))
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": ZONES},
                         {"Filters": [{"Name": "zone-type", "Values": ["availability-zone"]}]})


VARIABLES = {
    "trainium_cluster_name": "trn-rehearsal",
    "trainium_region": "us-west-2",
    "trainium_node_pools": [{"name": "trn1", "instance_type": "trn1.32xlarge", "count": 2}],
}


def test_plan_adds_the_system_pool_over_the_cluster_zones(stubbed_ec2):
    _stub(stubbed_ec2, ["trn1.32xlarge", "m7i.large"])
    planned = nodes.plan_pools(dict(VARIABLES))
    assert [(item["pool"]["name"], item["zones"]) for item in planned] == [
        ("trn1", ["us-west-2d"]),
        # The Trainium pool's zone, then the next available zone of the region: the cluster's two zones.
        ("system", ["us-west-2d", "us-west-2a"]),
    ]
    system = planned[1]
    assert system["pool"] == {"name": "system", "instance_type": "m7i.large", "count": 2}
    assert system["info"]["vcpus"] == 2 and system["info"]["neuron_devices"] == 0
    made = nodes.node_objects(planned, "trn-rehearsal", set())
    assert sorted(made) == ["system-0", "system-1", "trn1-0", "trn1-1"]
    assert [made[f"system-{i}"]["metadata"]["labels"]["topology.kubernetes.io/zone"] for i in range(2)] == ["us-west-2d", "us-west-2a"]


def test_plan_follows_the_system_pool_variable(stubbed_ec2):
    _stub(stubbed_ec2, ["trn1.32xlarge", "m7i.large"])
    planned = nodes.plan_pools(dict(VARIABLES, trainium_system_node_pool={"count": 3}))
    assert planned[1]["pool"]["count"] == 3


def test_plan_without_the_system_pool_when_disabled(stubbed_ec2):
    _stub(stubbed_ec2, ["trn1.32xlarge"])
    planned = nodes.plan_pools(dict(VARIABLES, trainium_system_node_pool={"enabled": False}))
    assert [item["pool"]["name"] for item in planned] == ["trn1"]
    assert not any(name.startswith("system-") for name in nodes.node_objects(planned, "trn-rehearsal", set()))


def test_kube_reserved_follows_the_eks_ami_formula():
    """6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest; 11 MiB a pod + 255 MiB."""
    assert nodes.kube_reserved(1) == (60, 1465)
    assert nodes.kube_reserved(2) == (70, 1465)
    assert nodes.kube_reserved(4) == (80, 1465)
    assert nodes.kube_reserved(128) == (390, 1465)
    assert nodes.kube_reserved(192, max_pods=250) == (550, 3005)
    assert nodes.quantity_cpu(128000) == "128" and nodes.quantity_cpu(127610) == "127610m"
    assert nodes.quantity_mib(524288) == "512Gi" and nodes.quantity_mib(522723) == "522723Mi"
