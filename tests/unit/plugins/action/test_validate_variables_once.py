# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""One validation per run: the validation pass records in trainium_deployment what it checked (digests of the
resolved values, bound to this run); a role's entry whose values resolve the same checks nothing again, one
with other values is checked whole, and a record that did not come from this run's pass counts for nothing.
Run for real by ansible-playbook (no service: the action calls no API)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[4]

# The role defaults are put among the variables as a role's entry has them (include_vars), then the
# entry form of the action runs: the same values, then an image changed behind a template (set_fact on
# the variable the template reads), then a second pass in the same run.
PLAY = """
- name: The validation pass, then role entries
  hosts: trainium
  gather_facts: false
  vars:
    my_image: quay.io/coreos/etcd:v3.5.30
  tasks:
    - name: The pass
      trainium.eks.validate_variables:
        roles: [etcd, volcano]
        refuse_undeclared: true
    - name: The contract as the pass left it
      ansible.builtin.set_fact:
        contract_after_pass: "{{{{ trainium_deployment }}}}"
    - name: The etcd role's defaults, as at its entry
      ansible.builtin.include_vars:
        file: {root}/roles/etcd/defaults/main.yml
    - name: Entry with the same values
      trainium.eks.validate_variables: {{roles: [etcd]}}
      register: same
    - name: The names, as a teardown's role entry asks
      trainium.eks.validate_variables: {{scope: names}}
      register: names
    - name: Another image than the pass saw, behind the template the inventory gives
      ansible.builtin.set_fact:
        my_image: {image}
    - name: Entry with other values
      trainium.eks.validate_variables: {{roles: [etcd]}}
      register: other
      ignore_errors: true
    - name: A second pass in the same run, with the run's facts and registered variables about
      trainium.eks.validate_variables:
        roles: [etcd]
        refuse_undeclared: true
      register: again
      ignore_errors: true
    - name: Write what happened down
      ansible.builtin.copy:
        content: "{{{{ {{'same': same, 'names': names, 'other': other, 'again': again, 'pass': contract_after_pass,
                       'after': trainium_deployment}} | to_json }}}}"
        dest: {out}
        mode: "0600"
"""


def _playbook(tmp_path, text, *extra):
    play = tmp_path / "play.yml"
    play.write_text(text, encoding="utf-8")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOME=str(tmp_path / "home"))
    return subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), str(play), "-i", "inventories/local", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def _run(tmp_path, image):
    out = tmp_path / "out.json"
    done = _playbook(tmp_path, PLAY.format(root=ROOT, out=out, image=json.dumps(image)), "-e", "etcd_image={{ my_image }}")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


def test_the_pass_records_what_it_checked_and_an_entry_with_the_same_values_checks_nothing_again(tmp_path):
    got = _run(tmp_path, "quay.io/coreos/etcd:v3.5.31")
    record = got["pass"]["validation"]
    assert sorted(record["roles"]) == ["etcd", "volcano"]
    assert isinstance(record["run"], int) and record["deployment"]
    assert "etcd_image" in record["roles"]["etcd"]["values"] and "trainium_job" not in record["roles"]["etcd"]["values"]
    assert got["same"]["msg"] == "checked by the validation pass of this run"
    assert "ansible_facts" not in got["same"]
    assert got["names"]["msg"] == "the names of the deployment were checked by the validation pass of this run"
    # Another resolved value (the template's input changed): checked whole (a valid image passes) and named.
    assert got["other"]["msg"].startswith("etcd entered with other values than the validation pass saw (etcd_image): checked again;")
    assert not got["other"].get("failed")
    # The value checked joins the record, the rest of the record and the run stay.
    assert got["after"]["validation"]["run"] == record["run"]
    assert got["after"]["validation"]["roles"]["volcano"] == record["roles"]["volcano"]
    assert got["after"]["validation"]["roles"]["etcd"] != record["roles"]["etcd"]
    # A second pass in the same run does not take the run's own facts and registered variables for misspellings.
    assert not got["again"].get("failed"), got["again"]["msg"]


def test_an_entry_whose_value_breaks_a_rule_fails_with_the_line_and_says_what_differs(tmp_path):
    got = _run(tmp_path, "public.ecr.aws/some/etcd:3.6.0")
    assert got["other"]["failed"]
    assert got["other"]["msg"].startswith("etcd entered with other values than the validation pass saw (etcd_image)")
    assert "etcd_image: got 'public.ecr.aws/some/etcd:3.6.0' (str); allowed: an etcd 3.5 image" in got["other"]["msg"]


FORGED = """
- name: A record that no validation pass of this run made
  hosts: trainium
  gather_facts: false
  vars:
    trainium_deployment:
      cluster_name: someone-elses-cluster
      validation: {{run: {run}, deployment: x, roles: {{etcd: {{values: {{}}}}}}}}
  tasks:
    - name: A teardown's names check
      trainium.eks.validate_variables: {{scope: names}}
      register: names
    - name: A role's entry with a bad image
      trainium.eks.validate_variables: {{roles: [etcd]}}
      register: entry
      ignore_errors: true
    - name: Write what happened down
      ansible.builtin.copy:
        content: "{{{{ {{'names': names, 'entry': entry}} | to_json }}}}"
        dest: {out}
        mode: "0600"
"""


def test_a_record_from_play_vars_is_no_record(tmp_path):
    out = tmp_path / "out.json"
    done = _playbook(tmp_path, FORGED.format(run=os.getpid(), out=out), "-e", "etcd_image=quay.io/coreos/etcd:latest")
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(out.read_text())
    assert got["names"]["msg"] == "the names of the deployment are valid"
    assert got["entry"]["failed"] and "etcd_image: got 'quay.io/coreos/etcd:latest' (str)" in got["entry"]["msg"]


def test_a_mapping_with_keys_of_mixed_types_gets_its_problem_line_not_a_crash(tmp_path):
    out = tmp_path / "out.json"
    play = """
- name: A role variable with keys of mixed types
  hosts: trainium
  gather_facts: false
  tasks:
    - name: The pass
      trainium.eks.validate_variables:
        roles: [training_job]
        refuse_undeclared: true
      register: checked
      ignore_errors: true
    - name: Write what happened down
      ansible.builtin.copy: {{content: "{{{{ checked | to_json }}}}", dest: {out}, mode: "0600"}}
"""
    extra = tmp_path / "extra.yml"
    extra.write_text("training_job_env: {1: a, B: c}\n", encoding="utf-8")
    done = _playbook(tmp_path, play.format(out=out), "-e", f"@{extra}")
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(out.read_text())
    # The rule's own line (an environment variable name is a string), not a TypeError from sorting the keys.
    assert got.get("failed") and "not supported between" not in got["msg"], got
    assert "training_job_env.1: got 1 (int); allowed:" in got["msg"], got


RULES_PLAY = """
- name: The rules of roles that read deployment variables their specs do not declare
  hosts: trainium
  gather_facts: false
  tasks:
    - name: The pass
      trainium.eks.validate_variables:
        roles: [volcano, neuron_device_plugin, efa_device_plugin]
"""

NAMES_PLAY = """
- name: A teardown's check of the names
  hosts: trainium
  gather_facts: false
  tasks:
    - name: Names only
      trainium.eks.validate_variables: {scope: names}
"""

ALL_PLAY = """
- name: The validation pass
  hosts: trainium
  gather_facts: false
  tasks:
    - name: Everything
      trainium.eks.validate_variables: {roles: []}
"""


def test_role_rules_see_the_deployment_variables_through_the_action(tmp_path):
    """The volcano rule reads trainium_kubernetes_version, the device plugins' rules trainium_node_pools: the pass hands
    them the deployment variables although the roles' specs do not declare them (a rule that never saw them passed)."""
    changes = {"trainium_kubernetes_version": "1.36", "volcano_version": "v1.15.1", "volcano_allow_unsupported_kubernetes": False,
               "trainium_node_pools": [{"name": "trn1", "instance_type": "trn2.48xlarge", "count": 2}],
               # trn2 runs the native track: an image of its own (not checked by tag) instead of the inventory's XLA one.
               "trainium_image": {"repository": "bert-pretrain-neuron", "tag": "0.1.0", "base_image": "registry.local:5000/team/torchneuron:2.14"},
               "neuron_device_plugin_instance_types": ["trn1.32xlarge"]}
    done = _playbook(tmp_path, RULES_PLAY, "-e", json.dumps(changes))
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "2 problem(s) in the variables; nothing was created" in output
    assert ("trainium_kubernetes_version: got '1.36' (str); allowed: a version that Volcano v1.15.1 (volcano_version) supports, "
            "1.24 to 1.35") in output
    assert "neuron_device_plugin_instance_types: got ['trn1.32xlarge'] (list); allowed: a list that holds trn2.48xlarge" in output


def test_a_teardown_is_not_stopped_by_a_node_group_name_too_long_to_create(tmp_path):
    changes = {"trainium_cluster_name": "T" + "x" * 39,
               "trainium_node_pools": [{"name": "p" * 23, "instance_type": "trn1.32xlarge", "count": 1}],
               "trainium_job": {"name": "bert", "namespace": "training", "queue": "test", "node_pool": "p" * 23, "nnodes": 1,
                                "nproc_per_node": 32, "batch_size": 16, "grad_accum_usteps": 32}}
    done = _playbook(tmp_path, NAMES_PLAY, "-e", json.dumps(changes))
    assert done.returncode == 0, done.stdout + done.stderr
    done = _playbook(tmp_path, ALL_PLAY, "-e", json.dumps(changes))
    assert done.returncode != 0 and "(EKS CreateNodegroup, nodegroupName)" in done.stdout + done.stderr, done.stdout + done.stderr
