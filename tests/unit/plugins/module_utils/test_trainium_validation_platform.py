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


def test_defaults_of_the_efa_device_plugin_are_valid_in_every_region_of_the_table():
    for region in defaults("efa_device_plugin")["efa_device_plugin_ecr_accounts"]:
        assert problems("efa_device_plugin", trainium_region=region) == [], region


def test_the_efa_registry_table_knows_us_west_2_and_every_account_is_twelve_digits():
    accounts = defaults("efa_device_plugin")["efa_device_plugin_ecr_accounts"]
    assert accounts["us-west-2"] == "602401143452"
    assert all(isinstance(a, str) and len(a) == 12 and a.isdigit() for a in accounts.values())


@pytest.mark.parametrize("change, line", [
    ({"trainium_region": "xx-nowhere-1"},
     "efa_device_plugin_ecr_accounts: got ['af-south-1', "),
    ({"efa_device_plugin_image_tag": "latest"},
     "efa_device_plugin_image_tag: got 'latest' (str); allowed: a released tag of the EFA device plugin such as v0.5.20"),
    ({"efa_device_plugin_image_tag": "v0.5.20 "},
     "efa_device_plugin_image_tag: got 'v0.5.20 ' (str); allowed: a released tag"),
    ({"efa_device_plugin_image": "registry.example.com/mirror/aws-efa-k8s-device-plugin"},
     "efa_device_plugin_image: got 'registry.example.com/mirror/aws-efa-k8s-device-plugin' (str); allowed: a pinned image reference"),
    ({"efa_device_plugin_ecr_accounts": {"us-west-2": "60240114345"}},
     "efa_device_plugin_ecr_accounts.us-west-2: got '60240114345' (str); allowed: the 12-digit AWS account"),
    ({"efa_device_plugin_ecr_accounts": "602401143452"},
     "efa_device_plugin_ecr_accounts: got '602401143452' (str); allowed: a mapping"),
    ({"efa_device_plugin_instance_types": "trn1.32xlarge trn1n.32xlarge"},
     "efa_device_plugin_instance_types[0]: got 'trn1.32xlarge trn1n.32xlarge' (str); allowed: an EC2 instance type"),
    ({"efa_device_plugin_wait_timeout": 7200}, "efa_device_plugin_wait_timeout: got 7200 (int); allowed: an integer from 1 to 3600"),
])
def test_one_bad_efa_device_plugin_variable_gives_one_line(change, line):
    found = problems("efa_device_plugin", **change)
    assert len(found) == 1, found
    assert found[0].startswith(line), found[0]


def test_a_mirror_image_needs_no_registry_of_the_region():
    assert problems("efa_device_plugin", trainium_region="xx-nowhere-1",
                    efa_device_plugin_image="registry.example.com/mirror/aws-efa-k8s-device-plugin:v0.5.20") == []


def test_the_efa_device_plugin_runs_only_on_types_with_efa():
    types = defaults("efa_device_plugin")["efa_device_plugin_instance_types"]
    assert {"trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge"} <= set(types)
    assert "trn1.2xlarge" not in types


POOLS = [{"name": "a", "instance_type": "trn1.32xlarge", "count": 2}, {"name": "b", "instance_type": "trn2.48xlarge", "count": 1},
         {"name": "c", "instance_type": "trn1.2xlarge", "count": 1}]


def test_every_pool_type_is_among_the_device_plugins_types():
    """A pool type the DaemonSet does not select gets no plugin: one line naming the list and the pool."""
    assert problems("neuron_device_plugin", trainium_node_pools=POOLS) == []
    assert problems("efa_device_plugin", trainium_node_pools=POOLS) == []
    (line,) = problems("neuron_device_plugin", trainium_node_pools=POOLS, neuron_device_plugin_instance_types=["trn1.32xlarge", "trn1.2xlarge"])
    assert line.startswith("neuron_device_plugin_instance_types: got ['trn1.32xlarge', 'trn1.2xlarge'] (list); allowed: a list that holds "
                           "trn2.48xlarge, the instance type of trainium_node_pools[1]: the DaemonSet runs only on the listed types")
    # trn1.2xlarge has no EFA: the EFA plugin need not run there.
    (line,) = problems("efa_device_plugin", trainium_node_pools=POOLS, efa_device_plugin_instance_types=["trn2.48xlarge"])
    assert "a list that holds trn1.32xlarge, the instance type of trainium_node_pools[0]" in line and "vpc.amazonaws.com/efa" in line


def test_defaults_of_neuron_monitor_are_valid():
    assert problems("neuron_monitor") == []


@pytest.mark.parametrize("change, line", [
    ({"neuron_monitor_image": "public.ecr.aws/neuron/neuron-monitor:latest"},
     "neuron_monitor_image: got 'public.ecr.aws/neuron/neuron-monitor:latest' (str); allowed: a pinned image reference"),
    ({"neuron_monitor_namespace": "Monitoring"},
     "neuron_monitor_namespace: got 'Monitoring' (str); allowed: the name of an existing namespace (a DNS label)"),
    ({"neuron_monitor_namespace": "kube_system"},
     "neuron_monitor_namespace: got 'kube_system' (str); allowed: the name of an existing namespace"),
    ({"neuron_monitor_port": 80}, "neuron_monitor_port: got 80 (int); allowed: an integer from 1024 to 65535"),
    ({"neuron_monitor_port": "metrics"}, "neuron_monitor_port: got 'metrics' (str); allowed: an integer"),
    ({"neuron_monitor_instance_types": None}, "neuron_monitor_instance_types: got None (null); allowed: a non-empty list"),
    ({"neuron_monitor_wait_timeout": -1}, "neuron_monitor_wait_timeout: got -1 (int); allowed: an integer from 1 to 3600"),
])
def test_one_bad_neuron_monitor_variable_gives_one_line(change, line):
    found = problems("neuron_monitor", **change)
    assert len(found) == 1, found
    assert found[0].startswith(line), found[0]


def test_extra_vars_strings_of_the_platform_roles_are_converted_as_ansible_does():
    assert problems("neuron_monitor", neuron_monitor_port="9000", neuron_monitor_wait_timeout="60") == []
    assert problems("neuron_device_plugin", neuron_device_plugin_scheduler_extension="false") == []
