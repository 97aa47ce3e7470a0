# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.neuron_job: the module in-process with a stubbed Kubernetes, and its action plugin's wait."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

import pytest

from ansible_collections.trainium.eks.plugins.action import neuron_job as action_plugin
from ansible_collections.trainium.eks.plugins.modules import neuron_job as module
from ansible_collections.trainium.eks.tests.unit.plugins.module_utils.test_trainium_neuron_job import PARAMS, StubApi, pod, with_phase

ARGS = {key: PARAMS[key] for key in ("name", "namespace", "queue", "image", "script", "script_args", "bf16", "cacheset", "labels")}


@pytest.fixture
def stub(monkeypatch):
    api = StubApi()
    monkeypatch.setattr(module, "make_api", lambda params: api)
    monkeypatch.setattr(module.kube, "HAS_KUBERNETES", True)
    return api


def test_module_present_check_mode_then_real_then_rerun(run_main, stub):
    code, planned = run_main(module.main, ARGS, check=True)
    assert code == 0 and planned["changed"] is True and planned["would"] == "create" and stub.jobs == {}
    assert planned["manifest"]["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "trn1.32xlarge"}
    code, created = run_main(module.main, ARGS)
    assert code == 0 and created["changed"] is True and "bert" in stub.jobs
    code, again = run_main(module.main, ARGS)
    assert code == 0 and again["changed"] is False and again["would"] == "nothing"


def test_module_refuses_bad_options_before_any_call(run_main, stub):
    code, result = run_main(module.main, dict(ARGS, cacheset="no/slash", report_every=45))
    assert code == 1 and "cacheset" in result["msg"] and "report_every" in result["msg"] and stub.calls == []


def test_module_status_and_absent(run_main, stub):
    run_main(module.main, ARGS)
    stub.jobs["bert"] = with_phase(stub.jobs["bert"], "Running")
    stub.pod_list["bert"] = [pod("bert-role1-0-0", "Running", 0), pod("bert-role1-1-0", "Running", 1)]
    stub.logs["bert-role1-0-0"] = "LOG x - (0, 3) step_loss : 5.0 learning_rate : 1e-4 throughput : 3.0"
    code, result = run_main(module.main, {"name": "bert", "namespace": "training", "state": "status"})
    assert code == 0 and result["status"]["phase"] == "Running" and result["status"]["pods"]["running"] == 2
    assert result["status"]["last_log"].startswith("LOG x - (0, 3) step_loss : 5.0")
    code, result = run_main(module.main, {"name": "bert", "namespace": "training", "state": "absent"})
    assert code == 0 and result["changed"] is True and stub.jobs == {}


# ------------------------------------------------------------------------------------------- action plugin


def status_answer(phase, running=0, pending=0, failed_pods=(), reason=None, last_log=None, done=False, for_good=False, retry=0):
    return {"changed": False, "status": {"exists": True, "phase": phase, "nnodes": 2, "retry_count": retry, "max_retry": 3,
                                         "pods": {"running": running, "pending": pending, "succeeded": 0, "failed": len(failed_pods)},
                                         "pending_reason": reason, "last_log": last_log, "failed_pods": list(failed_pods),
                                         "done": done, "failed_for_good": for_good}}


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.fixture
def run_action(monkeypatch):
    lines = []
    clock = Clock()
    monkeypatch.setattr(action_plugin.display, "display", lines.append)
    monkeypatch.setattr(action_plugin.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(action_plugin, "time", SimpleNamespace(monotonic=clock, sleep=clock.sleep))

    def run(args, answers, check_mode=False):
        task = mock.MagicMock()
        task.args = args
        task.check_mode = check_mode
        action = action_plugin.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=mock.MagicMock(),
                                            shared_loader_obj=None)
        action._execute_module = mock.MagicMock(side_effect=answers)
        return action.run(task_vars={}), action._execute_module

    run.lines = lines
    return run


CREATED = {"changed": True, "job": {"name": "bert", "namespace": "training"}, "would": "create"}
LOG = "LOG d - (0, 9) step_loss : 6.5 learning_rate : 1e-4 throughput : 12.0"


def test_wait_prints_progress_and_ends_completed(run_action):
    answers = [CREATED] + [status_answer("Pending", pending=2)] * 2 + [status_answer("Running", running=2, last_log=LOG)] * 10 \
        + [status_answer("Completed", done=True)]
    result, calls = run_action(dict(ARGS, report_every=10), answers)
    assert not result.get("failed") and result["changed"] is True and result["status"]["phase"] == "Completed"
    assert calls.call_args_list[1].kwargs["module_args"]["state"] == "status"
    lines = run_action.lines
    assert lines[0].startswith("  Volcano Job training/bert: Pending, 0 running, 2 pending")
    assert any(line.startswith("  Volcano Job training/bert: Running, 2 running, 0 pending") and line.endswith(LOG) for line in lines)
    # unchanged Running for 50 s with report_every 10: a line at least every 10 s, no more than one per poll
    running = [line for line in lines if ", 2 running" in line]
    assert 5 <= len(running) <= 10


def test_wait_for_running_ends_when_every_pod_runs(run_action):
    result, calls = run_action(dict(ARGS, wait_for="running"), [CREATED, status_answer("Running", running=1, pending=1),
                                                                status_answer("Running", running=2)])
    assert not result.get("failed") and calls.call_count == 3


def test_pending_with_a_reason_fails_after_pending_timeout(run_action):
    reason = "0/4 nodes are unavailable: 2 Insufficient aws.amazon.com/neuron"
    answers = [CREATED] + [status_answer("Pending", pending=3, reason=reason)] * 100
    result, calls = run_action(dict(ARGS, pending_timeout=20, report_every=30), answers)
    assert result["failed"] is True and reason in result["msg"] and "stays Pending" in result["msg"]
    assert calls.call_count <= 7  # 20 s of polls every 5 s, not a wait_timeout


def test_failed_job_names_the_pod_its_exit_code_and_log(run_action):
    failed = {"name": "bert-role1-1-0", "exit_code": 1, "reason": "Error", "log": ["step 3", "RuntimeError: boom"]}
    answers = [CREATED, status_answer("Running", running=2), status_answer("Restarting", failed_pods=[failed], retry=1),
               status_answer("Failed", failed_pods=[failed], for_good=True, retry=3)]
    result = run_action(dict(ARGS), answers)[0]
    assert result["failed"] is True
    assert "pod bert-role1-1-0 exited with code 1" in result["msg"] and result["msg"].endswith("step 3\nRuntimeError: boom")
    assert any("pod bert-role1-1-0 failed (exit code 1); Volcano restarts the job" in line for line in run_action.lines)
    assert not any("FAILED" in line for line in run_action.lines)


def test_no_wait_in_check_mode_when_skipped_or_asked(run_action):
    for args, answer, check in ((dict(ARGS), CREATED, True), (dict(ARGS, wait=False), CREATED, False),
                                (dict(ARGS, mode="precompile"), dict(CREATED, changed=False, skipped_precompile=True), False),
                                (dict(ARGS, state="absent"), CREATED, False)):
        result, calls = run_action(args, [answer], check_mode=check)
        assert calls.call_count == 1 and not result.get("failed")


def test_wait_timeout(run_action):
    result = run_action(dict(ARGS, wait_timeout=30), [CREATED] + [status_answer("Running", running=2)] * 100)[0]
    assert result["failed"] is True and "still Running after 30s" in result["msg"]
