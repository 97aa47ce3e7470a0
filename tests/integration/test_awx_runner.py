# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs made the way AWX makes them: ansible-runner with a private data
directory (env/extravars from a survey answer, env/envvars, the inventory,
the project), on the rehearsal, checked through the runner's artifacts
(status, rc, the stats event) and the account."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
_IAM_SPEC = importlib.util.spec_from_file_location("iam_policy", ROOT / "tests" / "iam" / "iam_policy.py")
iam_policy = importlib.util.module_from_spec(_IAM_SPEC)
_IAM_SPEC.loader.exec_module(iam_policy)
CLUSTER = "trn-rehearsal"


@pytest.fixture()
def aws_calls(rehearsal, tmp_path):
    """The record of the AWS requests of this test's runs (tests/iam/iam_policy.py)."""
    return iam_policy.record_calls(rehearsal, tmp_path / "aws-calls.jsonl")


def _runner(tmp_path, rehearsal, playbook, extravars, cmdline=""):
    """ansible-runner run with a private data directory; returns (status, rc, stats, stdout)."""
    private = tmp_path / f"runner-{len(list(tmp_path.glob('runner-*')))}"
    (private / "env").mkdir(parents=True)
    (private / "env" / "extravars").write_text(json.dumps(extravars))
    # The rehearsal's endpoints and credentials; with the aws_calls fixture, the IAM recorder's settings too
    # (ansible-runner appends its own callback directory to ANSIBLE_CALLBACK_PLUGINS).
    envvars = {key: value for key, value in rehearsal.items()
               if key.startswith(("AWS_", "TRAINIUM_", "KUBECONFIG", "BOTOCORE_EXPERIMENTAL", "ANSIBLE_CALLBACK"))
               or key == "PYTHONPATH"}
    envvars.update(ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    (private / "env" / "envvars").write_text(json.dumps(envvars))
    if cmdline:
        (private / "env" / "cmdline").write_text(cmdline)
    (private / "inventory").symlink_to(ROOT / "inventories" / "local")
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    done = subprocess.run([str(BIN / "ansible-runner"), "run", str(private), "-p", playbook, "--project-dir", str(ROOT), "--ident", "job"],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    artifacts = private / "artifacts" / "job"
    status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else f"no status ({done.stderr[-2000:]})"
    rc = int((artifacts / "rc").read_text()) if (artifacts / "rc").exists() else None
    stats = {}
    for event_file in sorted((artifacts / "job_events").glob("*.json")):
        event = json.loads(event_file.read_text())
        if event.get("event") == "playbook_on_stats":
            stats = event["event_data"]
    stdout = (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else done.stdout
    return status, rc, stats, stdout


def test_runner_runs_site_in_check_mode_with_a_survey_answer(aws, rehearsal, tmp_path):
    before = aws.resources()
    answer = {"trainium_survey_cluster_name": "trn-awx", "trainium_survey_node_count": 1, "trainium_survey_max_steps": 30}
    status, rc, stats, stdout = _runner(tmp_path, rehearsal, "site.yml", answer, cmdline="--check")
    assert (status, rc) == ("successful", 0), stdout[-4000:]
    assert stats.get("failures", {}) == {} and "localhost" in stats.get("ok", {})
    # The survey's answers reached the model: the cluster's name, one node, and the job sized to it.
    assert "trn-awx" in stdout
    assert "trn1: 1 x trn1.32xlarge" in stdout
    assert "trn-rehearsal" not in stdout.replace("trn-rehearsal-", "")
    assert aws.resources() == before


def test_runner_refuses_an_out_of_range_answer_before_any_call(aws, rehearsal, tmp_path):
    before = aws.resources()
    status, rc, dummy, stdout = _runner(tmp_path, rehearsal, "site.yml", {"trainium_survey_node_count": 101, "trainium_survey_precision": "fp8"})
    assert status == "failed" and rc == 2
    assert "trainium_node_pools[0].count: got 101 (int); allowed: an integer from 0 to 100" in stdout
    assert "trainium_job.precision: got 'fp8' (str); allowed: one of bf16, fp32" in stdout
    assert aws.resources() == before


def test_runner_names_an_unknown_survey_variable(aws, rehearsal, tmp_path):
    status, stdout = _runner(tmp_path, rehearsal, "playbooks/preflight.yml", {"trainium_survey_nodes": 2})[::3]
    assert status == "failed"
    assert "trainium_survey_nodes: not survey variables" in stdout


def test_runner_runs_site_for_real_with_a_survey_answer_then_tears_down(aws, aws_calls, rehearsal, local_vars, tmp_path):
    """A real site.yml through ansible-runner, stopped after the launch templates (no node group, ECR or FSx yet),
    the survey answering trn1n.32xlarge: its launch template gets 16 EFA interfaces. Then site.yml --tags teardown,
    also through the runner, with what would stop any other run: teardown needs the names alone.

    On this worker's own moto (not the shared stack's, which the end-to-end test holds for most of the run): the
    shared token authenticator knows only the shared moto's clusters, so the access check is off; the teardown's
    Kubernetes side then finds no cluster that takes its token and leaves the shared cluster's objects alone."""
    baseline = aws.resources()
    kubeconfig = str(tmp_path / "kube" / f"{CLUSTER}.yaml")
    answer = {"trainium_survey_instance_type": "trn1n.32xlarge", "trainium_kubeconfig": kubeconfig, "eks_cluster_verify_access": False}
    status, rc, stats, stdout = _runner(tmp_path, rehearsal, "site.yml", answer, cmdline="--tags network,eks_cluster,trn_launch_template")
    assert (status, rc) == ("successful", 0), stdout[-4000:]
    assert stats.get("failures", {}) == {} and stats["changed"]["localhost"] > 0, stats
    ec2 = aws.client("ec2")
    (template,) = ec2.describe_launch_templates()["LaunchTemplates"]
    data = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Default"])[
        "LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["InstanceType"] == "trn1n.32xlarge"
    # EC2's layout: the ENA primary and an EFA-only interface on card 0, an EFA-only interface on each other card.
    assert sorted(i["NetworkCardIndex"] for i in data["NetworkInterfaces"]) == [0] + list(range(16))
    assert aws.client("eks").list_nodegroups(clusterName=CLUSTER)["nodegroups"] == []
    assert aws.client("fsx").describe_file_systems()["FileSystems"] == []

    # Teardown needs the names alone (issue 9): a capacity reservation that has
    # ended, which preflight would refuse, and a role variable the validation
    # pass would refuse do not stop it.
    pools = [dict(local_vars["trainium_node_pools"][0], instance_type="trn1n.32xlarge")]
    ended = [dict(pools[0], capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-0123456789abcdef0")]
    gone = {"trainium_node_pools": ended, "trn_launch_template_metadata_hop_limit": 99, "trainium_kubeconfig": kubeconfig}
    status, rc, stats, stdout = _runner(tmp_path, rehearsal, "site.yml", gone, cmdline="--tags teardown")
    assert (status, rc) == ("successful", 0), stdout[-4000:]
    assert "Look up the zones" not in stdout  # no preflight
    # The shared cluster (the end-to-end test's, maybe running now) refused this moto's token: nothing removed there.
    assert "Remove TensorBoard" not in stdout and "Ask the cluster whether it still answers" in stdout, stdout[-4000:]
    assert aws.resources() == baseline
    assert aws_calls.exists(), "the runner's runs recorded no AWS request"
    iam_policy.assert_record_allowed(aws_calls, aws, local_vars, CLUSTER)
