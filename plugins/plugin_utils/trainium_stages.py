# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The stage plan (``meta/stages.yml``) read and checked in one place.

The plan lists the stages in run order, the roles each runs and the tag that
selects each, the steps of the stage plays (start now, join later), the work
started in the background and where it is joined, the teardown order and the
day-2 playbooks. The lookup ``trainium.eks.stage_plan`` serves it to the
playbooks; the tests read it with the same functions.
"""

from __future__ import annotations

import copy
import os

import yaml

PLAN_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "meta", "stages.yml")
SECTIONS = ("stages", "roles", "tags", "teardown_kubernetes", "teardown_aws", "job_templates", "stage_roles", "stage_tags")
# The sections that are about one stage (the lookup's option stage).
STAGE_SECTIONS = ("stage_roles", "stage_tags")
# The keys an entry may have (a flow mapping with an unquoted comma in its text gives a stray key).
ENTRY_KEYS = {
    "roles": {"role", "tag", "what", "tasks_from", "removed_with"},
    "steps": {"role", "tasks_from", "tag", "background", "read_only"},
    "background": {"role", "what", "starts", "joined_by"},
    "checks": {"tag", "what"},
    "teardown": {"role", "what", "keep"},
}
STAGE_KEYS = {"name", "playbook", "play", "what", "survey", "roles", "steps", "background", "checks", "iam"}
DAY2_KEYS = {"name", "playbook", "survey", "required", "iam"}
# The policy set every stage but the teardown runs under first (the preflight play starts each of their playbooks).
PREFLIGHT_IAM = "preflight"


class StagePlanError(ValueError):
    pass


# The plays template the lookup for every task's tags: the file is read and checked once per change of it.
_LOADED = {}


def load(path=PLAN_PATH):
    """The plan as a dict, checked (``StagePlanError`` names what is wrong); a fresh copy each call."""
    stamp = os.stat(path).st_mtime_ns
    if _LOADED.get(path, (None,))[0] != stamp:
        with open(path, encoding="utf-8") as f:
            plan = yaml.safe_load(f)
        problems = plan_problems(plan, os.path.join(os.path.dirname(path), "..", "roles"))
        if problems:
            raise StagePlanError(f"{path}: " + "; ".join(problems))
        _LOADED[path] = (stamp, plan)
    return copy.deepcopy(_LOADED[path][1])


def role_tag(entry):
    """The tag that selects a role entry: its own, else the role's name."""
    return entry.get("tag") or entry["role"]


def plan_problems(plan, roles_dir):
    """What is wrong with a plan: duplicate stages, unknown keys (a stray comma in a flow mapping), unknown roles."""
    problems = []
    if not isinstance(plan, dict) or not isinstance(plan.get("stages"), list):
        return ["stages: got nothing; allowed: a list of stages"]
    known = set(os.listdir(roles_dir)) if os.path.isdir(roles_dir) else None
    names = [stage.get("name") for stage in plan["stages"]]
    for name in {n for n in names if names.count(n) > 1}:
        problems.append(f"stages: stage {name} is listed {names.count(name)} times")
    entries = []
    for stage in plan["stages"]:
        problems.extend(f"{stage.get('name')}: unknown key {key!r}" for key in sorted(set(stage) - STAGE_KEYS))
    for entry in plan.get("day2", []):
        problems.extend(f"day2.{entry.get('name')}: unknown key {key!r}" for key in sorted(set(entry) - DAY2_KEYS))
    for entry in plan["stages"] + plan.get("day2", []):
        iam = entry.get("iam")
        if not (isinstance(iam, list) and iam and all(isinstance(n, str) and n.isalpha() and n.islower() for n in iam)
                and len(set(iam)) == len(iam)):
            problems.append(f"{entry.get('name')}.iam: got {iam!r}; allowed: the policy sets of docs/iam its playbook runs "
                            f"under, such as [preflight, infrastructure] (trainium-eks-<name>*.json), each once")
        entries += [(f"{stage.get('name')}.{kind}", kind, entry) for kind in ("roles", "steps", "background", "checks")
                    for entry in stage.get(kind, [])]
    entries += [(f"teardown.{name}", "teardown", entry) for name, section in plan.get("teardown", {}).items() for entry in section]
    for where, kind, entry in entries:
        problems.extend(f"{where}: unknown key {key!r} in {entry!r}" for key in sorted(set(entry) - ENTRY_KEYS[kind]))
        if kind != "checks" and known is not None and entry.get("role") not in known:
            problems.append(f"{where}: role {entry.get('role')!r} is not a role of this collection (roles/)")
    return problems


def stages(plan):
    return plan["stages"]


def roles(plan):
    """The roles whose variables the validation pass checks: every stage's roles, once each, in run order."""
    seen = []
    for stage in plan["stages"]:
        for entry in stage.get("roles", []):
            if entry["role"] not in seen:
                seen.append(entry["role"])
    return seen


def tags(plan):
    """Every tag that selects a stage or a part of one: stage names, role tags, check tags, in run order."""
    return list(dict.fromkeys(tag for entry in plan["stages"] for tag in stage_tags(plan, entry["name"])))


def stage(plan, name):
    """The stage entry called ``name``."""
    for entry in plan["stages"]:
        if entry["name"] == name:
            return entry
    raise StagePlanError(f"stage: got {name!r}; allowed: one of {', '.join(s['name'] for s in plan['stages'])}")


def stage_roles(plan, name):
    """The role entries of one stage, in order, each with its tag filled in."""
    return [dict(entry, tag=role_tag(entry)) for entry in stage(plan, name).get("roles", [])]


def stage_tags(plan, name):
    """The tags that select a stage or a part of it: its name, its roles' tags, its checks' tags."""
    entry = stage(plan, name)
    return list(dict.fromkeys([name] + [role_tag(e) for e in entry.get("roles", [])] + [c["tag"] for c in entry.get("checks", [])]))


def teardown(plan, section):
    """The roles the teardown removes, in order: section kubernetes (first) or aws."""
    return list(plan.get("teardown", {}).get(section, []))


def credential(iam):
    """The AWS credential a job template runs under by default, named after its policy sets: those beyond
    preflight (every stage but the teardown runs the preflight first), joined by "+"; preflight alone for the
    preflight. Templates that need the same policies share it; the teardown's is its own."""
    beyond = [name for name in iam if name != PREFLIGHT_IAM]
    return "+".join(beyond) if beyond else PREFLIGHT_IAM


def job_templates(plan):
    """One AWX job template per stage and per day-2 playbook: name, playbook, survey, required, the policy sets its
    playbook runs under (iam) and the credential named after them."""
    return [{"name": e["name"], "playbook": e["playbook"], "survey": list(e.get("survey", [])), "required": list(e.get("required", [])),
             "iam": list(e["iam"]), "credential": credential(e["iam"])}
            for e in plan["stages"] + plan.get("day2", [])]


def section(plan, name, stage_name=None):
    """One section of the plan, as a list (what the lookup returns); ``stage_name`` for the sections of one stage."""
    if name in STAGE_SECTIONS:
        if not stage_name:
            raise StagePlanError(f"stage: got nothing; allowed: the stage whose {name} to return (stage=platform)")
        return stage_roles(plan, stage_name) if name == "stage_roles" else stage_tags(plan, stage_name)
    if name == "stages":
        return stages(plan)
    if name == "roles":
        return roles(plan)
    if name == "tags":
        return tags(plan)
    if name in ("teardown_kubernetes", "teardown_aws"):
        return teardown(plan, name.split("_", 1)[1])
    if name == "job_templates":
        return job_templates(plan)
    raise StagePlanError(f"section: got {name!r}; allowed: one of {', '.join(SECTIONS)}")


def markdown(plan):
    """The stage table of docs/stages.md: one row per stage and role, then the teardown order."""
    rows = ["| stage | playbook | tag | role | what |", "|---|---|---|---|---|"]
    for stage in plan["stages"]:
        rows.append(f"| **{stage['name']}** | `{stage['playbook']}` | `{stage['name']}` | | {stage['what']} |")
        for entry in stage.get("roles", []):
            task = f" (`tasks_from: {entry['tasks_from']}`)" if entry.get("tasks_from") else ""
            rows.append(f"| | | `{role_tag(entry)}` | `trainium.eks.{entry['role']}`{task} | {entry['what']} |")
        for check in stage.get("checks", []):
            rows.append(f"| | | `{check['tag']}` | | {check['what']} |")
    background = [(stage["name"], b) for stage in plan["stages"] for b in stage.get("background", [])]
    lines = rows + ["", "Work started in the background and where it is joined:", ""]
    lines += [f"- {b['what']} (`trainium.eks.{b['role']}`): started by the {name} stage {b['starts']}, joined by the "
              f"{b['joined_by']} stage" for name, b in background]
    lines += ["", "The teardown (`--tags teardown`) removes, in this order, the Kubernetes side first:", ""]
    for section_name in ("kubernetes", "aws"):
        if section_name == "aws":
            lines += ["", "then the AWS side:", ""]
        for number, entry in enumerate(teardown(plan, section_name), 1):
            keep = f" (kept with `trainium_teardown_keep: [{entry['keep']}]`)" if entry.get("keep") else ""
            lines.append(f"{number}. {entry['what']} (`trainium.eks.{entry['role']}`){keep}")
    return "\n".join(lines) + "\n"
