# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The fsx_csi role's rules: pinned images, namespaces, the file system (static) or StorageClass inputs (dynamic)."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv

ROOT = pathlib.Path(__file__).resolve().parents[4]
SPEC = yaml.safe_load((ROOT / "roles" / "fsx_csi" / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
DEFAULTS = yaml.safe_load((ROOT / "roles" / "fsx_csi" / "defaults" / "main.yml").read_text())
LITERAL = {name: value for name, value in DEFAULTS.items() if not (isinstance(value, str) and "{{" in value)}
FILE_SYSTEM = {
    "id": "fs-0123456789abcdef0",
    "dns_name": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    "mount_name": "abcdefgh",
    "storage_capacity_gib": 1200,
}
GOOD = dict(LITERAL, fsx_csi_claim_namespace="default", fsx_csi_file_system=FILE_SYSTEM, trainium_region="us-west-2")
DYNAMIC = {
    "fsx_csi_dynamic_provisioning": True,
    "fsx_csi_subnet_id": "subnet-0123456789abcdef0",
    "fsx_csi_security_group_ids": ["sg-0123456789abcdef0"],
    "fsx_csi_deployment_type": "PERSISTENT_1",
    "fsx_csi_per_unit_storage_throughput": 200,
    "fsx_csi_dynamic_capacity_gib": 1200,
    "fsx_csi_oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABC",
    "fsx_csi_oidc_issuer": "https://oidc.eks.us-west-2.amazonaws.com/id/ABC",
}


def problems(**changes):
    return tv.role_problems("fsx_csi", SPEC, dict(GOOD, **changes))


def test_registered_and_the_defaults_are_valid():
    assert tv.ROLE_RULES["fsx_csi"] is tv.fsx_csi_problems
    assert problems() == []
    assert problems(**DYNAMIC) == []


def test_literal_defaults_and_argument_spec_agree():
    for name, value in LITERAL.items():
        assert SPEC[name]["default"] == value, name


def test_facts_not_known_yet_are_left_to_the_role():
    """At the start of a run fsx_lustre_facts and eks_cluster_facts do not exist: null values pass here."""
    unknown = {key: None for key in FILE_SYSTEM}
    assert problems(fsx_csi_file_system=unknown) == []
    assert problems(**{**DYNAMIC, "fsx_csi_subnet_id": "", "fsx_csi_security_group_ids": [], "fsx_csi_oidc_provider_arn": ""}) == []


@pytest.mark.parametrize("name", ["fsx_csi_driver_image", "fsx_csi_provisioner_image", "fsx_csi_resizer_image",
                                  "fsx_csi_node_driver_registrar_image", "fsx_csi_livenessprobe_image"])
@pytest.mark.parametrize("image", ["public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver:latest",
                                   "public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver",
                                   "aws-fsx-csi-driver:v1.9.0"])
def test_unpinned_images_get_one_line(name, image):
    lines = problems(**{name: image})
    assert lines == [f"{name}: got {image!r} (str); allowed: an image pinned to a version tag (registry/name:tag, not latest)"]


def test_a_digest_is_accepted():
    assert problems(fsx_csi_driver_image="public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver:v1.9.0@sha256:" + "0" * 64) == []


@pytest.mark.parametrize("key, value, start", [
    ("id", "fs-12", "fsx_csi_file_system.id: got 'fs-12' (str); allowed: a file system ID"),
    ("id", "fsx-0123456789abcdef0", "fsx_csi_file_system.id: got 'fsx-0123456789abcdef0' (str)"),
    ("dns_name", "not a name", "fsx_csi_file_system.dns_name: got 'not a name' (str); allowed: the DNS name"),
    ("mount_name", "much-too-long", "fsx_csi_file_system.mount_name: got 'much-too-long' (str); allowed: the Lustre mount name"),
    ("storage_capacity_gib", 1000, "fsx_csi_file_system.storage_capacity_gib: got 1000 (int); allowed: the capacity"),
])
def test_each_file_system_problem_is_one_line(key, value, start):
    lines = problems(fsx_csi_file_system=dict(FILE_SYSTEM, **{key: value}))
    assert len(lines) == 1, lines
    assert lines[0].startswith(start)


def test_an_unknown_file_system_key_is_refused_by_the_spec():
    lines = problems(fsx_csi_file_system=dict(FILE_SYSTEM, size=1200))
    assert lines == ["fsx_csi_file_system.size: got 1200 (int); allowed: no such key; fsx_csi_file_system takes "
                     "dns_name, id, mount_name, storage_capacity_gib"]


@pytest.mark.parametrize("change, start", [
    ({"fsx_csi_claim_namespace": "Jobs"}, "fsx_csi_claim_namespace: got 'Jobs' (str); allowed: a Kubernetes namespace name"),
    ({"fsx_csi_namespace": "kube_system"}, "fsx_csi_namespace: got 'kube_system' (str)"),
    ({"fsx_csi_controller_replicas": 0}, "fsx_csi_controller_replicas: got 0 (int); allowed: an integer from 1 to 5"),
    ({"fsx_csi_wait_timeout": 1}, "fsx_csi_wait_timeout: got 1 (int); allowed: an integer from 10 to 3600"),
    ({"fsx_csi_node_instance_types": []}, "fsx_csi_node_instance_types: got [] (list); allowed: at least one instance type"),
    ({"fsx_csi_reclaim_policy": "Recycle"}, "fsx_csi_reclaim_policy: got 'Recycle' (str); allowed: one of Retain, Delete"),
])
def test_each_problem_is_one_line(change, start):
    lines = problems(**change)
    assert len(lines) == 1, lines
    assert lines[0].startswith(start)


@pytest.mark.parametrize("change, start", [
    ({"fsx_csi_subnet_id": "subnet-x"}, "fsx_csi_subnet_id: got 'subnet-x' (str); allowed: a subnet ID"),
    ({"fsx_csi_security_group_ids": ["sg-1", "sg-0123456789abcdef0"]}, "fsx_csi_security_group_ids[0]: got 'sg-1' (str)"),
    ({"fsx_csi_per_unit_storage_throughput": 125}, "fsx_csi_per_unit_storage_throughput: got 125 (int); allowed: one of 50, 100, 200"),
    ({"fsx_csi_deployment_type": "SCRATCH_2"}, "fsx_csi_per_unit_storage_throughput: got 200 (int); allowed: unset (null) for SCRATCH_2"),
    ({"fsx_csi_dynamic_capacity_gib": 3600}, "fsx_csi_dynamic_capacity_gib: got 3600 (int); allowed: 1200, 2400 or a multiple of 2400"),
    ({"fsx_csi_data_repository_path": "bucket/prefix"}, "fsx_csi_data_repository_path: got 'bucket/prefix' (str); allowed: empty or an S3 URL"),
    ({"fsx_csi_oidc_provider_arn": "arn:aws:iam::111122223333:role/x"}, "fsx_csi_oidc_provider_arn: got"),
])
def test_each_dynamic_problem_is_one_line(change, start):
    lines = problems(**dict(DYNAMIC, **change))
    assert len(lines) == 1, lines
    assert lines[0].startswith(start)


def test_dynamic_mode_does_not_check_the_static_file_system():
    assert problems(**dict(DYNAMIC, fsx_csi_file_system=dict(FILE_SYSTEM, id="fs-12"))) == []


def test_absent_checks_no_file_system():
    assert problems(fsx_csi_state="absent", fsx_csi_file_system=dict(FILE_SYSTEM, id="fs-12")) == []
