# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX path without a controller: the execution environment's definition
(ansible-builder create), the playbooks AWX offers for the project, and the
job templates' surveys against the argument spec and the validation's ranges.
Runs made the way AWX makes them: tests/integration/test_awx_runner.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

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
    names = _requirement_names(ROOT / python)
    assert {"boto3", "botocore", "kubernetes"} <= set(names)
    assert not [n for n in names if n.startswith(TEST_TOOLS)], names
    assert (ROOT / meta["dependencies"]["system"]).is_file()
    # Every runtime package is pinned to the version the suites run with.
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", (ROOT / "requirements.txt").read_text(), re.M))
    for line in (ROOT / python).read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.strip().split("==")
            assert pins.get(name) == version, f"{name}=={version} in {python}, {pins.get(name)} in requirements.txt"


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
    assert "buildah" in (build / "bindep.txt").read_text()
    collections = {c["name"] for c in yaml.safe_load((build / "requirements.yml").read_text())["collections"]}
    assert {"amazon.aws", "community.aws", "kubernetes.core"} <= collections
    # The collection's tarball, at galaxy.yml's version, goes into the image.
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    assert [p.name for p in (build / "trainium-eks").iterdir()] == [f"trainium-eks-{version}.tar.gz"]


# --- the job templates and their surveys


def _awx_setup():
    plays = yaml.safe_load((ROOT / "playbooks/awx_setup.yml").read_text())
    return plays[0]["vars"]


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
                          "-e", "awx_setup_controller_token=abc", "-e", "awx_setup_execution_environment_image=quay.io/x/ee:latest-and-greatest!"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert "2 problem(s) in the variables; nothing was created" in bad.stdout
    assert "awx_setup_controller_host: got \"http://awx.example.com\"; allowed: the controller's https:// URL" in bad.stdout
    assert "awx_setup_execution_environment_image: got" in bad.stdout
    assert "abc" not in bad.stdout.replace("awx_setup_controller_token", "")
