# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The polling loop of trainium.eks.wait_for_state with a stubbed module: states, failure, timeout, progress lines."""

from __future__ import annotations

from unittest import mock

import pytest

from ansible_collections.trainium.eks.plugins.action import wait_for_state as plugin


def test_dig_and_duration():
    assert plugin.dig({"a": {"b": "X"}}, "a.b") == "X"
    assert plugin.dig({"a": {}}, "a.b") is None and plugin.dig({"a": "s"}, "a.b") is None
    assert [plugin.duration(s) for s in (0, 42, 60, 75, 3601)] == ["0s", "42s", "1m00s", "1m15s", "60m01s"]


def _action(args, answers, check_mode=False):
    task = mock.MagicMock()
    task.args = args
    task.check_mode = check_mode
    task.async_val = 0
    action = plugin.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=mock.MagicMock(), shared_loader_obj=None)
    action._execute_module = mock.MagicMock(side_effect=answers)
    return action


ARGS = {"module": "trainium.eks.fsx_lustre", "module_args": {"name": "fs"}, "state_path": "file_system.lifecycle",
        "ready": ["AVAILABLE"], "failed": ["FAILED"], "what": "file system fs", "typical": "5-15 min", "delay": 0, "timeout": 60}


def _state(value):
    return {"changed": False, "file_system": {"lifecycle": value}}


@pytest.fixture(autouse=True)
def quiet(monkeypatch):
    lines = []
    monkeypatch.setattr(plugin, "_apply_action_arg_defaults", None)
    monkeypatch.setattr(plugin.display, "display", lines.append)
    monkeypatch.setattr(plugin.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    return lines


def test_polls_until_ready_and_prints_each_new_state(quiet):
    action = _action(dict(ARGS), [_state("CREATING"), _state("CREATING"), _state("UPDATING"), _state("AVAILABLE")])
    result = action.run(task_vars={})
    assert result["state"] == "AVAILABLE" and result["polls"] == 4 and not result.get("failed") and result["changed"] is False
    assert [line.split(",")[0] for line in quiet] == ["  waiting for file system fs: CREATING", "  waiting for file system fs: UPDATING",
                                                      "  file system fs: AVAILABLE after 0s"]


def test_a_failed_state_stops_at_once():
    action = _action(dict(ARGS), [_state("CREATING"), _state("FAILED"), _state("AVAILABLE")])
    result = action.run(task_vars={})
    assert result["failed"] and result["polls"] == 2
    assert result["msg"].startswith("file system fs is FAILED after 0s; it will not become AVAILABLE")


def test_timeout(monkeypatch):
    clock = iter(range(0, 1000, 30))
    monkeypatch.setattr(plugin.time, "monotonic", lambda: next(clock))
    action = _action(dict(ARGS), [_state("CREATING")] * 10)
    result = action.run(task_vars={})
    assert result["failed"] and result["state"] == "CREATING"
    assert result["msg"] == "file system fs is still CREATING after 1m00s (timeout 1m00s; typically 5-15 min)"


def test_check_mode_polls_once():
    action = _action(dict(ARGS), [_state("CREATING"), _state("AVAILABLE")], check_mode=True)
    result = action.run(task_vars={})
    assert result["polls"] == 1 and not result.get("failed") and "a real run would wait" in result["msg"]


def test_module_failure_is_reported():
    action = _action(dict(ARGS), [{"failed": True, "msg": "AccessDenied"}])
    result = action.run(task_vars={})
    assert result["failed"] and result["msg"] == "waiting for file system fs: trainium.eks.fsx_lustre failed: AccessDenied"


@pytest.mark.parametrize("change, message", [
    ({"ready": []}, "ready: got []"),
    ({"module": ""}, "module: got ''"),
    ({"delay": "soon"}, "delay: got 'soon'"),
    ({"timeout": -1}, "timeout: got -1.0"),
])
def test_bad_arguments(change, message):
    action = _action(dict(ARGS, **change), [])
    result = action.run(task_vars={})
    assert result["failed"] and message in result["msg"]
    action._execute_module.assert_not_called()
