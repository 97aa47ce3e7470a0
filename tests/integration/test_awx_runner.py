# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs made the way AWX makes them: ansible-runner with a private data
directory (env/extravars from a survey answer, env/envvars, the inventory,
the project), on the rehearsal, checked through the runner's artifacts
(status, rc, the stats event) and the account."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"


def _runner(tmp_path, rehearsal, playbook, extravars, cmdline=""):
    """ansible-runner run with a private data directory; returns (status, rc, stats, stdout)."""
    private = tmp_path / f"runner-{len(list(tmp_path.glob('runner-*')))}"
    (private / "env").mkdir(parents=True)
    (private / "env" / "extravars").write_text(json.dumps(extravars))
    envvars = {key: value for key, value in rehearsal.items() if key.startswith(("AWS_", "TRAINIUM_", "KUBECONFIG"))}
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
