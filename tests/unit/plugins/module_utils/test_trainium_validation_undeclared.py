# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Undeclared variables: a name with the prefix of a role of this collection or trainium_ that nothing
declares is refused by the validation pass, one line each, with the closest declared name."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import DEPLOYMENT_VARIABLES

ROOT = pathlib.Path(__file__).resolve().parents[4]
ROLES = sorted(path.name for path in (ROOT / "roles").iterdir() if (path / "meta" / "argument_specs.yml").is_file())


def _declared():
    names = set(DEPLOYMENT_VARIABLES)
    for role in ROLES:
        specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        for entry in specs.values():
            names.update((entry or {}).get("options") or {})
    return names


DECLARED = _declared()

# (misspelled name, the declared name the line must suggest): ten roles' prefixes and trainium_.
MISSPELLINGS = [
    ("fsx_lustre_storage_capacity", "fsx_lustre_storage_capacity_gib"),
    ("fsx_lustre_storage_capacity_gb", "fsx_lustre_storage_capacity_gib"),
    ("eks_cluster_loging", "eks_cluster_logging"),
    ("network_vpc_cdr", "network_vpc_cidr"),
    ("etcd_imagee", "etcd_image"),
    ("volcano_versoin", "volcano_version"),
    ("fsx_csi_namespce", "fsx_csi_namespace"),
    ("trn_nodegroup_ami_typ", "trn_nodegroup_ami_type"),
    ("monitoring_tensorbord_image", "monitoring_tensorboard_image"),
    ("training_job_timout", "training_job_wait_timeout"),
    ("trainium_regon", "trainium_region"),
    ("trainium_kubernetes_verison", "trainium_kubernetes_version"),
]


def test_the_examples_are_really_misspellings_of_declared_names():
    assert {pair[1] for pair in MISSPELLINGS} <= DECLARED
    assert not {pair[0] for pair in MISSPELLINGS} & DECLARED
    # At least six roles' prefixes besides trainium_ (the issue's bar).
    owners = {tv._owner(pair[0], ROLES) for pair in MISSPELLINGS} - {None}
    assert len(owners) >= 6, owners


@pytest.mark.parametrize("wrong, right", MISSPELLINGS)
def test_a_misspelled_name_is_refused_with_the_closest_declared_name(wrong, right):
    lines = tv.undeclared_problems({wrong: 1, right: 2}, DECLARED, ROLES)
    assert lines == [f"{wrong}: not a variable of this collection; did you mean {right}?"]


def test_every_problem_is_one_line_sorted_and_values_are_never_printed():
    names = {pair[0]: f"secret-{index}" for index, pair in enumerate(MISSPELLINGS)}
    lines = tv.undeclared_problems(names, DECLARED, ROLES)
    assert [line.split(":", 1)[0] for line in lines] == sorted(names)
    assert not any("secret-" in line or "\n" in line for line in lines)


def test_names_without_a_prefix_of_this_collection_are_left_alone():
    names = ["ansible_python_interpreter", "aws_region", "kube_version", "fsx_size", "awx_setup_project_url",
             "inventory_hostname", "trainium", "network", "etcdctl_api"]
    assert tv.undeclared_problems(names, DECLARED, ROLES) == []


def test_declared_names_pass_playbook_inputs_and_survey_answers_too():
    names = sorted(DECLARED) + list(tv.PLAYBOOK_VARIABLES) + ["trainium_survey_node_count", "trainium_survey_max_steps"]
    assert tv.undeclared_problems(names, DECLARED, ROLES) == []


def test_the_longest_role_prefix_owns_a_name():
    assert tv._owner("fsx_lustre_foo", ROLES) == "fsx_lustre"
    assert tv._owner("fsx_csi_foo", ROLES) == "fsx_csi"
    assert tv._owner("training_job_foo", ROLES) == "training_job"
    assert tv._owner("training_foo", ROLES) is None


def test_a_name_with_nothing_close_says_where_the_role_variables_are():
    assert tv.undeclared_problems(["etcd_data_dir"], DECLARED, ROLES) == [
        "etcd_data_dir: not a variable of this collection; role etcd's variables are in roles/etcd/README.md "
        "(a name of something else: list it in trainium_other_variables)"]
    assert tv.undeclared_problems(["trainium_zzzzzz"], DECLARED, ROLES) == [
        "trainium_zzzzzz: not a variable of this collection; the deployment variables are in docs/variables.md "
        "(a name of something else: list it in trainium_other_variables)"]


def test_names_listed_as_something_else_are_left_alone():
    assert tv.undeclared_problems(["etcd_data_dir", "etcd_imagee"], DECLARED, ROLES, ignored=["etcd_data_dir"]) == [
        "etcd_imagee: not a variable of this collection; did you mean etcd_image?"]


def test_a_fact_the_collection_sets_is_not_an_input():
    assert tv.undeclared_problems(["trainium_deployment"], DECLARED | {"trainium_deployment"}, ROLES) == [
        "trainium_deployment: set by the validation pass, not an input; remove it from the inventory and the extra variables"]


def test_another_roles_variable_under_a_wrong_prefix_is_suggested():
    # The whole name is compared with other roles' variables only when it is very close.
    lines = tv.undeclared_problems(["training_job_imag"], DECLARED | {"training_job_image_x"}, ROLES)
    assert lines and lines[0].startswith("training_job_imag: not a variable of this collection;")


def test_every_playbook_input_is_read_by_a_playbook_or_role():
    text = "\n".join(path.read_text() for pattern in ("playbooks/**/*.yml", "roles/**/*.yml", "site.yml")
                     for path in ROOT.glob(pattern))
    assert [name for name in tv.PLAYBOOK_VARIABLES if name not in text] == []
    assert not set(tv.PLAYBOOK_VARIABLES) & DECLARED


def test_the_shipped_inventories_declare_nothing_unknown():
    names = set()
    for path in list(ROOT.glob("inventories/*/group_vars/**/*.yml")) + list(ROOT.glob("molecule/**/group_vars/**/*.yml")):
        names.update(yaml.safe_load(path.read_text()) or {})
    assert names, "no inventory variables found"
    assert tv.undeclared_problems(names, DECLARED, ROLES) == []


def test_site_yml_refuses_misspelled_names_before_any_stage_runs(tmp_path):
    """The whole entry point: rc 2, one line per name, and no play after the validation pass started."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path), ANSIBLE_HOME=str(tmp_path / "home"))
    # An AWS endpoint that nothing listens on: a call would fail with a connection error, not the lines below.
    extra = ["-e", "trainium_aws_endpoint_url=http://127.0.0.1:9"]
    for pair in MISSPELLINGS:
        extra += ["-e", f"{pair[0]}=1"]
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "site.yml", "-i", "inventories/local", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert f"{len(MISSPELLINGS)} problem(s) in the variables; nothing was created:" in out
    for wrong, right in MISSPELLINGS:
        assert f"{wrong}: not a variable of this collection; did you mean {right}?" in out
    assert "PLAY [Preflight" not in out and "PLAY [Infrastructure" not in out
