# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""deployment_errors: the valid baseline, one bad value at a time, and drift checks
against roles/preflight/meta/argument_specs.yml and the shipped inventories."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import jinja2
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td

REPO_ROOT = Path(td.__file__).resolve().parents[2]

BASELINE = {
    "trainium_cluster_name": "trn-bert",
    "trainium_region": "us-west-2",
    "trainium_kubernetes_version": "1.34",
    "trainium_node_pools": [
        {
            "name": "trn1",
            "instance_type": "trn1.32xlarge",
            "count": 2,
            "capacity_type": "ON_DEMAND",
            "root_volume_size_gib": 500,
            "labels": {"team": "ml", "example.com/tier": "training"},
            "taints": [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}],
        }
    ],
    "trainium_storage": {"deployment_type": "PERSISTENT_1", "storage_capacity_gib": 1200, "per_unit_storage_throughput": 200},
    "trainium_image": {
        "repository": "bert-pretrain-neuron",
        "tag": "0.1.0",
        "base_image": "public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.2-ubuntu20.04",
    },
    "trainium_dataset": {"name": "bert_pretrain_wikicorpus_tokenized_hdf5_seqlen128", "source": "synthetic", "seq_len": 128},
    "trainium_job": {
        "name": "bert-pretrain",
        "namespace": "default",
        "queue": "test",
        "node_pool": "trn1",
        "nnodes": 2,
        "nproc_per_node": 32,
        "batch_size": 16,
        "grad_accum_usteps": 32,
        "precision": "bf16",
        "max_retry": 3,
    },
    "trainium_tags": {"team": "ml-platform"},
    "trainium_image_mirrors": {},
    "trainium_registry_ca_dir": "",
}

_DELETE = object()
POOL = "trainium_node_pools.0"
# A tag of the shape of TorchNeuron's training containers (Neuron 2.33: PyTorch 2.14, Python 3.14, Ubuntu 26.04).
NATIVE_IMAGE = "registry.local:5000/neuron/pytorch-training-neuronx:2.14.0-neuronx-py314-sdk2.33.0-ubuntu26.04"


def _variant(**changes):
    """A deep copy of BASELINE with each dotted path (``__`` for ``.``) set, or deleted with _DELETE."""
    variables = copy.deepcopy(BASELINE)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        target = variables
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is _DELETE:
            del target[last]
        else:
            target[last] = value
    return variables


def _p(path):
    return path.replace(".", "__")


def _case(case_id, changes, variable, allowed):
    return pytest.param({_p(k): v for k, v in changes.items()}, variable, allowed, id=case_id)


def _second_pool():
    pool = copy.deepcopy(BASELINE["trainium_node_pools"][0])
    return [copy.deepcopy(pool), pool]


BAD_INPUTS = [
    _case("cluster-name-leading-dash", {"trainium_cluster_name": "-trn"}, "trainium_cluster_name", "2-40 letters, digits and '-'"),
    _case("cluster-name-trailing-dash", {"trainium_cluster_name": "trn-"}, "trainium_cluster_name", "not ending with '-'"),
    _case("cluster-name-41-chars", {"trainium_cluster_name": "t" * 41}, "trainium_cluster_name", "2-40 letters"),
    _case("cluster-name-missing", {"trainium_cluster_name": _DELETE}, "trainium_cluster_name", "starting with a letter"),
    _case("region-no-number", {"trainium_region": "us-west"}, "trainium_region", "an AWS region name such as 'us-west-2'"),
    _case("endpoint-no-scheme", {"trainium_aws_endpoint_url": "127.0.0.1:5000"}, "trainium_aws_endpoint_url", "an http(s) URL"),
    _case("region-is-a-zone", {"trainium_region": "us-west-2a"}, "trainium_region", "an AWS region name"),
    _case("k8s-version-float", {"trainium_kubernetes_version": 1.3}, "trainium_kubernetes_version", 'a quoted string such as "1.34"'),
    _case("k8s-version-too-old", {"trainium_kubernetes_version": "1.29"}, "trainium_kubernetes_version", "one of 1.31, 1.32, 1.33, 1.34, 1.35"),
    _case("k8s-version-int", {"trainium_kubernetes_version": 1}, "trainium_kubernetes_version", "one of 1.31"),
    _case("pools-empty", {"trainium_node_pools": []}, "trainium_node_pools", "a list of 1 to 10 node pools"),
    _case("pools-mapping", {"trainium_node_pools": {"trn1": {}}}, "trainium_node_pools", "a list of 1 to 10 node pools"),
    _case("pool-not-mapping", {POOL: "trn1"}, "trainium_node_pools[0]", "a mapping"),
    _case("pool-name-uppercase", {POOL + ".name": "Trn1"}, "trainium_node_pools[0].name", "a DNS label"),
    _case("pool-names-duplicate", {"trainium_node_pools": _second_pool()}, "trainium_node_pools[1].name", "a name not used by another pool"),
    _case("instance-type-gpu", {POOL + ".instance_type": "p5.48xlarge"}, "trainium_node_pools[0].instance_type",
          "one of trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge, trn2.48xlarge"),
    _case("instance-type-inf2", {POOL + ".instance_type": "inf2.48xlarge"}, "trainium_node_pools[0].instance_type", "trn2.48xlarge"),
    _case("count-bool", {POOL + ".count": True}, "trainium_node_pools[0].count", "an integer from 0 to 100"),
    _case("count-negative", {POOL + ".count": -1}, "trainium_node_pools[0].count", "an integer from 0 to 100"),
    _case("count-101", {POOL + ".count": 101}, "trainium_node_pools[0].count", "an integer from 0 to 100"),
    _case("count-string", {POOL + ".count": "2"}, "trainium_node_pools[0].count", "an integer from 0 to 100"),
    _case("parked-max-count-zero", {POOL + ".count": 0, POOL + ".max_count": 0}, "trainium_node_pools[0].max_count", "an integer from 1 to 100"),
    _case("min-count-above-count", {POOL + ".min_count": 3}, "trainium_node_pools[0].min_count", "an integer from 0 to 2"),
    _case("max-count-below-count", {POOL + ".max_count": 1}, "trainium_node_pools[0].max_count", "an integer from 2 to 100"),
    _case("seq-len-float", {"trainium_dataset.seq_len": 128.0}, "trainium_dataset.seq_len", "one of 128, 512"),
    _case("throughput-float", {"trainium_storage.per_unit_storage_throughput": 200.0}, "trainium_storage.per_unit_storage_throughput", "one of 50, 100, 200"),
    _case("taint-value-int", {POOL + ".taints": [{"key": "dedicated", "value": 5, "effect": "NoSchedule"}]},
          "trainium_node_pools[0].taints[0].value", "a Kubernetes taint value"),
    _case("taint-value-spaces", {POOL + ".taints": [{"key": "dedicated", "value": "ml team", "effect": "NoSchedule"}]},
          "trainium_node_pools[0].taints[0].value", "63 characters at most"),
    _case("capacity-type-unknown", {POOL + ".capacity_type": "RESERVED"}, "trainium_node_pools[0].capacity_type", "one of ON_DEMAND, SPOT, CAPACITY_BLOCK"),
    _case("capacity-block-without-reservation", {POOL + ".capacity_type": "CAPACITY_BLOCK"}, "trainium_node_pools[0].capacity_reservation_id",
          "the id of the capacity block when capacity_type is CAPACITY_BLOCK"),
    _case("spot-with-reservation", {POOL + ".capacity_type": "SPOT", POOL + ".capacity_reservation_id": "cr-0123456789abcdef0"},
          "trainium_node_pools[0].capacity_reservation_id", "no reservation when capacity_type is SPOT"),
    _case("reservation-id-malformed", {POOL + ".capacity_reservation_id": "cr-xyz"}, "trainium_node_pools[0].capacity_reservation_id",
          "a capacity reservation id such as 'cr-0123456789abcdef0'"),
    _case("zone-is-region", {POOL + ".availability_zone": "us-west-2"}, "trainium_node_pools[0].availability_zone",
          "a zone name such as 'us-west-2d' or a zone id such as 'usw2-az4'"),
    _case("zone-id-uppercase", {POOL + ".availability_zone": "USW2-AZ4"}, "trainium_node_pools[0].availability_zone", "or leave it unset"),
    _case("root-volume-too-small", {POOL + ".root_volume_size_gib": 50}, "trainium_node_pools[0].root_volume_size_gib", "an integer from 100 to 16384"),
    _case("label-value-int", {POOL + ".labels": {"team": 1}}, "trainium_node_pools[0].labels[team]", "quoted if it looks like a number or boolean"),
    _case("label-value-bool", {POOL + ".labels": {"neuron": True}}, "trainium_node_pools[0].labels[neuron]", "a Kubernetes label value"),
    _case("label-value-64-chars", {POOL + ".labels": {"team": "m" * 64}}, "trainium_node_pools[0].labels[team]", "63 characters at most"),
    _case("label-value-space", {POOL + ".labels": {"team": "ml team"}}, "trainium_node_pools[0].labels[team]", "a Kubernetes label value"),
    _case("label-key-bad", {POOL + ".labels": {"bad key!": "x"}}, "trainium_node_pools[0].labels key", "a Kubernetes label key"),
    _case("labels-string", {POOL + ".labels": "team=ml"}, "trainium_node_pools[0].labels", "a mapping"),
    _case("lnc-2-on-trn1", {POOL + ".logical_nc_config": 2}, "trainium_node_pools[0].logical_nc_config",
          "1 for trn1.32xlarge, or unset for its default 1 (Neuron documentation, 'Logical NeuronCore configuration': "
          "LNC 2 exists on Trainium2 and later)"),
    _case("lnc-4-on-trn2", {POOL + ".instance_type": "trn2.48xlarge", POOL + ".logical_nc_config": 4, "trainium_job.framework": "xla"},
          "trainium_node_pools[0].logical_nc_config", "1 or 2 for trn2.48xlarge, or unset for its default 2"),
    _case("lnc-string", {POOL + ".instance_type": "trn2.48xlarge", POOL + ".logical_nc_config": "2", "trainium_job.framework": "xla"},
          "trainium_node_pools[0].logical_nc_config", "1 or 2 for trn2.48xlarge"),
    _case("label-value-empty", {POOL + ".labels": {"team": ""}}, "trainium_node_pools[0].labels[team]",
          "a label value of 1-63 characters (EKS CreateNodegroup refuses an empty value)"),
    _case("label-key-64-chars-with-prefix", {POOL + ".labels": {"example.com/" + "a" * 52: "x"}}, "trainium_node_pools[0].labels key",
          "a label key of at most 63 characters, its prefix included (EKS CreateNodegroup, labels)"),
    _case("label-key-kubelet-reserved", {POOL + ".labels": {"node-role.kubernetes.io/worker": "true"}}, "trainium_node_pools[0].labels key",
          "kubelet refuses other keys there in --node-labels"),
    _case("label-key-k8s-io-reserved", {POOL + ".labels": {"k8s.io/team": "ml"}}, "trainium_node_pools[0].labels key",
          "or under kubelet.kubernetes.io or node.kubernetes.io"),
    _case("taint-key-64-chars-with-prefix", {POOL + ".taints": [{"key": "example.com/" + "a" * 52, "effect": "NoSchedule"}]},
          "trainium_node_pools[0].taints[0].key", "a taint key of at most 63 characters"),
    _case("nodegroup-name-64-chars", {"trainium_cluster_name": "T" + "x" * 39, POOL + ".name": "p" * 23, "trainium_job.node_pool": "p" * 23},
          "trainium_node_pools[0].name",
          "at most 63 characters for the node group name <trainium_cluster_name>-<name> (EKS CreateNodegroup, nodegroupName); "
          "with trainium_cluster_name 'Txxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' a pool name of at most 22 characters"),
    _case("taint-effect-wrong", {POOL + ".taints.0.effect": "NoScheduleAlways"}, "trainium_node_pools[0].taints[0].effect",
          "one of NoSchedule, PreferNoSchedule, NoExecute"),
    _case("taint-effect-lowercase", {POOL + ".taints.0.effect": "noschedule"}, "trainium_node_pools[0].taints[0].effect", "NoExecute"),
    _case("taint-key-empty", {POOL + ".taints.0.key": ""}, "trainium_node_pools[0].taints[0].key", "a Kubernetes taint key"),
    _case("taints-mapping", {POOL + ".taints": {"key": "a", "effect": "NoSchedule"}}, "trainium_node_pools[0].taints", "a list of {key, value, effect}"),
    _case("taint-not-mapping", {POOL + ".taints": ["aws.amazon.com/neuron=true:NoSchedule"]}, "trainium_node_pools[0].taints[0]", "a mapping"),
    _case("storage-not-mapping", {"trainium_storage": "fsx"}, "trainium_storage", "a mapping"),
    _case("fsx-type-scratch-1", {"trainium_storage.deployment_type": "SCRATCH_1"}, "trainium_storage.deployment_type",
          "one of SCRATCH_2, PERSISTENT_1, PERSISTENT_2"),
    _case("fsx-1300-gib", {"trainium_storage.storage_capacity_gib": 1300}, "trainium_storage.storage_capacity_gib",
          "1200, 2400 or a multiple of 2400 GiB up to 2400000"),
    _case("fsx-3600-gib", {"trainium_storage.storage_capacity_gib": 3600}, "trainium_storage.storage_capacity_gib", "a multiple of 2400"),
    _case("fsx-too-big", {"trainium_storage.storage_capacity_gib": 2400 * 1001}, "trainium_storage.storage_capacity_gib", "up to 2400000"),
    _case("fsx-capacity-bool", {"trainium_storage.storage_capacity_gib": True}, "trainium_storage.storage_capacity_gib", "1200, 2400 or a multiple of 2400"),
    _case("throughput-125-on-persistent-1", {"trainium_storage.per_unit_storage_throughput": 125}, "trainium_storage.per_unit_storage_throughput",
          "one of 50, 100, 200 (MB/s/TiB) for PERSISTENT_1"),
    _case("throughput-missing-on-persistent-1", {"trainium_storage.per_unit_storage_throughput": _DELETE}, "trainium_storage.per_unit_storage_throughput",
          "for PERSISTENT_1"),
    _case("throughput-200-on-persistent-2", {"trainium_storage.deployment_type": "PERSISTENT_2"}, "trainium_storage.per_unit_storage_throughput",
          "one of 125, 250, 500, 1000 (MB/s/TiB) for PERSISTENT_2"),
    _case("throughput-set-on-scratch-2", {"trainium_storage.deployment_type": "SCRATCH_2"}, "trainium_storage.per_unit_storage_throughput",
          "unset (null) for SCRATCH_2"),
    _case("data-repository-https", {"trainium_storage.data_repository_path": "https://bucket.s3.amazonaws.com/bert"},
          "trainium_storage.data_repository_path", "an S3 URL such as 's3://bucket/prefix'"),
    _case("image-not-mapping", {"trainium_image": "bert:0.1.0"}, "trainium_image", "a mapping"),
    _case("image-repository-uppercase", {"trainium_image.repository": "Bert"}, "trainium_image.repository", "an ECR repository name"),
    _case("image-tag-latest", {"trainium_image.tag": "latest"}, "trainium_image.tag", "'latest' is not allowed"),
    _case("image-tag-leading-dash", {"trainium_image.tag": "-rc1"}, "trainium_image.tag", "an image tag of 1-128 letters"),
    _case("image-tag-float", {"trainium_image.tag": 0.1}, "trainium_image.tag", "an image tag of 1-128"),
    _case("native-on-trn1", {"trainium_job.framework": "native"}, "trainium_job.framework",
          "xla on trn1.32xlarge, or unset for xla: TorchNeuron, the native track, runs on Trainium2 and Trainium3 only"),
    _case("framework-unknown", {"trainium_job.framework": "jax"}, "trainium_job.framework", "one of xla, native"),
    _case("xla-image-on-trn2", {POOL + ".instance_type": "trn2.48xlarge",
                                "trainium_image.base_image": "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.29.1-ubuntu24.04"},
          "trainium_image.base_image", "an image of TorchNeuron, the native track (Neuron SDK 2.33 or later, PyTorch 2.13 or later); "
          "this one is PyTorch/XLA's (PyTorch 2.9, Neuron SDK 2.29)"),
    _case("native-without-image", {POOL + ".instance_type": "trn2.48xlarge", "trainium_image.base_image": _DELETE},
          "trainium_image.base_image", "the training container of TorchNeuron (Neuron 2.33 or later"),
    _case("xla-on-sdk-2-30", {"trainium_image.base_image": "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"},
          "trainium_image.base_image", "an image of Neuron SDK 2.29 or earlier such as public.ecr.aws/neuron/pytorch-training-neuronx:"
          "2.9.0-neuronx-py312-sdk2.29.1-ubuntu24.04 (PyTorch 2.9, Neuron SDK 2.30 given): 'Starting with Neuron Release 2.30.0"),
    _case("native-image-on-xla", {"trainium_image.base_image": NATIVE_IMAGE}, "trainium_image.base_image",
          "an image of the xla track such as public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.29.1-ubuntu24.04; "
          "this one is TorchNeuron's (PyTorch 2.14, Neuron SDK 2.33): set trainium_job.framework native to run it"),
    _case("base-image-without-tag", {"trainium_image.base_image": "public.ecr.aws/neuron/pytorch-training-neuronx"}, "trainium_image.base_image",
          "an image pinned by a version tag or a digest"),
    _case("base-image-port-without-tag", {"trainium_image.base_image": "registry.local:5000/neuron/pytorch"}, "trainium_image.base_image",
          "pinned by a version tag or a digest"),
    _case("base-image-latest", {"trainium_image.base_image": "public.ecr.aws/neuron/pytorch-training-neuronx:latest"}, "trainium_image.base_image",
          "not 'latest' or no tag"),
    _case("base-image-no-registry", {"trainium_image.base_image": "pytorch"}, "trainium_image.base_image", "a full image reference 'registry/name:tag'"),
    _case("dataset-not-mapping", {"trainium_dataset": ["synthetic"]}, "trainium_dataset", "a mapping"),
    _case("dataset-name-path", {"trainium_dataset.name": "../etc"}, "trainium_dataset.name", "a directory name"),
    _case("dataset-source-http", {"trainium_dataset.source": "http://example.com/data.tar"}, "trainium_dataset.source", "'synthetic' or an S3 URL"),
    _case("dataset-seq-len-256", {"trainium_dataset.seq_len": 256}, "trainium_dataset.seq_len", "one of 128, 512"),
    _case("dataset-seq-len-string", {"trainium_dataset.seq_len": "128"}, "trainium_dataset.seq_len", "one of 128, 512"),
    _case("job-not-mapping", {"trainium_job": None}, "trainium_job", "a mapping"),
    _case("job-name-uppercase", {"trainium_job.name": "Bert"}, "trainium_job.name", "1-40 lowercase letters"),
    _case("job-namespace-uppercase", {"trainium_job.namespace": "Default"}, "trainium_job.namespace", "a Kubernetes namespace name"),
    _case("job-queue-empty", {"trainium_job.queue": ""}, "trainium_job.queue", "a Volcano queue name"),
    _case("job-node-pool-missing", {"trainium_job.node_pool": "trn2"}, "trainium_job.node_pool", "one of trn1"),
    _case("job-nnodes-zero", {"trainium_job.nnodes": 0}, "trainium_job.nnodes", "an integer from 1 to 1000"),
    _case("job-nproc-129", {"trainium_job.nproc_per_node": 129}, "trainium_job.nproc_per_node", "an integer from 1 to 128"),
    _case("job-batch-size-bool", {"trainium_job.batch_size": False}, "trainium_job.batch_size", "an integer from 1 to 4096"),
    _case("job-grad-accum-float", {"trainium_job.grad_accum_usteps": 32.0}, "trainium_job.grad_accum_usteps", "an integer from 1 to 4096"),
    _case("job-max-retry-11", {"trainium_job.max_retry": 11}, "trainium_job.max_retry", "an integer from 0 to 10"),
    _case("job-steps-zero", {"trainium_job.steps_this_run": 0}, "trainium_job.steps_this_run", "an integer from 1 to 10000000"),
    _case("job-precision-fp16", {"trainium_job.precision": "fp16"}, "trainium_job.precision", "one of bf16, fp32"),
    _case("prices-a-list", {"trainium_hourly_prices": [21.5]}, "trainium_hourly_prices", "a mapping of instance type to its price"),
    _case("price-negative", {"trainium_hourly_prices": {"trn1.32xlarge": -1}}, "trainium_hourly_prices.trn1.32xlarge", "a number of 0 or more"),
    _case("price-text", {"trainium_hourly_prices": {"trn1.32xlarge": "21.50"}}, "trainium_hourly_prices.trn1.32xlarge", "a number of 0 or more"),
    _case("timeline-dir-relative", {"trainium_timeline_dir": "runs"}, "trainium_timeline_dir", "an absolute path or one under ~"),
    _case("mirrors-a-list", {"trainium_image_mirrors": ["127.0.0.1:5050"]}, "trainium_image_mirrors", "a mapping of registry host (or *)"),
    _case("mirror-with-scheme", {"trainium_image_mirrors": {"quay.io": "https://mirror.example.com"}}, "trainium_image_mirrors.quay.io",
          "a registry host[:port] and optional path"),
    _case("mirror-key-url", {"trainium_image_mirrors": {"https://quay.io": "mirror.example.com"}}, "trainium_image_mirrors key https://quay.io",
          "a registry host such as public.ecr.aws"),
    _case("registry-ca-relative", {"trainium_registry_ca_dir": "certs"}, "trainium_registry_ca_dir", "an absolute path or one under ~"),
]


def test_prices_and_timeline_dir_of_ones_own_are_valid():
    variables = _variant(trainium_hourly_prices={"trn1.32xlarge": 18, "trn2.48xlarge": 44.7}, trainium_timeline_dir="~/runs",
                         trainium_image_mirrors={"*": "127.0.0.1:5050/mirror", "public.ecr.aws": "111122223333.dkr.ecr.us-west-2.amazonaws.com/ecr-public"},
                         trainium_registry_ca_dir="/etc/trainium/registry-cas")
    assert td.deployment_errors(variables) == []


def _assert_message(message, variable, allowed):
    assert message.startswith(f"{variable}: got "), message
    got, sep, allowed_text = message[len(variable) + 2:].partition("; allowed: ")
    assert sep, message
    assert got.startswith("got ")
    assert allowed in allowed_text, message


def test_baseline_is_valid():
    assert td.deployment_errors(copy.deepcopy(BASELINE)) == []


def test_baseline_is_not_changed():
    variables = copy.deepcopy(BASELINE)
    td.deployment_errors(variables)
    assert variables == BASELINE


def test_bad_inputs_cover_enough_cases():
    assert len(BAD_INPUTS) >= 25
    assert len({case.id for case in BAD_INPUTS}) == len(BAD_INPUTS)


@pytest.mark.parametrize("changes, variable, allowed", BAD_INPUTS)
def test_one_bad_value_gives_one_error(changes, variable, allowed):
    errors = td.deployment_errors(_variant(**changes))
    assert len(errors) == 1, errors
    _assert_message(errors[0], variable, allowed)


@pytest.mark.parametrize("value, shown", [
    (True, "got True (bool)"),
    ("2", "got '2' (str)"),
    (None, "got None (null)"),
    (2.0, "got 2.0 (float)"),
])
def test_message_shows_value_and_its_type(value, shown):
    (error,) = td.deployment_errors(_variant(**{_p(POOL + ".count"): value}))
    assert error.startswith(f"trainium_node_pools[0].count: {shown}; allowed: ")


def test_float_kubernetes_version_is_explained():
    (error,) = td.deployment_errors(_variant(trainium_kubernetes_version=1.3))
    assert error.startswith("trainium_kubernetes_version: got 1.3 (float); allowed: ")
    assert "YAML reads 1.30 as the number 1.3" in error
    assert error.endswith("one of " + ", ".join(td.KUBERNETES_VERSIONS))


def test_empty_variables_report_every_required_variable():
    errors = td.deployment_errors({})
    names = [e.split(": got ", 1)[0] for e in errors]
    assert names == [
        "trainium_cluster_name", "trainium_region", "trainium_kubernetes_version", "trainium_node_pools",
        "trainium_storage", "trainium_image", "trainium_dataset", "trainium_job",
    ]


def test_several_problems_are_all_reported_in_order():
    errors = td.deployment_errors(_variant(trainium_region="mars", **{_p(POOL + ".count"): -1, "trainium_job__precision": "int8"}))
    assert [e.split(": got ", 1)[0] for e in errors] == ["trainium_region", "trainium_node_pools[0].count", "trainium_job.precision"]


def test_eleven_pools_are_too_many():
    pools = []
    for index in range(11):
        pool = copy.deepcopy(BASELINE["trainium_node_pools"][0])
        pool["name"] = f"trn{index}"
        pools.append(pool)
    (error,) = td.deployment_errors(_variant(trainium_node_pools=pools))
    _assert_message(error, "trainium_node_pools", "a list of 1 to 10 node pools")


def test_duplicate_name_is_reported_once_per_extra_pool():
    pools = [copy.deepcopy(BASELINE["trainium_node_pools"][0]) for _copy in range(3)]
    errors = td.deployment_errors(_variant(trainium_node_pools=pools))
    assert [e.split(": got ", 1)[0] for e in errors] == ["trainium_node_pools[1].name", "trainium_node_pools[2].name"]


@pytest.mark.parametrize("changes", [
    pytest.param({"trainium_cluster_name": "t1"}, id="cluster-name-2-chars"),
    pytest.param({"trainium_cluster_name": "T" + "x" * 39}, id="cluster-name-40-chars"),
    pytest.param({"trainium_region": "us-gov-west-1"}, id="govcloud-region"),
    pytest.param({"trainium_kubernetes_version": "1.31"}, id="oldest-version"),
    pytest.param({POOL + ".capacity_type": "CAPACITY_BLOCK", POOL + ".capacity_reservation_id": "cr-0123456789abcdef0"}, id="capacity-block"),
    pytest.param({POOL + ".capacity_type": "SPOT"}, id="spot"),
    pytest.param({POOL + ".capacity_type": _DELETE}, id="capacity-type-defaults"),
    pytest.param({POOL + ".availability_zone": "us-west-2d"}, id="zone-name"),
    pytest.param({POOL + ".availability_zone": "usw2-az4"}, id="zone-id"),
    pytest.param({POOL + ".min_count": 0, POOL + ".max_count": 100}, id="min-max"),
    pytest.param({POOL + ".labels": {"node.kubernetes.io/lifecycle": "reserved", "kubelet.kubernetes.io/x": "y",
                                     "topology.kubernetes.io/zone": "us-west-2d", "kubernetes.io.example.com/team": "ml"}},
                 id="labels-kubelet-allows"),
    pytest.param({"trainium_cluster_name": "T" + "x" * 39, POOL + ".name": "p" * 22, "trainium_job.node_pool": "p" * 22},
                 id="nodegroup-name-63-chars"),
    pytest.param({POOL + ".taints": []}, id="no-taints"),
    pytest.param({POOL + ".instance_type": "trn2.48xlarge", POOL + ".logical_nc_config": 1, "trainium_job.framework": "xla"}, id="trn2-lnc-1"),
    pytest.param({POOL + ".instance_type": "trn2.48xlarge", "trainium_image.base_image": NATIVE_IMAGE}, id="trn2-native-by-default"),
    pytest.param({POOL + ".instance_type": "trn2.48xlarge", "trainium_job.framework": "native",
                  "trainium_image.base_image": "registry.local:5000/team/torchneuron:2.14"}, id="trn2-native-own-image-not-checked"),
    pytest.param({"trainium_job.framework": "xla", "trainium_image.base_image": _DELETE}, id="xla-track-image-by-default"),
    pytest.param({POOL + ".logical_nc_config": 1}, id="trn1-lnc-1"),
    pytest.param({"trainium_aws_endpoint_url": "http://127.0.0.1:5000"}, id="local-endpoint"),
    pytest.param({"trainium_aws_endpoint_url": ""}, id="aws-endpoint"),
    pytest.param({POOL + ".min_count": None, POOL + ".max_count": None}, id="null-min-max-mean-count"),
    pytest.param({POOL + ".taints": [{"key": "dedicated", "effect": "NoSchedule"}]}, id="taint-without-value"),
    pytest.param({POOL + ".labels": _DELETE, POOL + ".taints": _DELETE, POOL + ".root_volume_size_gib": _DELETE}, id="optional-pool-keys"),
    pytest.param({"trainium_storage": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 2400}}, id="scratch-2"),
    pytest.param({"trainium_storage": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 1200, "per_unit_storage_throughput": None}},
                 id="scratch-2-null-throughput"),
    pytest.param({"trainium_storage": {"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 4800, "per_unit_storage_throughput": 250}},
                 id="persistent-2"),
    pytest.param({"trainium_storage.data_repository_path": "s3://my-bucket/bert"}, id="s3-link"),
    pytest.param({"trainium_image.base_image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx@sha256:" + "a" * 64},
                 id="base-image-digest"),
    pytest.param({"trainium_image.base_image": "registry.local:5000/neuron/pytorch:2.1"}, id="base-image-port-and-tag"),
    pytest.param({"trainium_image.tag": "latest-rc"}, id="tag-starting-with-latest"),
    pytest.param({"trainium_dataset.source": "s3://neuron-s3/training_datasets/bert.tar", "trainium_dataset.seq_len": 512}, id="s3-dataset"),
    pytest.param({"trainium_job.steps_this_run": None}, id="steps-null"),
    pytest.param({"trainium_job.steps_this_run": 10}, id="steps-10"),
    pytest.param({"trainium_job.precision": _DELETE, "trainium_job.max_retry": _DELETE}, id="job-defaults"),
    pytest.param({"trainium_job.max_retry": 0, "trainium_job.precision": "fp32"}, id="no-retry-fp32"),
])
def test_valid_variants(changes):
    assert td.deployment_errors(_variant(**{_p(k): v for k, v in changes.items()})) == []


# --- drift between the Python rules and roles/preflight/meta/argument_specs.yml

def _preflight_options():
    spec = yaml.safe_load((REPO_ROOT / "roles" / "preflight" / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    return spec["argument_specs"]["main"]["options"]


@pytest.mark.parametrize("path, constant", [
    (("trainium_kubernetes_version",), td.KUBERNETES_VERSIONS),
    (("trainium_node_pools", "instance_type"), td.TRAINIUM_INSTANCE_TYPES),
    (("trainium_node_pools", "capacity_type"), td.CAPACITY_TYPES),
    (("trainium_storage", "deployment_type"), td.FSX_DEPLOYMENT_TYPES),
    (("trainium_job", "precision"), td.PRECISIONS),
    (("trainium_dataset", "seq_len"), td.SEQUENCE_LENGTHS),
])
def test_argument_spec_choices_match_constants(path, constant):
    options = _preflight_options()
    option = options[path[0]]
    for name in path[1:]:
        option = option["options"][name]
    assert option["choices"] == list(constant)
    if "default" in option:
        assert option["default"] in constant


def test_argument_spec_kubernetes_version_is_a_string():
    option = _preflight_options()["trainium_kubernetes_version"]
    assert option["type"] == "str"
    assert all(isinstance(choice, str) for choice in option["choices"])


def test_argument_spec_lists_every_validated_variable():
    options = _preflight_options()
    for name in BASELINE:
        assert name in options
        # The optional deployment variables: extra tags and where image digests are read.
        optional = ("trainium_tags", "trainium_image_mirrors", "trainium_registry_ca_dir")
        assert options[name].get("required", False) is (name not in optional), name
    for group in ("trainium_node_pools", "trainium_storage", "trainium_image", "trainium_dataset", "trainium_job"):
        sample = BASELINE[group][0] if group == "trainium_node_pools" else BASELINE[group]
        assert set(sample) <= set(options[group]["options"]), group


# --- the shipped inventories

INVENTORIES = ("local", "aws")


def _render(value, env):
    """Template the inventory's Jinja values as Ansible would with an empty environment (lookup('env') gives '')."""
    if isinstance(value, dict):
        return {key: _render(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_render(item, env) for item in value]
    if isinstance(value, str) and "{{" in value:
        return env.from_string(value).render()
    return value


def _inventory(name):
    path = REPO_ROOT / "inventories" / name / "group_vars" / "all" / "deployment.yml"
    env = jinja2.Environment()
    env.globals["lookup"] = lambda *args, **kwargs: ""
    return _render(yaml.safe_load(path.read_text(encoding="utf-8")), env)


@pytest.mark.parametrize("name", INVENTORIES)
def test_inventory_deployment_is_valid(name):
    variables = _inventory(name)
    assert variables.pop("trainium_aws_endpoint_url") is not None
    assert sorted(variables) == sorted(BASELINE)
    assert td.deployment_errors(variables) == []


def test_inventories_have_the_same_shape():
    local, aws = _inventory("local"), _inventory("aws")
    assert sorted(local) == sorted(aws)
    for name in ("trainium_storage", "trainium_image", "trainium_dataset", "trainium_job"):
        assert sorted(local[name]) == sorted(aws[name]), name
    assert local["trainium_region"] == aws["trainium_region"]
    assert local["trainium_kubernetes_version"] == aws["trainium_kubernetes_version"]


@pytest.mark.parametrize("tags, variable, allowed", [
    pytest.param(["team=ml"], "trainium_tags", "a mapping", id="tags-list"),
    pytest.param({"aws:createdBy": "me"}, "trainium_tags['aws:createdBy']", "does not start with 'aws:'", id="tags-aws-prefix"),
    pytest.param({"Name": "mine"}, "trainium_tags['Name']", "the collection sets those itself", id="tags-reserved-name"),
    pytest.param({"trainium.eks/cluster": "x"}, "trainium_tags['trainium.eks/cluster']", "the collection sets those itself", id="tags-reserved-cluster"),
    pytest.param({"team": 7}, "trainium_tags['team']", "a string of at most 256 characters", id="tags-int-value"),
    pytest.param({"team": "x" * 257}, "trainium_tags['team']", "a string of at most 256 characters", id="tags-long-value"),
    pytest.param({f"k{i}": "v" for i in range(41)}, "trainium_tags", "at most 40 tags", id="tags-too-many"),
])
def test_bad_tags_are_named(tags, variable, allowed):
    errors = td.deployment_errors(_variant(trainium_tags=tags))
    assert len(errors) == 1, errors
    _assert_message(errors[0], variable, allowed)


def test_good_tags_and_no_tags_are_accepted():
    assert td.deployment_errors(_variant(trainium_tags={"team": "ml-platform", "cost-center": "1234"})) == []
    assert td.deployment_errors(_variant(trainium_tags={})) == []


def test_count_zero_parks_the_pool():
    variables = _variant(**{_p(POOL + ".count"): 0})
    assert td.deployment_errors(variables) == []
    (pool,) = td.deployment_model(variables)["node_pools"]
    assert (pool["count"], pool["min_count"], pool["max_count"], pool["parked"]) == (0, 0, 1, True)
    # The job cannot run on a parked pool, but parking is not refused.
    job = dict(variables["trainium_job"], node_pool=pool["name"])
    capacity = {"instance_types": {pool["instance_type"]: {"neuron_cores": 32}}}
    assert td.job_fit_errors(job, [pool], capacity) == []
