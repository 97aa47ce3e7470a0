# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Rules of the training_data and monitoring roles (issue 11)."""

from __future__ import annotations

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as validation

IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/bert-pretrain-neuron:0.1.0-abc123"


def test_training_data_good_values_pass():
    assert not validation.training_data_problems({
        "training_data_image": IMAGE, "training_data_namespace": "training",
        "training_data_name": "bert_pretrain_wikicorpus_tokenized_hdf5_seqlen128",
        "training_data_source": "s3://neuron-s3/training_datasets/bert-pretrain/wikicorpus/sequence_length_128/x.tar",
        "training_data_seq_len": 128, "training_data_claim": "fsx-claim"})
    assert not validation.training_data_problems({"training_data_source": "synthetic"})


@pytest.mark.parametrize("name, value", [
    ("training_data_image", "bert:latest"), ("training_data_name", ".."),
    ("training_data_name", "a/b"), ("training_data_source", "https://example.com/x.tar"),
    ("training_data_source", "s3://bucket"), ("training_data_seq_len", 0), ("training_data_backoff_limit", -1),
    ("training_data_wait_timeout", 5), ("training_data_tmp_size_limit", "2G"),
])
def test_training_data_refuses(name, value):
    problems = validation.training_data_problems({name: value})
    assert any(line.startswith(name + ":") for line in problems), problems


@pytest.mark.parametrize("ranges", [[], ["0.0.0.0/0"], ["0.0.0.0/1", "128.0.0.0/1"], ["::/0"], ["10.0.0.1/16"], ["nope"], "10.0.0.0/16"])
def test_internal_lb_needs_narrow_source_ranges(ranges):
    problems = validation.monitoring_problems({"monitoring_tensorboard_service": "internal-lb",
                                               "monitoring_lb_source_ranges": ranges})
    assert any(line.startswith("monitoring_lb_source_ranges") for line in problems), problems


def test_internal_lb_with_vpc_ranges_and_clusterip_without_pass():
    assert not validation.monitoring_problems({"monitoring_tensorboard_service": "internal-lb",
                                               "monitoring_lb_source_ranges": ["10.0.0.0/16", "fd00::/48"]})
    assert not validation.monitoring_problems({"monitoring_tensorboard_service": "clusterip", "monitoring_lb_source_ranges": []})


def test_roles_are_registered():
    assert validation.ROLE_RULES["training_data"] is validation.training_data_problems
    assert validation.ROLE_RULES["monitoring"] is validation.monitoring_problems


def test_training_job_env_refuses_secret_names_without_echoing_the_value():
    problems = list(validation.training_job_problems({"training_job_env": {"HF_TOKEN": "hf_abc123", "LOG_LEVEL": "debug"}}))
    assert len(problems) == 1, problems
    assert problems[0].startswith("training_job_env.HF_TOKEN: got 'HF_TOKEN'") and "no secrets" in problems[0]
    assert "hf_abc123" not in problems[0]


def test_training_job_env_leaves_the_lnc_to_the_node_pool():
    """The pods' NEURON_LOGICAL_NC_CONFIG comes from the pool's logical_nc_config, which the nodes and the compile cache follow."""
    (line,) = validation.training_job_problems({"training_job_env": {"NEURON_LOGICAL_NC_CONFIG": "1"}})
    assert line.startswith("training_job_env.NEURON_LOGICAL_NC_CONFIG: got '1' (str); allowed: no such entry")
    assert "trainium_node_pools[].logical_nc_config" in line


@pytest.mark.parametrize("name, value, allowed", [
    ("training_job_cpu", "lots", "a Kubernetes quantity such as 124 or 500m"),
    ("training_job_memory", "448 GB", "a Kubernetes quantity such as 448Gi"),
    ("training_job_run_as_user", 0, "a user id of 1 or more (not root)"),
    ("training_job_run_as_user", "root", "a user id of 1 or more (not root)"),
    ("training_job_add_capabilities", ["IPC_LOCK"], "AUDIT_WRITE, CHOWN"),
    ("training_job_service_account", "default", "a ServiceAccount of the job's own"),
    ("training_job_service_account", "Trainers", "a ServiceAccount name"),
])
def test_training_job_pod_options_are_refused_by_the_validation_pass(name, value, allowed):
    """The worker pod options are checked before anything is created, with the rule neuron_job applies (one place)."""
    (line,) = validation.training_job_problems({name: value})
    assert line.startswith(f"{name}: got ") and allowed in line, line


def test_training_job_pod_options_of_ones_own_pass():
    assert not list(validation.training_job_problems({
        "training_job_cpu": "500m", "training_job_memory": "26Gi", "training_job_run_as_user": 1000,
        "training_job_add_capabilities": ["DAC_OVERRIDE"], "training_job_service_account": "bert.workers"}))
    assert not list(validation.training_job_problems({"training_job_service_account": "", "training_job_run_as_user": ""}))
