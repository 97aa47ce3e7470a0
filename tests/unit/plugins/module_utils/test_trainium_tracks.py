# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two training tracks: which family runs which, the base image each takes, and what the Job's pods get."""

from __future__ import annotations

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td
from ansible_collections.trainium.eks.plugins.module_utils import trainium_neuron_job as nj
from ansible_collections.trainium.eks.plugins.module_utils import trainium_tracks as tracks

XLA_2_29 = "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.29.1-ubuntu24.04"
NATIVE_2_33 = "public.ecr.aws/neuron/pytorch-training-neuronx:2.14.0-neuronx-py314-sdk2.33.0-ubuntu26.04"
JOB = {"name": "bert-pretrain", "namespace": "training", "queue": "test", "nnodes": 2, "nproc_per_node": 2, "node_pool": "trn"}


@pytest.mark.parametrize("itype, default, allowed", [
    ("trn1.32xlarge", "xla", ("xla",)), ("trn1n.32xlarge", "xla", ("xla",)), ("trn1.2xlarge", "xla", ("xla",)),
    ("trn2.48xlarge", "native", ("native", "xla")),
])
def test_each_family_has_its_tracks_and_default(itype, default, allowed):
    assert tracks.frameworks(itype) == allowed
    assert tracks.job_framework(JOB, [{"name": "trn", "instance_type": itype}]) == default
    assert tracks.job_framework(dict(JOB, framework="xla"), [{"name": "trn", "instance_type": itype}]) == "xla"


@pytest.mark.parametrize("image, track", [
    (XLA_2_29, "xla"), (NATIVE_2_33, "native"),
    ("public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.2-ubuntu20.04", "xla"),
    # The rehearsal's stand-in base: no PyTorch in its tag, its SDK says which DLC it stands in for.
    ("127.0.0.1:5050/rehearsal/debian-base:bookworm-busybox-1.35.0-abcdef0123-standin-sdk2.29.1", "xla"),
    ("registry.local:5000/team/torch:2.14", None),
    ("763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx@sha256:" + "a" * 64, None),
])
def test_the_track_of_an_image_comes_from_its_tag_or_is_not_known(image, track):
    assert tracks.image_framework(image) == track


def test_the_xla_track_has_its_image_and_the_native_track_needs_one():
    assert tracks.base_image("xla", {"repository": "r", "tag": "1"}) == XLA_2_29
    assert tracks.base_image("xla", {"base_image": "reg/own:1"}) == "reg/own:1"
    assert tracks.base_image("native", {}) is None
    assert tracks.base_image_problem("xla", {}) is None
    assert tracks.base_image_problem("native", {}).startswith("the training container of TorchNeuron (Neuron 2.33 or later")
    assert tracks.base_image_problem("native", {"base_image": NATIVE_2_33}) is None


def test_the_model_resolves_the_track_and_the_image():
    variables = {"trainium_cluster_name": "trn-a", "trainium_region": "us-west-2", "trainium_kubernetes_version": "1.35",
                 "trainium_node_pools": [{"name": "trn", "instance_type": "trn1.32xlarge", "count": 2}],
                 "trainium_storage": {}, "trainium_image": {"repository": "r", "tag": "1"}, "trainium_dataset": {}, "trainium_job": JOB}
    model = td.deployment_model(variables)
    assert model["job"]["framework"] == "xla" and model["image"]["base_image"] == XLA_2_29
    variables["trainium_node_pools"][0]["instance_type"] = "trn2.48xlarge"
    variables["trainium_image"]["base_image"] = NATIVE_2_33
    model = td.deployment_model(variables)
    assert model["job"]["framework"] == "native" and model["image"]["base_image"] == NATIVE_2_33
    assert "framework" not in variables["trainium_job"]


def _env(job):
    task = job["spec"]["tasks"][0]
    return {e["name"]: e.get("value") for e in task["template"]["spec"]["containers"][0]["env"]}


PARAMS = {"name": "bert", "namespace": "training", "queue": "test", "image": "reg/bert:1", "script": "/opt/trainium-eks/train_bert.py",
          "script_args": [], "nnodes": 1, "nproc_per_node": 2, "instance_type": "trn2.48xlarge", "rdzv_backend": "etcd",
          "cacheset": "c", "claim_name": "fsx-claim", "mount_path": "/data", "max_retry": 3, "mode": "train", "labels": {},
          "tolerations": [], "node_selector": {}, "env": {}, "state": "present"}


@pytest.mark.parametrize("bf16", [True, False])
def test_the_native_track_renders_no_xla_variable_and_names_its_track(bf16):
    native = _env(nj.render(dict(PARAMS, framework="native", bf16=bf16)))
    xla = _env(nj.render(dict(PARAMS, framework="xla", bf16=bf16)))
    assert not [name for name in native if name.startswith("XLA_")]
    assert native["TRAINIUM_EKS_FRAMEWORK"] == "native" and "TRAINIUM_EKS_FRAMEWORK" not in xla
    assert xla["XLA_TRANSFER_SEED_ASYNC"] == "1" and ("XLA_DOWNCAST_BF16" in xla) is bf16
    assert (native.get("NEURON_RT_STOCHASTIC_ROUNDING_EN"), native.get("TRAINIUM_EKS_BF16")) == (("1", "1") if bf16 else (None, None))
    # What both tracks share stays: the EFA provider, the per-node compile cache, the LNC of trn2.
    for env in (native, xla):
        assert env["FI_PROVIDER"] == "efa" and env["NEURON_CC_FLAGS"] == "--cache_dir=/data/neuron_cache/c_0"
        assert env["NEURON_LOGICAL_NC_CONFIG"] == "2"


def test_a_precompile_on_the_native_track_is_refused():
    found = nj.problems(dict(PARAMS, framework="native", mode="precompile", steps_this_run=5))
    assert found == ["mode: got 'precompile' with framework 'native'; allowed: train (neuron_parallel_compile is "
                     "PyTorch/XLA's tool; TorchNeuron compiles on first use)"]
    assert nj.problems(dict(PARAMS, framework="xla", mode="precompile", steps_this_run=5)) == []
