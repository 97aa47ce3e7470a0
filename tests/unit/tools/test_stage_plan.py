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
    bad = {"stages": [{"name": "x", "playbook": "p", "what": "w", "iam": ["preflight"],
                       "roles": [{"role": "nosuch", "what": "VPC", "subnets": None}]}]}
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


@pytest.mark.parametrize("stage", ["infrastructure", "training"])
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


def _listed(playbook, *args, cwd=ROOT, collections=ROOT / ".collections"):
    """ansible-playbook --list-tasks: {play name: [(task name, tags)]}, with the tags as Ansible resolved them."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    run = subprocess.run([str(BIN / "ansible-playbook"), str(playbook), "-i", str(ROOT / "inventories" / "local"), "--list-tasks", *args],
                         capture_output=True, text=True, env=env, cwd=cwd, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    plays, play = {}, None
    for line in run.stdout.splitlines():
        head = re.match(r"^  play #\d+ \(\w+\): (.*?)\tTAGS:", line)
        task = re.match(r"^      (.*)\tTAGS: \[(.*)\]$", line)
        if head:
            play = plays.setdefault(head.group(1), [])
        elif task and play is not None:
            # --list-tasks shows a templated play tag twice, resolved and as written: the written one is left out.
            play.append((task.group(1), {t.strip() for t in task.group(2).split(",") if t.strip() and "{{" not in t}))
    return plays


def test_preflight_and_summary_run_for_every_tag_of_the_plan(plan):
    """The preflight and summary plays take their tags from the plan: every tag selects them, teardown does not."""
    everything = _listed(ROOT / "site.yml")
    preflight = next(tasks for name, tasks in everything.items() if name.startswith("Preflight"))
    summary = next(tasks for name, tasks in everything.items() if name.startswith("Summary"))
    for tasks, extra in ((preflight, {"status"}), (summary, set())):
        assert {tag for _task, tags in tasks for tag in tags} - {"always"} == set(ts.tags(plan)) | extra
    for tag in ("volcano", "neuron_node_check", "image"):
        listed = _listed(ROOT / "site.yml", "--tags", tag)
        assert any(name.startswith("Preflight") and tasks for name, tasks in listed.items()), (tag, listed)
    # --tags teardown: no preflight, no summary (but for ansible-core's argument check of the preflight role, tagged
    # always and skipped with the role); of the platform play only the roles' include (tagged always), whose when:
    # finds teardown among none of the plan's tags.
    listed = _listed(ROOT / "site.yml", "--tags", "teardown")
    assert not any(task for name, tasks in listed.items() if name.startswith(("Preflight", "Summary"))
                   for task, tags in tasks if "always" not in tags), listed
    platform = next(tasks for name, tasks in listed.items() if name.startswith("Platform"))
    assert platform == [("Install the roles of the stage plan's platform stage, in order", {"always", "platform"})]


def test_the_platform_play_runs_the_plan_roles_under_their_tags(plan):
    play = yaml.safe_load((ROOT / "playbooks/stages/platform.yml").read_text())[0]
    assert play["vars"]["platform_tags"] == "{{ query('trainium.eks.stage_plan', 'stage_tags', stage='platform') }}"
    steps = [t for t in play["tasks"][1]["block"] if "loop" in t]
    assert len(steps) == 1 and steps[0]["loop"] == "{{ query('trainium.eks.stage_plan', 'stage_roles', stage='platform') }}"
    assert steps[0]["ansible.builtin.include_role"]["apply"]["tags"] == "{{ [platform_step.tag] }}"
    # --tags volcano: the kubeconfig prelude and the roles' include, not the file system read nor the node check.
    platform = next(tasks for name, tasks in _listed(ROOT / "playbooks/platform.yml", "--tags", "volcano").items()
                    if name.startswith("Platform"))
    names = [name for name, _tags in platform]
    assert "Look for the cluster's kubeconfig" in names and "Install the roles of the stage plan's platform stage, in order" in names
    assert not [n for n in names if n.startswith(("Read the FSx", "Check the Trainium nodes"))], names
    assert [e["role"] for e in ts.stage_roles(plan, "platform")] == [
        "neuron_device_plugin", "efa_device_plugin", "neuron_monitor", "volcano", "etcd", "fsx_csi"]
    assert ts.stage_tags(plan, "platform")[-1] == "neuron_node_check"


def test_the_validation_pass_the_teardown_and_awx_read_the_plan():
    for playbook, section in (("validate.yml", "roles"), ("teardown.yml", "teardown_kubernetes"), ("teardown.yml", "teardown_aws"),
                              ("awx_setup.yml", "job_templates"), ("preflight.yml", "tags"), ("summary.yml", "tags"),
                              ("stages/platform.yml", "stage_roles")):
        assert f"query('trainium.eks.stage_plan', '{section}'" in (ROOT / "playbooks" / playbook).read_text()


def test_each_job_template_names_the_policies_it_runs_under_and_its_credential(plan):
    """The iam of every stage and day-2 playbook names policy files of docs/iam (trainium-eks-<name>*.json); the AWX
    credential of its template is named after them, so that only templates that need the same policies share one."""
    templates = ts.job_templates(plan)
    for template in templates:
        for name in template["iam"]:
            assert list((ROOT / "docs" / "iam").glob(f"trainium-eks-{name}.json")) + list(
                (ROOT / "docs" / "iam").glob(f"trainium-eks-{name}-*.json")), (template["name"], name)
    by_name = {t["name"]: (t["iam"], t["credential"]) for t in templates}
    assert by_name == {
        "preflight": (["preflight"], "preflight"),
        "infrastructure": (["preflight", "infrastructure"], "infrastructure"),
        "platform": (["preflight", "infrastructure"], "infrastructure"),
        "training": (["preflight", "training"], "training"),
        "teardown": (["teardown"], "teardown"),
        "status": (["preflight", "status"], "status"),
        "scale": (["preflight", "infrastructure", "training"], "infrastructure+training"),
    }
    # Same policies, same credential; the teardown's is its own and no other template has its policy.
    credentials = {t["credential"]: sorted(t["iam"]) for t in templates}
    assert all(credentials[t["credential"]] == sorted(t["iam"]) for t in templates)
    assert [t["name"] for t in templates if "teardown" in t["iam"] or t["credential"] == "teardown"] == ["teardown"]
    # Every other stage's playbook starts with the preflight play.
    assert all("preflight" in t["iam"] for t in templates if t["name"] != "teardown")


def test_a_job_template_without_its_policies_is_refused():
    plan = ts.load()  # a copy of its own: the module's fixture is shared
    plan["day2"][0].pop("iam")
    plan["stages"][1]["iam"] = ["preflight", "Infrastructure"]
    plan["day2"][1]["iam"] = ["status", "status"]
    plan["day2"][2]["polices"] = ["scale"]
    assert ts.plan_problems(plan, ROOT / "roles") == [
        "day2.scale: unknown key 'polices'",
        "infrastructure.iam: got ['preflight', 'Infrastructure']; allowed: the policy sets of docs/iam its playbook runs under, "
        "such as [preflight, infrastructure] (trainium-eks-<name>*.json), each once",
        "teardown.iam: got None; allowed: the policy sets of docs/iam its playbook runs under, such as [preflight, infrastructure] "
        "(trainium-eks-<name>*.json), each once",
        "status.iam: got ['status', 'status']; allowed: the policy sets of docs/iam its playbook runs under, such as "
        "[preflight, infrastructure] (trainium-eks-<name>*.json), each once",
    ]


def test_docs_stage_table_is_the_plan(plan):
    page = (ROOT / "docs" / "stages.md").read_text()
    assert page.endswith(ts.markdown(plan)), "docs/stages.md differs from meta/stages.yml: .venv/bin/python tools/stage-table.py > docs/stages.md"


def test_lookup_serves_every_section_and_refuses_others(tmp_path):
    (tmp_path / "pb.yml").write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.copy": {"dest": str(tmp_path / "out.json"), "mode": "0600",
                                  "content": "{{ {" + ", ".join(f"'{s}': query('trainium.eks.stage_plan', '{s}', stage='platform')" for s in ts.SECTIONS)
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
    assert got["stage_roles"] == ts.stage_roles(plan, "platform") and got["stage_tags"] == ts.stage_tags(plan, "platform")
    assert run.returncode != 0 and "section: got 'nosuch'; allowed: one of stages, roles, tags" in run.stdout + run.stderr


def test_a_role_added_by_its_directory_and_its_plan_entries_is_validated_run_and_removed(tmp_path):
    """A throw-away role (scratch_marker) in a copy of the collection, with two entries in the plan: the platform
    stage's roles and the teardown's kubernetes list. Nothing else is edited. Then the validation pass checks its
    variables (a bad value and a misspelling refused, one line each), --tags scratch_marker selects preflight
    and the platform stage's prelude, the platform play runs the role (and no other), and the teardown's remove
    step runs it with scratch_marker_state absent."""
    copy = tmp_path / "ansible_collections" / "trainium" / "eks"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", ".rehearsal", ".build", ".collections", "tests", "molecule"),
                    symlinks=True)
    role = copy / "roles" / "scratch_marker"
    for part in ("meta", "tasks", "defaults"):
        (role / part).mkdir(parents=True)
    (role / "defaults" / "main.yml").write_text("---\nscratch_marker_state: present\nscratch_marker_size: 3\n")
    (role / "meta" / "argument_specs.yml").write_text(yaml.safe_dump({"argument_specs": {"main": {"short_description": "throw-away", "options": {
        "scratch_marker_state": {"type": "str", "choices": ["present", "absent"], "default": "present", "description": "state"},
        "scratch_marker_size": {"type": "int", "default": 3, "description": "size"}}}}}))
    (role / "tasks" / "main.yml").write_text(yaml.safe_dump([{"name": "Mark", "ansible.builtin.copy": {
        "dest": str(tmp_path / "marker-{{ scratch_marker_state }}"), "content": "{{ scratch_marker_size }}", "mode": "0600"}}]))
    plan_text = (copy / "meta" / "stages.yml").read_text()
    entry = "      - {role: scratch_marker, what: \"a throw-away role\"}\n"
    plan_text = plan_text.replace("      - {role: fsx_csi, what:", entry + "      - {role: fsx_csi, what:", 1)
    plan_text = plan_text.replace("  kubernetes:\n", "  kubernetes:\n    - {role: scratch_marker, what: \"the throw-away role's marker\"}\n", 1)
    (copy / "meta" / "stages.yml").write_text(plan_text)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))

    def playbook(path, *args):
        run = subprocess.run([str(BIN / "ansible-playbook"), str(path), "-i", str(ROOT / "inventories" / "local"), *args],
                             capture_output=True, text=True, env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"), cwd=copy, check=False)
        return run.returncode, run.stdout + run.stderr

    code, out = playbook(copy / "playbooks" / "validate.yml", "-e", "scratch_marker_size=many", "-e", "scratch_marker_sise=4")
    assert code != 0, out
    assert "scratch_marker_size: got 'many' (str)" in out, out
    assert "scratch_marker_sise: not a variable of this collection; did you mean scratch_marker_size?" in out, out
    code, out = playbook(copy / "playbooks" / "validate.yml", "-e", "scratch_marker_size=5")
    assert code == 0, out
    assert re.search(r"variables of\s+19 roles\s+checked", out), out

    listed = _listed(copy / "site.yml", "--tags", "scratch_marker", cwd=copy, collections=tmp_path)
    assert any(name.startswith("Preflight") and tasks for name, tasks in listed.items()), listed
    platform = [task for name, tasks in listed.items() if name.startswith("Platform") for task, _tags in tasks]
    assert "Look for the cluster's kubeconfig" in platform and "Install the roles of the stage plan's platform stage, in order" in platform

    # The platform play itself, after the validation pass (no AWS call: the kubeconfig is there, the node check
    # and the file system read are not selected): the throw-away role runs, under its tag, alone.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    (tmp_path / "platform.yml").write_text(yaml.safe_dump([
        {"name": "Validate", "ansible.builtin.import_playbook": str(copy / "playbooks" / "validate.yml")},
        {"name": "Platform", "ansible.builtin.import_playbook": str(copy / "playbooks" / "stages" / "platform.yml")}]))
    code, out = playbook(tmp_path / "platform.yml", "--tags", "scratch_marker", "-e", f"trainium_kubeconfig={kubeconfig}",
                         "-e", "scratch_marker_size=7")
    assert code == 0, out
    assert (tmp_path / "marker-present").read_text() == "7"
    included = re.findall(r"^included: \S+ for \S+ => \(item=(\w+)\)", out, re.M)
    assert included == ["scratch_marker"], out

    # The teardown's step, over the plan's kubernetes list: the new entry runs the role with its state absent.
    (tmp_path / "remove.yml").write_text(yaml.safe_dump([{"hosts": "trainium", "gather_facts": False, "tasks": [
        {"name": "Remove", "ansible.builtin.include_tasks": str(copy / "playbooks" / "tasks" / "remove.yml"),
         "loop": "{{ query('trainium.eks.stage_plan', 'teardown_kubernetes') | selectattr('role', 'eq', 'scratch_marker') }}",
         "loop_control": {"loop_var": "teardown_step"}}]}]))
    code, out = playbook(tmp_path / "remove.yml")
    assert code == 0, out
    assert (tmp_path / "marker-absent").read_text() == "3"
