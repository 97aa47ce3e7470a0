# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The etcd role's rules: an etcd 3.5 image (v2 API), namespace, emptyDir size, resources, timeout."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv

ROOT = pathlib.Path(__file__).resolve().parents[4]
SPEC = yaml.safe_load((ROOT / "roles" / "etcd" / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
DEFAULTS = yaml.safe_load((ROOT / "roles" / "etcd" / "defaults" / "main.yml").read_text())
GOOD = {
    "etcd_state": "present",
    "etcd_namespace": "default",
    "etcd_rdzv_backend": "etcd",
    "etcd_image": DEFAULTS["etcd_image"],
    "etcd_namespace_pod_security": "baseline",
    "etcd_data_size_limit": "1Gi",
    "etcd_resources": DEFAULTS["etcd_resources"],
    "etcd_network_policy": True,
    "etcd_wait_timeout": 180,
}


def problems(**changes):
    return tv.role_problems("etcd", SPEC, dict(GOOD, **changes))


def test_registered_and_the_defaults_are_valid():
    assert tv.ROLE_RULES["etcd"] is tv.etcd_problems
    assert problems() == []


def test_literal_defaults_and_argument_spec_agree():
    for name, value in DEFAULTS.items():
        if not (isinstance(value, str) and "{{" in value):
            assert SPEC[name]["default"] == value, name


@pytest.mark.parametrize("image", [
    "quay.io/coreos/etcd:v3.5.34",
    "gcr.io/etcd-development/etcd:v3.5.27",
    "registry.example.com:5000/mirror/etcd:v3.5.0@sha256:" + "a" * 64,
])
def test_etcd_35_images_are_accepted(image):
    assert problems(etcd_image=image) == []


@pytest.mark.parametrize("image", [
    "quay.io/coreos/etcd:v3.6.5",  # no v2 API
    "quay.io/coreos/etcd:v3.4.35",
    "quay.io/coreos/etcd:latest",
    "quay.io/coreos/etcd",
    "etcd:v3.5.34",  # no registry
])
def test_other_images_get_one_line(image):
    lines = problems(etcd_image=image)
    assert len(lines) == 1
    assert lines[0].startswith(f"etcd_image: got {image!r} (str); allowed: an etcd 3.5 image")
    assert "3.6 has no v2 API" in lines[0]


@pytest.mark.parametrize("change, line", [
    ({"etcd_namespace": "Training"}, "etcd_namespace: got 'Training' (str); allowed: a Kubernetes namespace name"),
    ({"etcd_namespace": "a" * 64}, "etcd_namespace: got"),
    ({"etcd_data_size_limit": "1G"}, "etcd_data_size_limit: got '1G' (str); allowed: a size in Ki, Mi or Gi such as 1Gi"),
    ({"etcd_data_size_limit": "0Gi"}, "etcd_data_size_limit: got '0Gi'"),
    ({"etcd_wait_timeout": 5}, "etcd_wait_timeout: got 5 (int); allowed: an integer from 10 to 3600"),
    ({"etcd_resources": {"request": {"cpu": "1"}}}, "etcd_resources: got {'request': {'cpu': '1'}} (dict); allowed: a mapping with requests and/or limits"),
    ({"etcd_rdzv_backend": "gloo"}, "etcd_rdzv_backend: got 'gloo' (str); allowed: one of etcd, etcd-v2, c10d"),
    ({"etcd_namespace_pod_security": "privileged"}, "etcd_namespace_pod_security: got 'privileged' (str); allowed: one of restricted, baseline"),
])
def test_each_problem_is_one_line(change, line):
    lines = problems(**change)
    assert len(lines) == 1, lines
    assert lines[0].startswith(line)


def test_a_variable_the_spec_refused_gets_no_second_line():
    assert problems(etcd_wait_timeout="soon") == ["etcd_wait_timeout: got 'soon' (str); allowed: an integer"]
