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
