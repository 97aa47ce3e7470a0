# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The validation rules of the platform node-agent roles (device plugins, neuron-monitor)."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv

ROOT = pathlib.Path(__file__).resolve().parents[4]


def spec(role):
    return yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]


def defaults(role):
    values = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    return {k: v for k, v in values.items() if not (isinstance(v, str) and "{{" in v)}


def problems(role, **changes):
    values = dict(defaults(role), trainium_cluster_name="trn-rehearsal", trainium_region="us-west-2")
    values.update(changes)
    return tv.role_problems(role, spec(role), values)


@pytest.mark.parametrize("image", [
    "public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0",
    "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20",
    "public.ecr.aws/neuron/neuron-monitor@sha256:" + "0" * 64,
    "registry.example.com:5000/team/image:1.0@sha256:" + "a" * 64,
])
def test_pinned_images_are_accepted(image):
    assert tv.image_is_pinned(image)


@pytest.mark.parametrize("image", [
    "public.ecr.aws/neuron/neuron-device-plugin",          # no tag, no digest
    "public.ecr.aws/neuron/neuron-device-plugin:latest",   # floating tag
    "registry.example.com:5000/team/image",                # the port is not a tag
    "neuron-device-plugin:2.31.0.0",                       # no registry
    "public.ecr.aws/neuron/neuron-monitor@sha256:abc",     # not a digest
    "",
    None,
    2.31,
])
def test_unpinned_images_are_refused(image):
    assert not tv.image_is_pinned(image)


def test_defaults_of_the_neuron_device_plugin_are_valid():
    assert problems("neuron_device_plugin") == []


@pytest.mark.parametrize("change, line", [
    ({"neuron_device_plugin_image": "public.ecr.aws/neuron/neuron-device-plugin:latest"},
     "neuron_device_plugin_image: got 'public.ecr.aws/neuron/neuron-device-plugin:latest' (str); allowed: a pinned image reference"),
    ({"neuron_device_plugin_image": "public.ecr.aws/neuron/neuron-device-plugin"},
     "neuron_device_plugin_image: got 'public.ecr.aws/neuron/neuron-device-plugin' (str); allowed: a pinned image reference"),
    ({"neuron_device_plugin_instance_types": []},
     "neuron_device_plugin_instance_types: got [] (list); allowed: a non-empty list of EC2 instance types"),
    ({"neuron_device_plugin_instance_types": ["trn1.32xlarge", "Trn1 32xl"]},
     "neuron_device_plugin_instance_types[1]: got 'Trn1 32xl' (str); allowed: an EC2 instance type"),
    ({"neuron_device_plugin_instance_types": ["trn1.32xlarge", "trn1.32xlarge"]},
     "neuron_device_plugin_instance_types: got ['trn1.32xlarge', 'trn1.32xlarge'] (list); allowed: each instance type once"),
    ({"neuron_device_plugin_wait_timeout": 0}, "neuron_device_plugin_wait_timeout: got 0 (int); allowed: an integer from 1 to 3600"),
    ({"neuron_device_plugin_wait_timeout": "soon"}, "neuron_device_plugin_wait_timeout: got 'soon' (str); allowed: an integer"),
    ({"neuron_device_plugin_scheduler_extension": True},
     "neuron_device_plugin_scheduler_extension: got True (bool); allowed: false; the Neuron scheduler extension is not implemented yet"),
    ({"neuron_device_plugin_scheduler_extension": "yes"},
     "neuron_device_plugin_scheduler_extension: got True (bool); allowed: false; the Neuron scheduler extension is not implemented yet"),
    ({"neuron_device_plugin_state": "installed"}, "neuron_device_plugin_state: got 'installed' (str); allowed: one of present, absent"),
])
def test_one_bad_neuron_device_plugin_variable_gives_one_line(change, line):
    found = problems("neuron_device_plugin", **change)
    assert len(found) == 1, found
    assert found[0].startswith(line), found[0]


def test_the_neuron_device_plugin_runs_on_every_trainium_type_of_the_deployment_model():
    types = defaults("neuron_device_plugin")["neuron_device_plugin_instance_types"]
    assert {"trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "inf2.48xlarge"} <= set(types)
    assert not [t for t in types if t.startswith("ml.")]
