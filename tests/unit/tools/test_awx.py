# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX path without a controller: the execution environment's definition
(ansible-builder create), the playbooks AWX offers for the project, the job
templates' surveys against the argument spec and the validation's ranges, and
what awx_setup.yml would send to the controller (each awx.awx task turned into
a debug of its arguments): the credential of each job template, the project's
pin, and the role credential type rendered as the controller renders it, then
read by boto3, which assumes the role (moto in the test process).
Runs made the way AWX makes them: tests/integration/test_awx_runner.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import types
from pathlib import Path
from unittest import mock

import boto3
import botocore.session
import pytest
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment
from moto import mock_aws

from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td
from ansible_collections.trainium.eks.plugins.module_utils import trainium_survey as ts
from ansible_collections.trainium.eks.plugins.plugin_utils import trainium_stages

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"
TEST_TOOLS = ("moto", "molecule", "pytest", "ansible-lint", "yamllint", "antsibull", "pip-tools", "ansible-builder")


def _requirement_names(path):
    names = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower())
    return names


# --- the execution environment


def test_meta_execution_environment_names_runtime_files_without_test_tools():
    meta = yaml.safe_load((ROOT / "meta/execution-environment.yml").read_text())
    python = meta["dependencies"]["python"]
    assert python != "requirements.txt", "ansible-builder would take the developer requirements (moto, Molecule, pytest)"
    # Other people's EEs merge this file with their own requirements into one pip install: one --hash
    # would switch all of it to hash-checking mode. Our EE takes the hashed meta/ee-requirements.txt.
    assert python == "meta/ee-requirements.in"
    assert "--hash" not in (ROOT / python).read_text()
    names = _requirement_names(ROOT / python)
    assert {"boto3", "botocore", "kubernetes"} <= set(names)
    assert not [n for n in names if n.startswith(TEST_TOOLS)], names
    assert (ROOT / meta["dependencies"]["system"]).is_file()
    # Every runtime package is pinned to the version the suites run with, in the .in file and in the
    # hashed file written from it (tests/unit/tools/test_ee_pins.py checks the hashes and the closure).
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", (ROOT / "requirements.txt").read_text(), re.M))
    for path in (python, "meta/ee-requirements.txt"):
        lines = [line.split(" --hash", 1)[0].strip() for line in (ROOT / path).read_text().splitlines()
                 if line.strip() and not line.startswith("#")]
        assert lines and all(re.fullmatch(r"[A-Za-z0-9_.-]+==\S+", line) for line in lines), lines
        for line in lines:
            name, version = line.split("==")
            assert pins.get(name) == version, f"{name}=={version} in {path}, {pins.get(name)} in requirements.txt"
    assert set(names) <= set(_requirement_names(ROOT / "meta/ee-requirements.txt"))


def test_ansible_builder_creates_the_build_context(tmp_path):
    dist = ROOT / ".build" / "ee-collection"
    shutil.rmtree(dist, ignore_errors=True)
    built = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(dist), "."],
                           cwd=ROOT, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    context = tmp_path / "context"
    created = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "--context", str(context)],
                             cwd=ROOT, capture_output=True, text=True, check=False)
    assert created.returncode == 0, created.stdout + created.stderr
    containerfile = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()).read_text()
    core = re.search(r"^ansible-core==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert f"ansible-core=={core}" in containerfile
    assert "ansible-runner==" in containerfile
    assert "ansible-galaxy collection install --no-deps" in containerfile
    build = context / "_build"
    names = _requirement_names(build / "requirements.txt")
    assert "boto3" in names and not [n for n in names if n.startswith(TEST_TOOLS)], names
    # pip installs it in hash-checking mode: each requirement on one line with its hashes (ansible-builder
    # reads the file line by line), and the collections' own unhashed requirements excluded.
    lines = [line for line in (build / "requirements.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert lines and [line for line in lines if re.fullmatch(r"\S+==\S+( --hash=sha256:[0-9a-f]{64})+", line)] == lines, lines
    assert "--exclude-pip-reqs=" in containerfile
    # make ee's last step: the base image by digest (here the digest is given, as EE_BASE_IMAGE_DIGEST
    # gives it; tests/unit/tools/test_ee_pins.py resolves one from a registry).
    digest = "sha256:" + "0123456789abcdef" * 4
    pinned = subprocess.run([str(BIN / "python"), "tools/ee-pin-base.py", "-f", "execution-environment.yml", "--context", str(context)],
                            cwd=ROOT, capture_output=True, text=True, check=False, env={**os.environ, "EE_BASE_IMAGE_DIGEST": digest})
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    base = yaml.safe_load((ROOT / "execution-environment.yml").read_text())["images"]["base_image"]["name"]
    containerfile = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()).read_text()
    expected = base if "@sha256:" in base else f"{base}@{digest}"  # a digest in the definition is kept
    assert re.findall(r"^ARG EE_BASE_IMAGE=(.*)$", containerfile, re.M) == [f'"{expected}"']
    assert (context / "base-image.txt").read_text() == f"{expected}\n"
    assert "buildah" in (build / "bindep.txt").read_text()
    collections = {c["name"] for c in yaml.safe_load((build / "requirements.yml").read_text())["collections"]}
    assert {"amazon.aws", "community.aws", "kubernetes.core"} <= collections
    # The collection's tarball, at galaxy.yml's version, goes into the image.
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    assert [p.name for p in (build / "trainium-eks").iterdir()] == [f"trainium-eks-{version}.tar.gz"]


# --- the job templates and their surveys


class _Unsafe(str):
    """A !unsafe string of a playbook (Ansible does not template it), kept as such when the playbook is written back."""


class _Loader(yaml.SafeLoader):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Loader.add_constructor("!unsafe", lambda loader, node: _Unsafe(loader.construct_scalar(node)))
_Dumper.add_representer(_Unsafe, lambda dumper, value: dumper.represent_scalar("!unsafe", str(value)))


def _awx_setup_plays():
    return yaml.load((ROOT / "playbooks/awx_setup.yml").read_text(), Loader=_Loader)  # noqa: S506 - a SafeLoader with !unsafe


def _awx_setup():
    return _awx_setup_plays()[0]["vars"]


def _awx_playbooks(fqcn_import=False):
    """The playbooks AWX offers for a project (its rules: .yml/.yaml files with a line starting with
    hosts:, include: or import_playbook:, outside roles/, tasks/, group_vars/, host_vars/ and dot directories).
    fqcn_import: also the lines newer AWX versions take (ansible.builtin.import_playbook:)."""
    keys = "hosts|include|import_playbook" + ("|ansible\\.builtin\\.import_playbook" if fqcn_import else "")
    line = re.compile(rf"^\s*-?\s*({keys}):")
    found = set()
    for directory, dirs, files in os.walk(ROOT):
        parts = Path(directory).relative_to(ROOT).parts
        if any(p.startswith(".") or p in ("roles", "tasks", "group_vars", "host_vars") for p in parts):
            dirs[:] = []
            continue
        for name in files:
            path = Path(directory) / name
            if path.suffix in (".yml", ".yaml") and any(line.match(text) for text in path.read_text(errors="ignore").splitlines()):
                found.add(path.relative_to(ROOT).as_posix())
    return found


def _relative(pattern):
    return {p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern)}


def test_awx_lists_site_and_every_stage_playbook():
    listed = _awx_playbooks()
    # awx_setup.yml's templates are the stage plan's (tests/unit/tools/test_stage_plan.py checks that it reads them).
    stages = trainium_stages.job_templates(trainium_stages.load())
    assert "site.yml" in listed
    for stage in stages:
        assert stage["playbook"] in listed, f"AWX would not offer {stage['playbook']} for the {stage['name']} template"
    assert "playbooks/awx_setup.yml" in listed
    # Task files and inventories' variables are never offered as playbooks.
    assert not [p for p in listed if "/tasks/" in p or "group_vars" in p]


def test_awx_lists_only_the_user_facing_playbooks():
    # Every AWX version offers these (older ones do not recognise ansible.builtin.import_playbook: lines) ...
    offered = {"site.yml"} | _relative("playbooks/*.yml")
    # ... and the stage plays that site.yml and playbooks/<stage>.yml import: plays of their own, in playbooks/.
    offered |= _relative("playbooks/stages/*.yml")
    # A YAML inventory names its hosts under `hosts:`, which AWX's line match takes for a play; the inventories
    # stay plain YAML inventories (their paths are the documented ones, awx_setup_inventory_path included).
    inventories = _relative("inventories/*/hosts.yml")
    assert inventories == {"inventories/aws/hosts.yml", "inventories/local/hosts.yml"}
    assert _awx_playbooks() == offered | inventories
    # Newer AWX versions match one line more; it adds nothing: Molecule's playbooks are in dot directories.
    assert _awx_playbooks(fqcn_import=True) == offered | inventories
    assert not [p for p in _awx_playbooks(fqcn_import=True) if p.startswith(("molecule/", "tests/", "tools/"))]


def test_molecule_runs_the_playbooks_awx_does_not_see():
    """Each scenario's playbooks are in molecule/<scenario>/.playbooks/, named once by the base config;
    Molecule skips a prepare, cleanup, destroy or verify playbook it does not find, so a playbook left
    next to molecule.yml, or under a name the base config does not give, would silently not run."""
    named = yaml.safe_load((ROOT / ".config/molecule/config.yml").read_text())["provisioner"]["playbooks"]
    assert named == {step: f".playbooks/{step}.yml" for step in ("prepare", "converge", "verify", "cleanup", "destroy")}
    scenarios = sorted(p.parent for p in ROOT.glob("molecule/*/molecule.yml"))
    assert len(scenarios) >= 18
    for scenario in scenarios:
        config = yaml.safe_load((scenario / "molecule.yml").read_text())
        assert "playbooks" not in (config.get("provisioner") or {}) and "playbooks" not in (config.get("ansible") or {}), scenario.name
        left = [p.relative_to(ROOT).as_posix() for p in scenario.rglob("*.y*ml")
                if p.relative_to(scenario).parts[0] not in ("molecule.yml", ".playbooks")]
        assert not left, f"Molecule does not run these, and vars files belong next to the playbooks: {left}"
        playbooks = {p.stem for p in (scenario / ".playbooks").glob("*.yml")}
        assert "converge" in playbooks and playbooks <= set(named), (scenario.name, playbooks)


def test_every_survey_question_is_generated_from_the_argument_spec():
    setup = dict(_awx_setup(), awx_setup_stages=trainium_stages.job_templates(trainium_stages.load()))
    spec = yaml.safe_load((ROOT / "roles/preflight/meta/argument_specs.yml").read_text())["argument_specs"]["main"]
    names = {stage["name"] for stage in setup["awx_setup_stages"]}
    assert set(setup["awx_setup_pipeline"]) <= names
    # A teardown template asks nothing: a survey could point it at another deployment.
    assert [stage["survey"] for stage in setup["awx_setup_stages"] if stage["name"] == "teardown"] == [[]]
    # The scale template asks the new size, without a default, and no cluster or region.
    (scale,) = [stage for stage in setup["awx_setup_stages"] if stage["name"] == "scale"]
    assert scale["playbook"] == "playbooks/scale.yml" and scale["required"] == ["node_count"]
    assert not {"cluster_name", "region"} & set(scale["survey"])
    for stage in setup["awx_setup_stages"]:
        if not stage["survey"]:
            continue
        variables = [f"trainium_survey_{q}" for q in stage["survey"]]
        required = [f"trainium_survey_{q}" for q in stage.get("required", [])]
        survey = ts.survey_spec(spec, variables=variables, required=required)
        assert [q["variable"] for q in survey["spec"]] == [v for v in ts.SURVEY_VARIABLES if v in variables]
        assert [q["variable"] for q in survey["spec"] if q["required"]] == [v for v in ts.SURVEY_VARIABLES if v in required]
        for question in survey["spec"]:
            if question["type"] == "integer":
                paths = next(q[1] for q in ts.QUESTIONS if q[0] == question["variable"])
                assert question["min"] == max(td.INT_RANGES[p][0] for p in paths if p in td.INT_RANGES)
                assert question["max"] == min(td.INT_RANGES[p][1] for p in paths if p in td.INT_RANGES)


def test_awx_setup_passes_syntax_check_and_refuses_bad_variables(tmp_path):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.pop("CONTROLLER_HOST", None)
    env.pop("CONTROLLER_OAUTH_TOKEN", None)
    syntax = subprocess.run([str(BIN / "ansible-playbook"), "playbooks/awx_setup.yml", "-i", "inventories/aws", "--syntax-check"],
                            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stdout + syntax.stderr
    bad = subprocess.run([str(BIN / "ansible-playbook"), "playbooks/awx_setup.yml", "-i", "inventories/aws",
                          "-e", "awx_setup_controller_host=http://awx.example.com", "-e", "awx_setup_scm_url=https://git.example.com/t.git",
                          "-e", "awx_setup_controller_token=abc", "-e", "awx_setup_scm_ref=v0.5.0",
                          "-e", "awx_setup_execution_environment_image=quay.io/x/ee:latest-and-greatest!"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert "2 problem(s) in the variables; nothing was created" in bad.stdout
    assert "awx_setup_controller_host: got \"http://awx.example.com\"; allowed: the controller's https:// URL" in bad.stdout
    assert "awx_setup_execution_environment_image: got" in bad.stdout
    assert "abc" not in bad.stdout.replace("awx_setup_controller_token", "")


# --- what awx_setup.yml sends to the controller: credentials, project, the role credential type

PREFIX = "trainium.eks trn-bert"  # awx_setup_name_prefix for inventories/aws (trainium_cluster_name trn-bert)
COMMIT = "0123456789abcdef0123456789abcdef01234567"
ACCOUNT = "111122223333"
SECRET_KEY = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY12"
EXTERNAL_ID = "trn-teardown-6b1f0c"
# A role per principal: the builder assumes its role with the execution environment's identity, the training with
# the job pod's IRSA role, the teardown with an external ID; status keeps access keys (an IAM user).
PRINCIPALS = {
    "infrastructure": {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/trn-deploy"},
    "training": {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/trn-train", "credential_source": "WebIdentity",
                 "source_role_arn": f"arn:aws:iam::{ACCOUNT}:role/awx-jobs", "session_name": "ci-training"},
    "teardown": {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/trn-teardown", "external_id": EXTERNAL_ID},
    "status": {"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": SECRET_KEY},
}
# The roles that reach the cluster besides the one that creates it get access entries.
ADMITTED = [f"arn:aws:iam::{ACCOUNT}:role/trn-train", f"arn:aws:iam::{ACCOUNT}:role/trn-teardown"]


def _playbook_env(**extra):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", **extra)
    env.pop("CONTROLLER_HOST", None)
    env.pop("CONTROLLER_OAUTH_TOKEN", None)
    return env


def _extra_vars(variables):
    """-e arguments: the controller and repository every run needs, then ``variables`` (one JSON document)."""
    base = {"awx_setup_controller_host": "https://awx.example.com", "awx_setup_controller_token": "abc",
            "awx_setup_scm_url": "https://git.example.com/ml/trainium-eks.git", "awx_setup_scm_ref": COMMIT}
    return ["-e", json.dumps(dict(base, **variables))]


def _task_results(stdout):
    """{task name: its result (a list of the loop's results for a loop)} from the ansible.posix.json callback."""
    found = {}
    for task in json.loads(stdout)["plays"][0]["tasks"]:
        result = task["hosts"]["localhost"]
        found[task["task"]["name"]] = result["results"] if "results" in result else result
    return found


def _controller_calls(tmp_path, **variables):
    """awx_setup.yml with each awx.awx task turned into a debug of its arguments, run with --tags all,plan: what each
    module would send to the controller, templated by Ansible from the same variables, loops and conditions, and
    the plan it prints. Returns ({module: [arguments of each call]}, the plan)."""
    plays = _awx_setup_plays()
    for task in plays[0]["tasks"]:
        module = next((key for key in task if key.startswith("awx.awx.")), None)
        if module:
            task["ansible.builtin.debug"] = {"msg": {"module": module, "args": task.pop(module)}}
            task.pop("no_log", None)
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "roles").symlink_to(ROOT / "roles")  # playbook_dir/../roles: the preflight argument spec
    (tmp_path / "playbooks" / "awx_setup.yml").write_text(yaml.dump(plays, Dumper=_Dumper, sort_keys=False, width=1000))
    run = subprocess.run([str(BIN / "ansible-playbook"), str(tmp_path / "playbooks" / "awx_setup.yml"), "-i", "inventories/aws",
                          "--tags", "all,plan", *_extra_vars(variables)],
                         cwd=ROOT, env=_playbook_env(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr
    calls = {}
    for result in _task_results(run.stdout).values():
        for one in result if isinstance(result, list) else [result]:
            if isinstance(one.get("msg"), dict) and "module" in one["msg"]:
                calls.setdefault(one["msg"]["module"], []).append(one["msg"]["args"])
    (plan,) = [r["awx_setup_plan"] for r in _task_results(run.stdout).values() if isinstance(r, dict) and "awx_setup_plan" in r]
    return calls, plan


def _plan(**variables):
    """awx_setup.yml --tags plan as a user runs it: (return code, {task name: result}, its output)."""
    run = subprocess.run([str(BIN / "ansible-playbook"), "playbooks/awx_setup.yml", "-i", "inventories/aws", "--tags", "plan",
                          *_extra_vars(variables)],
                         cwd=ROOT, env=_playbook_env(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"), capture_output=True, text=True, check=False)
    return run.returncode, _task_results(run.stdout), run.stdout


def _problems(**variables):
    """The validation's lines for ``variables`` (the run must refuse them)."""
    code, results, _out = _plan(**variables)
    assert code == 2, results
    message = results["Check the awx_setup variables"]["msg"]
    head, *lines = message.splitlines()
    assert head == f"{len(lines)} problem(s) in the variables; nothing was created:"
    return lines


def test_each_job_template_runs_under_the_credential_of_its_policies_and_the_teardown_under_its_own(tmp_path):
    calls, plan = _controller_calls(tmp_path)
    templates = trainium_stages.job_templates(trainium_stages.load())
    sent = {call["name"].removeprefix(PREFIX + " "): call["credentials"] for call in calls["awx.awx.job_template"]}
    # Every template, and only those of the stage plan, with exactly one credential, named after its policy sets.
    assert list(sent) == [t["name"] for t in templates]
    assert sent == {"preflight": [f"{PREFIX} AWS preflight"], "infrastructure": [f"{PREFIX} AWS infrastructure"],
                    "platform": [f"{PREFIX} AWS infrastructure"], "training": [f"{PREFIX} AWS training"],
                    "teardown": [f"{PREFIX} AWS teardown"], "status": [f"{PREFIX} AWS status"],
                    "scale": [f"{PREFIX} AWS infrastructure+training"]}
    # The teardown's credential serves the teardown alone.
    assert [name for name, credentials in sent.items() if credentials == sent["teardown"]] == ["teardown"]
    assert not set(sent["teardown"]) & set(sent["infrastructure"] + sent["training"] + sent["scale"])
    # Nothing given about the principals: the credentials are expected on the controller, none is created or changed,
    # nor the role credential type.
    assert "awx.awx.credential" not in calls and "awx.awx.credential_type" not in calls
    assert {c["name"] for c in plan["credentials"]} == {name for (name,) in sent.values()}
    assert {c["source"] for c in plan["credentials"]} == {"existing"} and not plan["credential_type"]
    # The plan a user reviews (--tags plan) is what the tasks send.
    assert {t["name"]: [t["credential"]] for t in plan["job_templates"]} == sent
    assert plan["project"] == {k: v for k, v in calls["awx.awx.project"][0].items() if k in plan["project"]}


@pytest.mark.parametrize("variables, branch, on_launch", [
    ({}, COMMIT, False),
    ({"awx_setup_scm_ref": "v0.5.0"}, "v0.5.0", False),
    ({"awx_setup_scm_ref": "", "awx_setup_scm_follow_branch": True, "awx_setup_scm_branch": "release/0.5"}, "release/0.5", True),
], ids=["commit", "tag", "branch-when-asked"])
def test_the_project_is_pinned_to_a_tag_or_commit_unless_a_branch_is_asked_for(tmp_path, variables, branch, on_launch):
    calls = _controller_calls(tmp_path, **variables)[0]
    (project,) = calls["awx.awx.project"]
    assert project["scm_branch"] == branch
    # Only a followed branch is fetched at launch; a pinned project checks out its ref now and keeps it.
    assert project["scm_update_on_launch"] is on_launch
    assert project["update_project"] is True and project["wait"] is True
    # No job template may check out another branch or commit.
    assert project["allow_override"] is False
    assert not [call for call in calls["awx.awx.job_template"] if "scm_branch" in call]


def test_role_and_key_credentials_are_created_per_principal_without_printing_a_secret(tmp_path):
    # The scale template runs under a credential that exists on the controller under a name of its own.
    principals = dict(PRINCIPALS, **{"infrastructure+training": {"credential_name": "ML team builder"}})
    calls, plan = _controller_calls(tmp_path, awx_setup_aws_principals=principals, eks_cluster_admin_principal_arns=ADMITTED,
                                    awx_setup_aws_credentials={"preflight": "infrastructure"})
    (credential_type,) = calls["awx.awx.credential_type"]
    assert credential_type["name"] == plan["credential_type"] == "trainium.eks AWS role v1"
    created = {call["name"].removeprefix(PREFIX + " AWS "): call for call in calls["awx.awx.credential"]}
    assert set(created) == {"infrastructure", "training", "teardown", "status"}
    for name in ("infrastructure", "training", "teardown"):
        assert created[name]["credential_type"] == "trainium.eks AWS role v1"
        assert created[name]["inputs"]["role_arn"] == PRINCIPALS[name]["role_arn"]
    assert created["training"]["inputs"] == {**PRINCIPALS["training"]}
    assert created["teardown"]["inputs"] == {"role_arn": PRINCIPALS["teardown"]["role_arn"], "external_id": EXTERNAL_ID,
                                             "session_name": "trainium-eks-teardown"}
    assert created["status"] == {"name": f"{PREFIX} AWS status", "organization": "Default", "credential_type": "Amazon Web Services",
                                 "inputs": {"username": "AKIAIOSFODNN7EXAMPLE", "password": SECRET_KEY}, "update_secrets": False}
    # The controller's field names only (it refuses others).
    fields = {f["id"] for f in credential_type["inputs"]["fields"]}
    assert all(set(created[n]["inputs"]) <= fields for n in ("infrastructure", "training", "teardown"))
    # The preflight template moved onto the builder's credential; the scale template runs under the existing one.
    sent = {call["name"].removeprefix(PREFIX + " "): call["credentials"] for call in calls["awx.awx.job_template"]}
    assert sent["preflight"] == sent["infrastructure"] == sent["platform"] == [f"{PREFIX} AWS infrastructure"]
    assert sent["scale"] == ["ML team builder"] and sent["teardown"] == [f"{PREFIX} AWS teardown"]
    # The secrets reach the credential task, which logs nothing, and neither the plan nor its output shows them.
    (task,) = [t for t in _awx_setup_plays()[0]["tasks"] if "awx.awx.credential" in t]
    assert task["no_log"] is True
    code, _results, out = _plan(awx_setup_aws_principals=PRINCIPALS, eks_cluster_admin_principal_arns=ADMITTED)
    assert code == 0
    assert SECRET_KEY not in out and EXTERNAL_ID not in out and "AKIAIOSFODNN7EXAMPLE" not in out
    assert {c["key"]: sorted(c["secret_inputs"]) for c in plan["credentials"] if c["secret_inputs"]} == {
        "teardown": ["external_id"], "status": ["access_key_id", "secret_access_key"]}


def test_awx_setup_refuses_shared_teardown_credentials_unpinned_projects_and_bad_principals():
    lines = _problems(
        awx_setup_scm_ref="main",
        awx_setup_aws_access_key_id="AKIAIOSFODNN7EXAMPLE", awx_setup_aws_secret_access_key=SECRET_KEY,
        awx_setup_aws_credentials={"teardown": "infrastructure", "teardwon": "teardown"},
        awx_setup_aws_principals={"infrastructure": {"role_arn": f"arn:aws:iam::{ACCOUNT}:user/deployer", "role": "x"},
                                  "training": {"access_key_id": "AKIAIOSFODNN7EXAMPLE"},
                                  "status": {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/s", "credential_source": "Environment"},
                                  "nobody": {}})
    expected = [
        "awx_setup_aws_access_key_id: removed in 0.5.0 (one key served every template); allowed: a credential per principal",
        "awx_setup_aws_secret_access_key: removed in 0.5.0",
        'awx_setup_scm_ref: got "main"; allowed: what the project is pinned to, a release tag such as v0.5.0 or a full 40-hex commit',
        "awx_setup_aws_credentials: got template(s) teardwon; allowed: job templates among preflight, infrastructure, platform",
        "awx_setup_aws_principals: got credential(s) nobody that no job template uses",
        f"awx_setup_aws_credentials / awx_setup_aws_principals: got the teardown's credential, role or key ({PREFIX} AWS infrastructure)"
        " also for infrastructure, platform; allowed: a principal of the teardown's own",
        "awx_setup_aws_principals.infrastructure: got unknown field(s) role; allowed: credential_name, role_arn",
        f'awx_setup_aws_principals.infrastructure.role_arn: got "arn:aws:iam::{ACCOUNT}:user/deployer"; allowed: an IAM role ARN',
        "awx_setup_aws_principals.training.access_key_id / secret_access_key: got only one of them; allowed: both or neither",
        'awx_setup_aws_principals.status.credential_source: got "Environment"; allowed: Ec2InstanceMetadata, EcsContainer or WebIdentity',
        f"awx_setup_aws_principals.status.role_arn: got arn:aws:iam::{ACCOUNT}:role/s, which eks_cluster_admin_principal_arns does not"
        " list, for status (they reach the cluster)",
    ]
    assert len(lines) == len(expected), "\n".join(lines)
    for want, line in zip(expected, lines):
        assert line.startswith(want), (want, line)
    assert not [line for line in lines if SECRET_KEY in line]


def test_the_teardown_may_share_a_principal_only_when_allowed():
    # Under a credential of its own, but with the builder's role: refused, as is a role that every job could assume.
    principals = {"infrastructure": {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/trn-deploy"},
                  "teardown": {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/trn-deploy"}}
    ambient = ("awx_setup_aws_principals.teardown.external_id: got none for the teardown role, assumed with the identity of "
               "the execution environment (Ec2InstanceMetadata), which every job has;")
    shared, unbound = _problems(awx_setup_aws_principals=principals)
    assert shared.startswith(f"awx_setup_aws_credentials / awx_setup_aws_principals: got the teardown's credential, role or key "
                             f"({PREFIX} AWS teardown) also for infrastructure, platform;")
    assert unbound.startswith(ambient)
    own = {"teardown": {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/trn-teardown"}}
    (line,) = _problems(awx_setup_aws_principals=own, eks_cluster_admin_principal_arns=ADMITTED)
    assert line.startswith(ambient)
    # Asked for explicitly, both pass; so does the teardown's own role with an external ID.
    assert _plan(awx_setup_aws_principals=principals, awx_setup_allow_shared_teardown_credential=True)[0] == 0
    assert _plan(awx_setup_aws_credentials={"teardown": "infrastructure"}, awx_setup_allow_shared_teardown_credential=True)[0] == 0
    own["teardown"]["external_id"] = EXTERNAL_ID
    assert _plan(awx_setup_aws_principals=own, eks_cluster_admin_principal_arns=ADMITTED)[0] == 0


def test_a_branch_is_followed_only_when_asked_for():
    assert _problems(awx_setup_scm_ref="")[0].startswith('awx_setup_scm_ref: got ""; allowed: what the project is pinned to')
    assert _problems(awx_setup_scm_ref="0123abc")[0].startswith('awx_setup_scm_ref: got "0123abc";')
    assert _problems(awx_setup_scm_follow_branch=True) == [
        f'awx_setup_scm_ref: got "{COMMIT}" with awx_setup_scm_follow_branch=true; allowed: one of them, a pinned ref or the branch '
        "awx_setup_scm_branch followed"]


def _awx_inject(credential_type, inputs, private_data_dir):
    """What the controller does with a custom credential type when a job starts (AWX's CredentialType.inject_credential):
    the inputs that are set form the namespace of a sandboxed Jinja, each file injector is rendered into a 0600 file
    of the job's private data directory, tower.filename.<name> is that file's path, and the env injectors are rendered.
    Returns the job's environment variables."""
    fields = {field["id"]: field for field in credential_type["inputs"]["fields"]}
    assert set(inputs) <= set(fields) and set(credential_type["inputs"]["required"]) <= set(inputs)
    for name, value in inputs.items():
        assert value in fields[name].get("choices", [value])
    namespace = {name: value for name, value in inputs.items() if value}
    tower = types.SimpleNamespace(filename=types.SimpleNamespace())
    sandbox = ImmutableSandboxedEnvironment()
    (private_data_dir / "env").mkdir(parents=True)
    for label, template in credential_type["injectors"]["file"].items():
        path = private_data_dir / "env" / label
        path.write_text(sandbox.from_string(template).render(**namespace))
        path.chmod(0o600)
        setattr(tower.filename, label.split(".", 1)[1], str(path))
    return {name: sandbox.from_string(template).render(tower=tower, **namespace)
            for name, template in credential_type["injectors"]["env"].items()}


def _caller_under(job_env):
    """The identity boto3 gets in a job with ``job_env`` and no other AWS variable (moto answers STS)."""
    with mock.patch.dict(os.environ):
        for name in [n for n in os.environ if n.startswith("AWS_")]:
            del os.environ[name]
        os.environ.update(job_env)
        # amazon.aws passes the profile it reads from AWS_PROFILE; botocore alone (the EKS token helper) reads it itself.
        explicit = boto3.Session(profile_name=os.environ["AWS_PROFILE"]).client("sts", region_name="us-west-2").get_caller_identity()
        implicit = boto3.Session().client("sts", region_name="us-west-2").get_caller_identity()
    assert explicit["Arn"] == implicit["Arn"]
    return explicit["Arn"]


def test_the_role_credential_type_makes_boto3_assume_the_role(tmp_path):
    (task,) = [t for t in _awx_setup_plays()[0]["tasks"] if "awx.awx.credential_type" in t]
    credential_type = task["awx.awx.credential_type"]
    assert credential_type["kind"] == "cloud" and credential_type["inputs"]["required"] == ["role_arn"]
    teardown = f"arn:aws:iam::{ACCOUNT}:role/trn-teardown"
    with mock_aws():
        # Source access keys of its own, and an external ID.
        env = _awx_inject(credential_type, {"role_arn": teardown, "external_id": EXTERNAL_ID, "session_name": "trainium-eks-teardown",
                                            "access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": SECRET_KEY}, tmp_path / "keys")
        assert set(env) == {"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_PROFILE"}
        assert _caller_under(env) == f"arn:aws:sts::{ACCOUNT}:assumed-role/trn-teardown/trainium-eks-teardown"
        profile = botocore.session.Session(profile=env["AWS_PROFILE"])
        with mock.patch.dict(os.environ, env):
            config = profile.get_scoped_config()
        assert config["external_id"] == EXTERNAL_ID and config["source_profile"] == "trainium-eks-keys"
        assert oct(Path(env["AWS_SHARED_CREDENTIALS_FILE"]).stat().st_mode & 0o777) == "0o600"
        # The job pod's IRSA role (its web identity token) assumes the stage's role.
        token = tmp_path / "token"
        token.write_text("eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl")
        env = _awx_inject(credential_type, {"role_arn": f"arn:aws:iam::{ACCOUNT}:role/trn-train", "credential_source": "WebIdentity",
                                            "source_role_arn": f"arn:aws:iam::{ACCOUNT}:role/awx-jobs",
                                            "web_identity_token_file": str(token)}, tmp_path / "irsa")
        assert _caller_under(env) == f"arn:aws:sts::{ACCOUNT}:assumed-role/trn-train/trainium-eks-awx"
        assert not Path(env["AWS_SHARED_CREDENTIALS_FILE"]).read_text().strip()
    # The instance profile (or EKS Pod Identity) as the source: the profile says so, and has no keys anywhere.
    for source in ("Ec2InstanceMetadata", "EcsContainer"):
        env = _awx_inject(credential_type, {"role_arn": teardown, "credential_source": source}, tmp_path / source)
        with mock.patch.dict(os.environ, env):
            config = botocore.session.Session(profile=env["AWS_PROFILE"]).get_scoped_config()
        assert config == {"role_arn": teardown, "role_session_name": "trainium-eks-awx", "credential_source": source}
