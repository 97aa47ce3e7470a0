# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One source per rule: the FSx capacity rule, the capacity types and the
instance-type pattern are spelled once (trainium_limits) and every layer that
checks them (the deployment model, the role validation, the fsx_lustre
module) gives the same verdict."""

from __future__ import annotations

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td
from ansible_collections.trainium.eks.plugins.module_utils import trainium_fsx as fsx
from ansible_collections.trainium.eks.plugins.module_utils import trainium_limits as limits
from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv

CAPACITIES = [1200, 2400, 4800, 2400 * 1000, 0, 1199, 1201, 1800, 3600, 2400 * 1001, -2400, True, "2400", None, 2400.0]


@pytest.mark.parametrize("capacity", CAPACITIES, ids=repr)
def test_every_layer_gives_the_same_verdict_on_fsx_capacity(capacity):
    expected = limits.fsx_capacity_ok(capacity)
    assert expected == (capacity in (1200, 2400, 4800, 2400 * 1000) and isinstance(capacity, int) and not isinstance(capacity, bool))
    storage = {"deployment_type": "PERSISTENT_1", "storage_capacity_gib": capacity, "per_unit_storage_throughput": 200}
    model_lines = [line for line in td.deployment_errors({"trainium_storage": storage}) if "storage_capacity_gib" in line]
    assert (not model_lines) == expected, model_lines
    role = tv.fsx_lustre_problems({"fsx_lustre_storage_capacity_gib": capacity, "fsx_lustre_deployment_type": "PERSISTENT_1",
                                   "fsx_lustre_per_unit_storage_throughput": 200, "fsx_lustre_file_system_type_version": "2.15"})
    role_lines = [line for line in role if line.startswith("fsx_lustre_storage_capacity_gib:")]
    assert (not role_lines) == expected, role_lines
    if isinstance(capacity, int) and not isinstance(capacity, bool):
        params = {"name": "fs", "state": "present", "deployment_type": "PERSISTENT_1", "storage_capacity": capacity,
                  "per_unit_storage_throughput": 200}
        module_lines = [line for line in fsx.validation_errors(params) if line.startswith("storage_capacity:")]
        assert (not module_lines) == expected, module_lines
    for lines in (model_lines, role_lines):
        assert all(limits.FSX_CAPACITY_RULE in line for line in lines)


def test_constants_are_one_object_in_every_layer():
    assert common.CAPACITY_TYPES is limits.CAPACITY_TYPES is td.CAPACITY_TYPES
    assert common.FSX_DEPLOYMENT_TYPES is limits.FSX_DEPLOYMENT_TYPES is td.FSX_DEPLOYMENT_TYPES is fsx.DEPLOYMENT_TYPES
    assert common.FSX_THROUGHPUTS is limits.FSX_THROUGHPUTS is fsx.THROUGHPUTS
    assert td.INSTANCE_TYPE_RE is limits.INSTANCE_TYPE_RE is tv.INSTANCE_TYPE_RE


@pytest.mark.parametrize("name, ok", [("trn1.32xlarge", True), ("m7i-flex.large", True), ("c7i.metal-24xl", True),
                                      ("u-6tb1.metal", True), ("trn1", False), ("Trn1.32xlarge", False), (".large", False)])
def test_instance_type_pattern(name, ok):
    assert bool(limits.INSTANCE_TYPE_RE.match(name)) is ok


# kubelet's own list (k8s.io/kubelet pkg/apis/well_known_labels.go, cmd/kubelet ValidateKubeletFlags).
@pytest.mark.parametrize("key, refused", [
    ("team", False), ("example.com/team", False), ("kubernetes.io.example.com/team", False),
    ("kubernetes.io/hostname", False), ("node.kubernetes.io/instance-type", False), ("node.kubernetes.io/lifecycle", False),
    ("kubelet.kubernetes.io/anything", False), ("x.node.kubernetes.io/anything", False), ("beta.kubernetes.io/arch", False),
    ("kubernetes.io/role", True), ("node-role.kubernetes.io/worker", True), ("k8s.io/team", True), ("sub.k8s.io/team", True),
    ("topology.kubernetes.io/rack", True), ("node.k8s.io/team", True),
])
def test_kubelet_reserved_label_namespaces(key, refused):
    assert limits.kubelet_refuses_label(key) is refused


TRN1 = {"trn1.32xlarge": {"ipv4_addresses_per_interface": 50}, "trn2.48xlarge": {"ipv4_addresses_per_interface": 50}}


def _pool(name, zone, count, max_count=None, itype="trn1.32xlarge"):
    return {"name": name, "instance_type": itype, "availability_zone": zone, "count": count, "max_count": max_count}


def test_a_subnet_holds_its_zone_s_pools_at_their_largest_size_or_is_named_with_the_prefix_that_would():
    plan = {"us-west-2a": {"private": "10.0.0.0/24"}, "us-west-2b": {"private": "10.0.32.0/19"}}
    # 2 x 100 = 200 of the /24's 251: fits; 3 (max_count) x 100 does not; the /19 of the other zone holds 64 x 100.
    assert limits.subnet_address_problems(plan, [_pool("trn1", "us-west-2a", 2), _pool("big", "us-west-2b", 64)], TRN1,
                                          "network_private_subnet_prefix") == []
    problems = limits.subnet_address_problems(plan, [_pool("trn1", "us-west-2a", 2, 3), _pool("trn2", "us-west-2a", 1, itype="trn2.48xlarge")],
                                              TRN1, "network_private_subnet_prefix")
    assert problems == [
        "network_private_subnet_prefix: the private subnet 10.0.0.0/24 of us-west-2a has 251 usable addresses and its node pools need "
        "up to 400 (trn1 3 x trn1.32xlarge x 100, trn2 1 x trn2.48xlarge x 100; VPC CNI defaults: a node's primary interface and one "
        "warm interface, each with its instance type's Ipv4AddressesPerInterface; AWS reserves 5 addresses per subnet); allowed: 23 or shorter "
        "(the VPC, network_vpc_cidr, must hold one such subnet per zone)"]
    byo = {"us-west-2a": {"private": "10.1.0.0/26", "subnet_id": "subnet-0abc"}}
    (problem,) = limits.subnet_address_problems(byo, [_pool("trn1", "us-west-2a", 1)], TRN1, "network_private_subnet_ids")
    assert problem.startswith("network_private_subnet_ids: subnet-0abc (10.1.0.0/26) of us-west-2a has 59 usable addresses")
    assert problem.endswith("allowed: a private subnet of /25 or wider in us-west-2a")
    # No subnet the role creates (/16 at the widest) holds 700 trn1 nodes.
    (problem,) = limits.subnet_address_problems(byo, [_pool("trn1", "us-west-2a", 700)], TRN1, "network_private_subnet_prefix")
    assert problem.endswith("allowed: fewer nodes in us-west-2a (max_count), or pools spread over more zones: no subnet of /16 or longer holds them")
    # A parked pool takes nothing; a type without the figure is not guessed at.
    assert limits.subnet_address_problems(byo, [_pool("trn1", "us-west-2a", 0, 0), _pool("x", "us-west-2a", 9, itype="trn3.48xlarge")],
                                          TRN1, "network_private_subnet_ids") == []


@pytest.mark.parametrize("version, old", [("v1.18.4-eksbuild.1", True), ("v1.18.5-eksbuild.1", False), ("v1.20.4-eksbuild.3", False),
                                          ("v1.9.9-eksbuild.1", True), ("", False), ("latest", False)])
def test_vpc_cni_versions_before_efa_only_support_are_told_apart(version, old):
    assert limits.vpc_cni_too_old(version) is old


DLC_2_30 = "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"


@pytest.mark.parametrize("date, driver", [("20250919", limits.OLDER_THAN_TABLE), ("20250920", (2, 24)), ("20260318", (2, 26)), ("20260409", (2, 27)),
                                          ("20260625", (2, 28)), ("20260714", (2, 29)), ("20261201", (2, 29))])
def test_the_neuron_driver_of_an_ami_release_is_the_last_one_shipped_by_its_date(date, driver):
    assert limits.ami_neuron_driver(f"amazon-eks-node-al2023-x86_64-neuron-1.35-v{date}") == driver


def test_the_ami_s_neuron_driver_must_run_the_image_s_neuron_sdk_both_ways():
    release = "amazon-eks-node-al2023-x86_64-neuron-1.35-v{}".format
    assert limits.neuron_driver_problem(release("20260625"), DLC_2_30) is None
    assert limits.neuron_driver_problem(release("20260409"), DLC_2_30) is None
    too_old = limits.neuron_driver_problem(release("20260318"), DLC_2_30)
    assert too_old.endswith(f"{release('20260318')} ships Neuron driver 2.26, and the Neuron runtime of trainium_image.base_image "
                            "(SDK 2.30) needs driver 2.27 or later (Neuron release notes)")
    too_new = limits.neuron_driver_problem(release("20260714"), DLC_2_30)
    assert too_new.startswith("a release from v20260409 up to, not including, v20260714")
    assert "driver 2.29 needs the Neuron runtime of SDK 2.31 or later and trainium_image.base_image is SDK 2.30" in too_new
    # SDK 2.33 (TorchNeuron): nothing documented against the newest drivers; an image that names no SDK or a custom AMI: not judged.
    assert limits.neuron_driver_problem("recommended", "public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-sdk2.33.0-ubuntu24.04") is None
    assert limits.neuron_driver_problem("recommended", "123456789012.dkr.ecr.us-west-2.amazonaws.com/mine:v7") is None
    # Older than the table: older than its first driver (2.24), too old for SDK 2.30.
    assert "ships a Neuron driver older than 2.24" in limits.neuron_driver_problem(release("20250101"), DLC_2_30)
    # Only the tag names the SDK: not the repository's name, not a digest.
    assert limits.image_neuron_sdk("registry.example/neuron-sdk2.31-mirror:v7") is None
    assert limits.image_neuron_sdk(DLC_2_30 + "@sha256:" + "0" * 64) == (2, 30)
    assert limits.image_neuron_sdk("public.ecr.aws/neuron/pytorch-training-neuronx@sha256:" + "0" * 64) is None
