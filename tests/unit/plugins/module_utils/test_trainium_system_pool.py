# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium_system_node_pool, trainium_kubeconfig and trainium_job.rdzv_backend: their problem
lines, what deployment_model makes of them, and the system_nodegroup role's own rule."""

from __future__ import annotations

import copy
import pathlib

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td
from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv

ROOT = pathlib.Path(td.__file__).resolve().parents[2]

# A valid deployment without trainium_system_node_pool or trainium_kubeconfig.
BASELINE = {
    "trainium_cluster_name": "trn-bert",
    "trainium_region": "us-west-2",
    "trainium_kubernetes_version": "1.34",
    "trainium_node_pools": [{"name": "trn1", "instance_type": "trn1.32xlarge", "count": 2}],
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
    },
    "trainium_tags": {"team": "ml-platform"},
}

KEYS = "the keys enabled, instance_type, count, root_volume_size_gib"
KUBECONFIG_ALLOWED = "the path of the cluster's kubeconfig, or leave it unset for ~/.kube/<trainium_cluster_name>.yaml"


def _variables(**changes):
    variables = copy.deepcopy(BASELINE)
    variables.update(copy.deepcopy(changes))
    return variables


def _job(**changes):
    return dict(copy.deepcopy(BASELINE["trainium_job"]), **changes)


# --- deployment_errors: one bad value, one exact line

@pytest.mark.parametrize("changes, line", [
    pytest.param({"trainium_system_node_pool": {"enabled": "yes"}},
                 "trainium_system_node_pool.enabled: got 'yes' (str); allowed: true or false", id="enabled-string"),
    pytest.param({"trainium_system_node_pool": {"enabled": 1}},
                 "trainium_system_node_pool.enabled: got 1 (int); allowed: true or false", id="enabled-int"),
    pytest.param({"trainium_system_node_pool": {"instance_type": "trn1.32xlarge"}},
                 "trainium_system_node_pool.instance_type: got 'trn1.32xlarge' (str); allowed: a CPU instance type such as 'm7i.large' "
                 "(Trainium types go in trainium_node_pools)", id="trainium-type"),
    pytest.param({"trainium_system_node_pool": {"instance_type": "trn2.48xlarge"}},
                 "trainium_system_node_pool.instance_type: got 'trn2.48xlarge' (str); allowed: a CPU instance type such as 'm7i.large' "
                 "(Trainium types go in trainium_node_pools)", id="trainium2-type"),
    pytest.param({"trainium_system_node_pool": {"instance_type": "M7i.large"}},
                 "trainium_system_node_pool.instance_type: got 'M7i.large' (str); allowed: an EC2 instance type such as 'm7i.large'",
                 id="instance-type-uppercase"),
    pytest.param({"trainium_system_node_pool": {"instance_type": "m7i"}},
                 "trainium_system_node_pool.instance_type: got 'm7i' (str); allowed: an EC2 instance type such as 'm7i.large'",
                 id="instance-type-no-size"),
    pytest.param({"trainium_system_node_pool": {"instance_type": ""}},
                 "trainium_system_node_pool.instance_type: got '' (str); allowed: an EC2 instance type such as 'm7i.large'",
                 id="instance-type-empty"),
    pytest.param({"trainium_system_node_pool": {"count": 0}},
                 "trainium_system_node_pool.count: got 0 (int); allowed: an integer from 1 to 10", id="count-0"),
    pytest.param({"trainium_system_node_pool": {"count": 11}},
                 "trainium_system_node_pool.count: got 11 (int); allowed: an integer from 1 to 10", id="count-11"),
    pytest.param({"trainium_system_node_pool": {"count": "2"}},
                 "trainium_system_node_pool.count: got '2' (str); allowed: an integer from 1 to 10", id="count-string"),
    pytest.param({"trainium_system_node_pool": {"count": True}},
                 "trainium_system_node_pool.count: got True (bool); allowed: an integer from 1 to 10", id="count-bool"),
    pytest.param({"trainium_system_node_pool": {"root_volume_size_gib": 19}},
                 "trainium_system_node_pool.root_volume_size_gib: got 19 (int); allowed: an integer from 20 to 16384", id="root-volume-19"),
    pytest.param({"trainium_system_node_pool": {"size": 3}},
                 f"trainium_system_node_pool: got 'size' (str); allowed: {KEYS}", id="unknown-key"),
    pytest.param({"trainium_system_node_pool": {"size": 3, "min_count": 1, "count": 3}},
                 f"trainium_system_node_pool: got 'min_count, size' (str); allowed: {KEYS}", id="unknown-keys-sorted"),
    pytest.param({"trainium_system_node_pool": ["m7i.large"]},
                 "trainium_system_node_pool: got ['m7i.large'] (list); allowed: a mapping", id="pool-list"),
    pytest.param({"trainium_system_node_pool": False},
                 "trainium_system_node_pool: got False (bool); allowed: a mapping", id="pool-bool"),
    pytest.param({"trainium_kubeconfig": ""}, f"trainium_kubeconfig: got '' (str); allowed: {KUBECONFIG_ALLOWED}", id="kubeconfig-empty"),
    pytest.param({"trainium_kubeconfig": "   "}, f"trainium_kubeconfig: got '   ' (str); allowed: {KUBECONFIG_ALLOWED}", id="kubeconfig-blank"),
    pytest.param({"trainium_kubeconfig": ["~/.kube/a"]},
                 f"trainium_kubeconfig: got ['~/.kube/a'] (list); allowed: {KUBECONFIG_ALLOWED}", id="kubeconfig-list"),
    pytest.param({"trainium_job": _job(rdzv_backend="gloo")},
                 "trainium_job.rdzv_backend: got 'gloo' (str); allowed: one of etcd, etcd-v2, c10d", id="rdzv-backend-gloo"),
    pytest.param({"trainium_job": _job(rdzv_backend="ETCD")},
                 "trainium_job.rdzv_backend: got 'ETCD' (str); allowed: one of etcd, etcd-v2, c10d", id="rdzv-backend-uppercase"),
    pytest.param({"trainium_job": _job(rdzv_backend=None)},
                 "trainium_job.rdzv_backend: got None (null); allowed: one of etcd, etcd-v2, c10d", id="rdzv-backend-null"),
])
def test_one_bad_value_gives_its_exact_line(changes, line):
    assert td.deployment_errors(_variables(**changes)) == [line]


@pytest.mark.parametrize("itype", ["m7g.large", "c6gn.xlarge", "r8gd.large", "t4g.medium", "im4gn.large", "a1.large"])
def test_graviton_types_are_refused_for_the_x86_64_system_pool(itype):
    assert td.deployment_errors(_variables(trainium_system_node_pool={"instance_type": itype})) == [
        f"trainium_system_node_pool.instance_type: got {itype!r} (str); allowed: an x86_64 instance type such as 'm7i.large' "
        "(the system pool runs the AL2023 x86_64 AMI; Graviton types are not supported)"]


@pytest.mark.parametrize("itype", ["m7i.large", "c7i.xlarge", "g5.xlarge", "m5a.large", "t3.medium", "m7i-flex.large"])
def test_x86_64_types_are_accepted_for_the_system_pool(itype):
    assert td.deployment_errors(_variables(trainium_system_node_pool={"instance_type": itype})) == []


def test_a_trainium_pool_named_system_is_refused():
    pools = [dict(BASELINE["trainium_node_pools"][0], name="system")]
    errors = td.deployment_errors(_variables(trainium_node_pools=pools, trainium_job=_job(node_pool="system")))
    assert errors == [
        "trainium_node_pools[0].name: got 'system' (str); allowed: a name other than 'system' "
        "(the CPU node pool of trainium_system_node_pool)",
    ]


def test_the_name_system_is_refused_even_with_the_system_pool_disabled():
    pools = [dict(BASELINE["trainium_node_pools"][0], name="system")]
    errors = td.deployment_errors(_variables(trainium_node_pools=pools, trainium_job=_job(node_pool="system"),
                                             trainium_system_node_pool={"enabled": False}))
    assert [line.split(": got ", 1)[0] for line in errors] == ["trainium_node_pools[0].name"]


def test_every_problem_of_the_system_pool_is_reported_in_order():
    errors = td.deployment_errors(_variables(trainium_system_node_pool={
        "enabled": "no", "instance_type": "trn1.2xlarge", "count": 0, "root_volume_size_gib": 10, "zones": 2}))
    assert [line.split(": got ", 1)[0] for line in errors] == [
        "trainium_system_node_pool",
        "trainium_system_node_pool.enabled",
        "trainium_system_node_pool.instance_type",
        "trainium_system_node_pool.count",
        "trainium_system_node_pool.root_volume_size_gib",
    ]


@pytest.mark.parametrize("changes", [
    pytest.param({}, id="unset"),
    pytest.param({"trainium_system_node_pool": None}, id="null"),
    pytest.param({"trainium_system_node_pool": {}}, id="empty-mapping"),
    pytest.param({"trainium_system_node_pool": {"enabled": False}}, id="disabled"),
    pytest.param({"trainium_system_node_pool": {"count": None, "instance_type": None}}, id="null-keys-mean-defaults"),
    pytest.param({"trainium_system_node_pool": {"count": 1}}, id="count-1"),
    pytest.param({"trainium_system_node_pool": {"count": 10}}, id="count-10"),
    pytest.param({"trainium_system_node_pool": {"instance_type": "c7i.xlarge", "root_volume_size_gib": 20}}, id="other-type-smallest-root"),
    pytest.param({"trainium_system_node_pool": {"instance_type": "m6i.2xlarge", "count": 3, "enabled": True, "root_volume_size_gib": 100}},
                 id="every-key"),
    pytest.param({"trainium_kubeconfig": None}, id="kubeconfig-null"),
    pytest.param({"trainium_kubeconfig": "/etc/trn/kubeconfig.yaml"}, id="kubeconfig-path"),
    pytest.param({"trainium_job": _job(rdzv_backend="etcd")}, id="rdzv-etcd"),
    pytest.param({"trainium_job": _job(rdzv_backend="etcd-v2")}, id="rdzv-etcd-v2"),
    pytest.param({"trainium_job": _job(rdzv_backend="c10d")}, id="rdzv-c10d"),
])
def test_valid_values_give_no_problem(changes):
    assert td.deployment_errors(_variables(**changes)) == []


def test_the_new_variables_are_deployment_variables_and_documented():
    assert "trainium_system_node_pool" in td.DEPLOYMENT_VARIABLES
    assert "trainium_kubeconfig" in td.DEPLOYMENT_VARIABLES
    spec = yaml.safe_load((ROOT / "roles" / "preflight" / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    options = spec["argument_specs"]["main"]["options"]
    assert options["trainium_system_node_pool"]["type"] == "dict"
    assert not options["trainium_system_node_pool"].get("required", False)
    assert options["trainium_kubeconfig"]["type"] == "str"
    assert not options["trainium_kubeconfig"].get("required", False)
    for key in td.SYSTEM_POOL_DEFAULTS:
        assert f"C({key})" in " ".join(options["trainium_system_node_pool"]["description"]), key
    assert options["trainium_job"]["options"]["rdzv_backend"].get("choices", list(td.RDZV_BACKENDS)) == list(td.RDZV_BACKENDS)


# --- deployment_model

def test_model_applies_the_system_pool_defaults():
    model = td.deployment_model(_variables())
    assert model["system_node_pool"] == {
        "enabled": True,
        "instance_type": "m7i.large",
        "count": 2,
        "root_volume_size_gib": 50,
        "name": "system",
        "resource_name": "trn-bert-system",
        "min_count": 2,
        "max_count": 2,
        "labels": {"trainium.eks/pool": "system"},
        "tags": {"team": "ml-platform", "trainium.eks/cluster": "trn-bert", "ManagedBy": "trainium.eks", "Name": "trn-bert-system"},
    }


def test_model_keeps_the_overrides_and_fills_the_rest():
    model = td.deployment_model(_variables(trainium_system_node_pool={"instance_type": "c7i.xlarge", "count": 3, "root_volume_size_gib": None}))
    pool = model["system_node_pool"]
    assert (pool["enabled"], pool["instance_type"], pool["count"], pool["root_volume_size_gib"]) == (True, "c7i.xlarge", 3, 50)
    assert (pool["min_count"], pool["max_count"]) == (3, 3)
    assert pool["resource_name"] == "trn-bert-system"


def test_model_of_a_disabled_pool_still_names_it_for_the_teardown():
    pool = td.deployment_model(_variables(trainium_system_node_pool={"enabled": False}))["system_node_pool"]
    assert pool["enabled"] is False
    assert pool["resource_name"] == "trn-bert-system"
    assert pool["labels"] == {"trainium.eks/pool": "system"}
    assert pool["tags"]["Name"] == "trn-bert-system"


def test_model_system_pool_tags_are_the_deployment_tags_with_its_name():
    model = td.deployment_model(_variables(trainium_tags=None))
    assert model["system_node_pool"]["tags"] == dict(model["tags"], Name="trn-bert-system")
    assert "Name" not in model["tags"]


def test_model_does_not_change_the_variables():
    variables = _variables(trainium_system_node_pool={"count": 3})
    td.deployment_model(variables)
    assert variables["trainium_system_node_pool"] == {"count": 3}
    assert td.SYSTEM_POOL_DEFAULTS == {"enabled": True, "instance_type": "m7i.large", "count": 2, "root_volume_size_gib": 50}


@pytest.mark.parametrize("value, expected", [
    pytest.param(None, "~/.kube/trn-bert.yaml", id="unset"),
    pytest.param("/srv/kube/trn.yaml", "/srv/kube/trn.yaml", id="override"),
    pytest.param("~/clusters/trn-bert", "~/clusters/trn-bert", id="override-home"),
])
def test_model_kubeconfig(value, expected):
    variables = _variables() if value is None else _variables(trainium_kubeconfig=value)
    assert td.deployment_model(variables)["kubeconfig"] == expected


def test_model_job_rdzv_backend_defaults_to_etcd_and_keeps_a_choice():
    assert td.deployment_model(_variables())["job"]["rdzv_backend"] == "etcd"
    assert td.deployment_model(_variables(trainium_job=_job(rdzv_backend="c10d")))["job"]["rdzv_backend"] == "c10d"


# --- the system_nodegroup role's rule (validation pass)

def _role_spec(role):
    data = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    return data["argument_specs"]["main"]["options"]


def _role_defaults(role):
    values = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text(encoding="utf-8")) or {}
    # Templated defaults are resolved by the action plugin; here only literal ones are checked.
    return {k: v for k, v in values.items() if not (isinstance(v, str) and "{{" in v)}


def _system_problems(**changes):
    values = dict(_role_defaults("system_nodegroup"), **BASELINE, **changes)
    return tv.role_problems("system_nodegroup", _role_spec("system_nodegroup"), values)


def test_system_nodegroup_rule_is_registered():
    assert tv.ROLE_RULES["system_nodegroup"] is tv.system_nodegroup_problems


@pytest.mark.parametrize("hop_limit", [1, 2, 64, "1", "64"])
def test_hop_limit_in_range_is_accepted(hop_limit):
    assert _system_problems(system_nodegroup_metadata_hop_limit=hop_limit) == []


@pytest.mark.parametrize("hop_limit, line", [
    (0, "system_nodegroup_metadata_hop_limit: got 0 (int); allowed: an integer from 1 to 64"),
    (65, "system_nodegroup_metadata_hop_limit: got 65 (int); allowed: an integer from 1 to 64"),
    (-1, "system_nodegroup_metadata_hop_limit: got -1 (int); allowed: an integer from 1 to 64"),
    # Extra vars come as strings: converted as Ansible does, then checked.
    ("99", "system_nodegroup_metadata_hop_limit: got 99 (int); allowed: an integer from 1 to 64"),
])
def test_hop_limit_out_of_range_gives_one_line(hop_limit, line):
    assert _system_problems(system_nodegroup_metadata_hop_limit=hop_limit) == [line]


def test_hop_limit_that_is_no_integer_is_refused_once_by_the_spec():
    (line,) = _system_problems(system_nodegroup_metadata_hop_limit="two")
    assert line.startswith("system_nodegroup_metadata_hop_limit: got 'two' (str); allowed: an integer"), line


def test_rule_alone_checks_the_hop_limit():
    assert tv.system_nodegroup_problems({"system_nodegroup_metadata_hop_limit": 1}) == []
    assert tv.system_nodegroup_problems({}) == ["system_nodegroup_metadata_hop_limit: got None (null); allowed: an integer from 1 to 64"]


def test_validation_problems_gives_the_deployment_lines_then_the_role_lines():
    deployment = _variables(trainium_system_node_pool={"count": 0})
    values = dict(_role_defaults("system_nodegroup"), **deployment, system_nodegroup_metadata_hop_limit=65)
    lines = tv.validation_problems(deployment, [("system_nodegroup", _role_spec("system_nodegroup"), values)])
    assert lines == [
        "trainium_system_node_pool.count: got 0 (int); allowed: an integer from 1 to 10",
        "system_nodegroup_metadata_hop_limit: got 65 (int); allowed: an integer from 1 to 64",
    ]


def test_validation_problems_of_valid_system_nodegroup_values_is_empty():
    deployment = _variables(trainium_system_node_pool={"enabled": False}, trainium_kubeconfig="/tmp/k.yaml")
    values = dict(_role_defaults("system_nodegroup"), **deployment)
    assert tv.validation_problems(deployment, [("system_nodegroup", _role_spec("system_nodegroup"), values)]) == []


@pytest.mark.parametrize("change, line", [
    ({"system_nodegroup_state": "gone"}, "system_nodegroup_state: got 'gone' (str); allowed: one of present, absent"),
    ({"system_nodegroup_ami_type": "AL2_x86_64"}, "system_nodegroup_ami_type: got 'AL2_x86_64' (str)"),
    ({"system_nodegroup_wait_delay": 0}, "system_nodegroup_wait_delay: got 0 (int); allowed: an integer from 1 to 600"),
])
def test_other_role_variables_are_checked_by_the_spec(change, line):
    (found,) = _system_problems(**change)
    assert found.startswith(line), found
