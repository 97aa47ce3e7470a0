# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage plan (meta/stages.yml) is the one list of stages, roles, tags and
teardown order: the validation pass, the teardown and the AWX setup read it
(lookup trainium.eks.stage_plan); these tests check that the stage plays, the
preflight and summary plays' tags and docs/stages.md follow it, and that a
role added by its directory and one plan entry is checked by the validation
pass and removed by the teardown."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.plugin_utils import trainium_stages as ts

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"
# Imported by other roles, never run on its own.
INTERNAL_ROLES = {"node_agent"}


@pytest.fixture(scope="module")
def plan():
    return ts.load()


def _imports(tasks):
    """(role, tasks_from, tags) of every import_role/include_role in a task list, blocks included, in order."""
    found = []
    for task in tasks or []:
        for key in ("block", "rescue", "always"):
            found += [(r, t, set(task.get("tags", [])) | tags) for r, t, tags in _imports(task.get(key))]
        for action in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
            if action in task:
                args = task[action]
                found.append((args["name"].removeprefix("trainium.eks."), args.get("tasks_from", "main"), set(task.get("tags", []))))
    return found


def test_the_plan_loads_and_names_only_roles_of_the_collection(plan):
    assert ts.plan_problems(plan, ROOT / "roles") == []
    bad = {"stages": [{"name": "x", "playbook": "p", "what": "w", "roles": [{"role": "nosuch", "what": "VPC", "subnets": None}]}]}
    assert ts.plan_problems(bad, ROOT / "roles") == [
        "x.roles: unknown key 'subnets' in {'role': 'nosuch', 'what': 'VPC', 'subnets': None}",
        "x.roles: role 'nosuch' is not a role of this collection (roles/)",
    ]


def test_every_role_of_the_collection_is_in_the_plan(plan):
    planned = set(ts.roles(plan))
    on_disk = {p.name for p in (ROOT / "roles").iterdir() if p.is_dir()}
    assert on_disk - INTERNAL_ROLES == planned


def test_every_role_that_makes_something_is_removed_by_the_teardown(plan):
    removed = {e["role"] for section in ("kubernetes", "aws") for e in ts.teardown(plan, section)}
    for stage in plan["stages"]:
        for entry in stage["roles"]:
            spec = yaml.safe_load((ROOT / "roles" / entry["role"] / "meta" / "argument_specs.yml").read_text())
            options = spec["argument_specs"]["main"]["options"]
            if f"{entry['role']}_state" in options:
                assert entry["role"] in removed or entry.get("removed_with") in removed, entry
    # Kubernetes first, in the reverse of the order the platform and training stages make things.
    kube = [e["role"] for e in ts.teardown(plan, "kubernetes")]
    made = [e["role"] for s in plan["stages"] if s["name"] in ("platform", "training") for e in s["roles"] if e["role"] in kube]
    assert kube == list(dict.fromkeys(reversed(made)))


@pytest.mark.parametrize("stage", ["infrastructure", "platform", "training"])
def test_each_stage_play_imports_the_plan_steps_in_order_under_their_tags(plan, stage):
    entry = next(s for s in plan["stages"] if s["name"] == stage)
    play = yaml.safe_load((ROOT / entry["play"]).read_text())[0]
    imports = _imports(play["tasks"])
    assert [(r, t) for r, t, _tags in imports] == [(s["role"], s.get("tasks_from", "main")) for s in entry["steps"]]
    tags = {ts.role_tag(e): e for e in entry["roles"]}
    for (role, tasks_from, task_tags), step in zip(imports, entry["steps"]):
        wanted = step.get("tag") or next((t for t, e in tags.items() if e["role"] == role and e.get("tasks_from", "main") == tasks_from),
                                         next((t for t, e in tags.items() if e["role"] == role), None))
        if wanted and not (step.get("read_only") and not step.get("tag")):
            assert wanted in task_tags, (stage, role, tasks_from, task_tags)
    assert stage in play["tags"]
    # The stage's own playbook imports its play.
    assert entry["play"].removeprefix("playbooks/") in (ROOT / entry["playbook"]).read_text()


@pytest.mark.parametrize("playbook", ["playbooks/preflight.yml", "playbooks/summary.yml"])
def test_preflight_and_summary_plays_carry_every_stage_tag(plan, playbook):
    plays = yaml.safe_load((ROOT / playbook).read_text())
    play = next(p for p in plays if "hosts" in p)
    # status.yml runs preflight too; the summary has no status of its own.
    assert set(play["tags"]) - {"status"} == set(ts.tags(plan))


def test_the_validation_pass_the_teardown_and_awx_read_the_plan():
    for playbook, section in (("validate.yml", "roles"), ("teardown.yml", "teardown_kubernetes"), ("teardown.yml", "teardown_aws"),
                              ("awx_setup.yml", "job_templates")):
        assert f"query('trainium.eks.stage_plan', '{section}')" in (ROOT / "playbooks" / playbook).read_text()


def test_docs_stage_table_is_the_plan(plan):
    page = (ROOT / "docs" / "stages.md").read_text()
    assert page.endswith(ts.markdown(plan)), "docs/stages.md differs from meta/stages.yml: .venv/bin/python tools/stage-table.py > docs/stages.md"


def test_lookup_serves_every_section_and_refuses_others(tmp_path):
    (tmp_path / "pb.yml").write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.copy": {"dest": str(tmp_path / "out.json"), "mode": "0600",
                                  "content": "{{ {" + ", ".join(f"'{s}': query('trainium.eks.stage_plan', '{s}')" for s in ts.SECTIONS)
                                             + "} | to_json }}"}},
        {"ansible.builtin.debug": {"msg": "{{ query('trainium.eks.stage_plan', 'nosuch') }}"}}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    run = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(tmp_path / "pb.yml")],
                         capture_output=True, text=True, env=env, check=False)
    got = json.loads((tmp_path / "out.json").read_text())
    plan = ts.load()
    assert got["roles"] == ts.roles(plan) and got["tags"] == ts.tags(plan)
    assert [e["role"] for e in got["teardown_aws"]] == ["fsx_lustre", "ecr", "trn_nodegroup", "trn_launch_template", "eks_cluster", "network"]
    assert [t["name"] for t in got["job_templates"]] == ["preflight", "infrastructure", "platform", "training", "teardown", "status", "scale"]
    assert run.returncode != 0 and "section: got 'nosuch'; allowed: one of stages, roles, tags" in run.stdout + run.stderr


def test_a_role_added_by_its_directory_and_one_plan_entry_is_validated(tmp_path):
    """A throw-away role (scratch_marker) in a copy of the collection: one entry in the platform stage and one
    in the teardown. The validation pass then checks its variables (a bad value and a misspelling refused, one
    line each) and counts it among the roles it checked. (The teardown reads the same plan: the end-to-end
    teardown runs it, tests/integration/test_site_end_to_end.py.)"""
    copy = tmp_path / "ansible_collections" / "trainium" / "eks"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", ".rehearsal", ".build", ".collections", "tests", "molecule"),
                    symlinks=True)
    role = copy / "roles" / "scratch_marker"
    (role / "meta").mkdir(parents=True)
    (role / "tasks").mkdir()
    (role / "defaults").mkdir()
    (role / "defaults" / "main.yml").write_text("---\nscratch_marker_state: present\nscratch_marker_size: 3\n")
    (role / "meta" / "argument_specs.yml").write_text(yaml.safe_dump({"argument_specs": {"main": {"short_description": "throw-away", "options": {
        "scratch_marker_state": {"type": "str", "choices": ["present", "absent"], "default": "present", "description": "state"},
        "scratch_marker_size": {"type": "int", "default": 3, "description": "size"}}}}}))
    (role / "tasks" / "main.yml").write_text(yaml.safe_dump([{"name": "Mark", "ansible.builtin.copy": {
        "dest": str(tmp_path / "marker-{{ scratch_marker_state }}"), "content": "{{ scratch_marker_size }}", "mode": "0600"}}]))
    plan_text = (copy / "meta" / "stages.yml").read_text()
    entry = "      - {role: scratch_marker, what: \"a throw-away role\"}\n"
    plan_text = plan_text.replace("      - {role: fsx_csi, what:", entry + "      - {role: fsx_csi, what:", 1)
    plan_text = plan_text.replace("  aws:\n", "  aws:\n    - {role: scratch_marker, what: \"the throw-away role's marker\"}\n", 1)
    (copy / "meta" / "stages.yml").write_text(plan_text)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_ROLES_PATH=str(copy / "roles"))

    def playbook(name, *args):
        return subprocess.run([str(BIN / "ansible-playbook"), str(copy / "playbooks" / name), "-i", str(ROOT / "inventories" / "local"),
                               *args], capture_output=True, text=True, env=env, cwd=copy, check=False)

    refused = playbook("validate.yml", "-e", "scratch_marker_size=many", "-e", "scratch_marker_sise=4")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out
    assert "scratch_marker_size: got 'many' (str)" in out, out
    assert "scratch_marker_sise: not a variable of this collection; did you mean scratch_marker_size?" in out, out
    checked = playbook("validate.yml", "-e", "scratch_marker_size=5")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert re.search(r"variables of\s+19 roles\s+checked", checked.stdout), checked.stdout
