# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The trainium.eks filters: thin wrappers, but their argument order is what playbooks use."""

from __future__ import annotations

import pathlib

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.trainium.eks.plugins.filter import trainium as filters
from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment
from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import build_capacity_facts

POOLS = [{"name": "trn1", "instance_type": "trn1.32xlarge", "count": 2, "capacity_type": "ON_DEMAND"}]


@pytest.fixture
def capacity(ec2_instance_types, ec2_offerings, ec2_zones):
    return build_capacity_facts(["trn1.32xlarge"], ec2_instance_types, ec2_offerings, ec2_zones, [])


def test_filter_names():
    table = filters.FilterModule().filters()
    assert table == {
        "deployment_errors": filters.deployment_errors,
        "place_node_pools": filters.place_node_pools,
        "job_fit_errors": filters.job_fit_errors,
        "survey_spec": filters.survey_spec,
        "survey_defaults": filters.survey_defaults,
        "apply_survey": filters.apply_survey,
        "log_figures": filters.log_figures,
        "volcano_release_sha256": filters.volcano_release_sha256,
        "acceptance_plan": filters.acceptance_plan,
        "secrets_key_policy": filters.secrets_key_policy,
    }
    # Every filter documents itself (plugins/filter/<name>.yml, what ansible-doc -t filter reads).
    docs = pathlib.Path(filters.__file__).parent
    assert all((docs / f"{name}.yml").is_file() for name in table)


@pytest.mark.parametrize("value", [None, [], "trainium_region=us-west-2"])
def test_deployment_errors_needs_a_mapping(value):
    with pytest.raises(AnsibleFilterError, match=f"deployment_errors expects a mapping of trainium_\\* variables, got {type(value).__name__}"):
        filters.deployment_errors(value)


def test_deployment_errors_passes_through():
    variables = {"trainium_region": "us-west-2"}
    errors = filters.deployment_errors(variables)
    assert errors == trainium_deployment.deployment_errors(variables)
    assert "trainium_cluster_name: got None (null); allowed: 2-40 letters, digits and '-', starting with a letter and not ending with '-'" in errors
    assert not any(e.startswith("trainium_region:") for e in errors)


def test_place_node_pools_takes_capacity_first(capacity):
    result = filters.place_node_pools(capacity, POOLS, "us-west-2")
    assert result["errors"] == []
    assert result["node_pools"][0]["availability_zone"] == "us-west-2b"
    assert result == trainium_deployment.place_node_pools(POOLS, capacity, "us-west-2")


def test_place_node_pools_reports_region_in_errors(capacity):
    result = filters.place_node_pools(capacity, [dict(POOLS[0], instance_type="trn2.48xlarge")], "us-west-2")
    assert result["errors"] == [
        "trainium_node_pools[0].instance_type: got 'trn2.48xlarge' (str); "
        "allowed: an instance type that some availability zone of us-west-2 offers; no zone of us-west-2 offers trn2.48xlarge",
    ]


def test_job_fit_errors_takes_job_first(capacity):
    job = {"node_pool": "trn1", "nnodes": 3, "nproc_per_node": 32}
    assert filters.job_fit_errors(job, POOLS, capacity) == [
        "trainium_job.nnodes: got 3 (int); allowed: at most 2, the node count of pool 'trn1'",
    ]
    assert filters.job_fit_errors(dict(job, nnodes=2), POOLS, capacity) == []


def test_secrets_key_policy_takes_the_caller_first_and_refuses_what_is_no_caller_arn():
    policy = filters.secrets_key_policy("arn:aws:sts::111122223333:assumed-role/deployer/ci-42", ["arn:aws:iam::111122223333:role/trn-teardown"])
    assert policy["Statement"][1]["Principal"] == {"AWS": ["arn:aws:iam::111122223333:role/deployer", "arn:aws:iam::111122223333:role/trn-teardown"]}
    assert filters.secrets_key_policy("arn:aws:iam::111122223333:user/alice")["Statement"][1]["Principal"] == {
        "AWS": ["arn:aws:iam::111122223333:user/alice"]}
    with pytest.raises(AnsibleFilterError, match="caller_arn: got 'deployer'; allowed: the Arn of sts:GetCallerIdentity"):
        filters.secrets_key_policy("deployer", [])
