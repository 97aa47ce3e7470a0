# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test suite's strategy (tools/ansible/strategy/mitogen_linear.py, docs/testing.md): the playbook runs of the
suite and of Molecule name it, it really runs modules in one persistent interpreter, Ansible's linear strategy runs
when asked for, and the collection's own configuration keeps Ansible's linear strategy."""

from __future__ import annotations

import configparser
import os
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"
STRATEGY_DIR = ROOT / "tools" / "ansible" / "strategy"

# Two tasks that print the process which ran their command: under Mitogen one interpreter runs both modules, under
# Ansible's linear strategy each module is a Python process of its own.
PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.command: sh -c 'echo $PPID'
      register: first
      changed_when: false
    - ansible.builtin.command: sh -c 'echo $PPID'
      register: second
      changed_when: false
    - ansible.builtin.debug:
        msg: "parents {{ first.stdout }} {{ second.stdout }}"
"""


def _play(tmp_path, playbook_text, strategy, **env):
    """ansible-playbook of ``playbook_text`` on localhost with ``strategy``; its output (stdout and stderr)."""
    playbook = tmp_path / "pb.yml"
    playbook.write_text(playbook_text)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STRATEGY_PLUGINS=str(STRATEGY_DIR),
               ANSIBLE_STRATEGY=strategy, ANSIBLE_NOCOLOR="1", **env)
    run = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout + run.stderr


def _parents(tmp_path, strategy):
    output = _play(tmp_path, PLAYBOOK, strategy)
    # ansible-core's notice about outside strategies is the one the strategy file drops; the runs print no other.
    assert "DEPRECATION" not in output
    (line,) = [line for line in output.splitlines() if "parents " in line]
    return line.split("parents ")[1].strip().strip('"').split()


def test_mitogen_runs_both_modules_in_one_interpreter(tmp_path):
    first, second = _parents(tmp_path, "mitogen_linear")
    assert first == second


def test_other_deprecations_still_show(tmp_path):
    """Only the notice about the strategy file itself is dropped: a module's deprecation still prints."""
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "old_thing.py").write_text(
        "from ansible.module_utils.basic import AnsibleModule\n"
        "module = AnsibleModule(argument_spec={})\n"
        "module.deprecate('the old thing goes', version='9.9.9', collection_name='trainium.eks')\n"
        "module.exit_json(changed=False)\n")
    output = _play(tmp_path, "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - old_thing:\n", "mitogen_linear",
                   ANSIBLE_LIBRARY=str(tmp_path / "library"))
    assert "DEPRECATION" in output and "the old thing goes" in output, output
    assert "strategy plugins not included" not in output


def test_linear_runs_each_module_in_a_process_of_its_own(tmp_path):
    first, second = _parents(tmp_path, "linear")
    assert first != second


def test_the_suite_and_molecule_name_the_strategy_and_the_collection_does_not():
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    assert '"ANSIBLE_STRATEGY": TEST_STRATEGY' in conftest and '"tools" / "ansible" / "strategy"' in conftest
    molecule_env = yaml.safe_load((ROOT / ".config" / "molecule" / "config.yml").read_text())["provisioner"]["env"]
    assert molecule_env["ANSIBLE_STRATEGY"] == "${TRAINIUM_TEST_STRATEGY:-mitogen_linear}"
    assert molecule_env["ANSIBLE_STRATEGY_PLUGINS"] == "${MOLECULE_PROJECT_DIRECTORY}/tools/ansible/strategy"
    config = configparser.ConfigParser()
    config.read(ROOT / "ansible.cfg")
    assert config.get("defaults", "strategy", fallback="linear") == "linear"


@pytest.mark.parametrize("role", ["fsx_lustre", "training_image"])
def test_background_jobs_run_through_ansible_s_own_local_connection(role):
    """Mitogen's background jobs ignore ansible_async_dir: the collection's async tasks name Ansible's local
    connection by its full name, which Mitogen leaves alone."""
    tasks = yaml.safe_load((ROOT / "roles" / role / "tasks" / "present.yml").read_text())
    (job,) = [t for t in tasks if "async" in t]
    assert job["vars"]["ansible_connection"] == "ansible.builtin.local", job.get("name")
