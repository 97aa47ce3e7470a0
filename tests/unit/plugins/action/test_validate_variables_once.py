# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""One validation per run: the validation pass records in trainium_deployment what it checked; a role's entry
with the same inputs checks nothing again, and one with other inputs is checked whole, for real, by
ansible-playbook (no service: the action calls no API)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[4]

# The role defaults are put among the variables as a role's entry has them (include_vars), then the
# entry form of the action runs: the same inputs, then one changed by set_fact.
PLAY = """
- name: The validation pass, then role entries
  hosts: trainium
  gather_facts: false
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
    - name: Entry with the same inputs
      trainium.eks.validate_variables: {{roles: [etcd]}}
      register: same
    - name: The names, as a teardown's role entry asks
      trainium.eks.validate_variables: {{scope: names}}
      register: names
    - name: Another image than the pass saw
      ansible.builtin.set_fact:
        etcd_image: {image}
    - name: Entry with other inputs
      trainium.eks.validate_variables: {{roles: [etcd]}}
      register: other
      ignore_errors: true
    - name: Write what happened down
      ansible.builtin.copy:
        content: "{{{{ {{'same': same, 'names': names, 'other': other, 'pass': contract_after_pass,
                       'after': trainium_deployment}} | to_json }}}}"
        dest: {out}
        mode: "0600"
"""


def _run(tmp_path, image):
    out = tmp_path / "out.json"
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(root=ROOT, out=out, image=json.dumps(image)), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOME=str(tmp_path / "home"))
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), str(play), "-i", "inventories/local"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


def test_the_pass_records_what_it_checked_and_an_entry_with_the_same_inputs_checks_nothing_again(tmp_path):
    got = _run(tmp_path, "quay.io/coreos/etcd:v3.5.30")
    record = got["pass"]["validation"]["roles"]
    assert sorted(record) == ["etcd", "volcano"]
    assert "etcd_image" in record["etcd"]["inputs"] and "trainium_job" not in record["etcd"]["inputs"]
    assert got["same"]["msg"] == "checked by the validation pass of this run"
    assert "ansible_facts" not in got["same"]
    assert got["names"]["msg"] == "the names of the deployment were checked by the validation pass of this run"
    # Other inputs: checked whole (a valid image passes), named, and the pass's record stays.
    assert got["other"]["msg"].startswith("etcd entered with other values than the validation pass saw (etcd_image): checked again;")
    assert not got["other"].get("failed")
    assert got["after"]["validation"] == got["pass"]["validation"]


def test_an_entry_with_other_inputs_that_break_a_rule_fails_with_the_line(tmp_path):
    got = _run(tmp_path, "public.ecr.aws/some/etcd:3.6.0")
    assert got["other"]["failed"]
    assert "etcd_image: got 'public.ecr.aws/some/etcd:3.6.0' (str); allowed: an etcd 3.5 image" in got["other"]["msg"]
