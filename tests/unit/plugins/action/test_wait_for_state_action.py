# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The polling loop of trainium.eks.wait_for_state with a stubbed module: states, failure, timeout, progress lines."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from action_stub import stub_action
from ansible_collections.trainium.eks.plugins.action import wait_for_state as plugin


def test_dig_and_duration():
    assert plugin.dig({"a": {"b": "X"}}, "a.b") == "X"
    assert plugin.dig({"a": {}}, "a.b") is None and plugin.dig({"a": "s"}, "a.b") is None
    assert [plugin.duration(s) for s in (0, 42, 60, 75, 3601)] == ["0s", "42s", "1m00s", "1m15s", "60m01s"]


def _action(args, answers, check_mode=False):
    return stub_action(plugin, args, check_mode=check_mode, answers=answers)


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


def test_first_delay_doubles_up_to_delay(monkeypatch):
    slept = []
    monkeypatch.setattr(plugin.time, "sleep", slept.append)
    action = _action(dict(ARGS, delay=10, first_delay=1), [_state("CREATING")] * 5 + [_state("AVAILABLE")])
    assert action.run(task_vars={})["polls"] == 6
    assert slept == [1, 2, 4, 8, 10]
    slept.clear()
    # Without it (or 0): every delay from the start.
    action = _action(dict(ARGS, delay=10), [_state("CREATING")] * 2 + [_state("AVAILABLE")])
    assert action.run(task_vars={})["polls"] == 3 and slept == [10, 10]


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
    ({"first_delay": -1}, "first_delay: got -1.0; allowed: 0 or more seconds"),
    ({"timeout": -1}, "timeout: got -1.0"),
])
def test_bad_arguments(change, message):
    action = _action(dict(ARGS, **change), [])
    result = action.run(task_vars={})
    assert result["failed"] and message in result["msg"]
    action._execute_module.assert_not_called()


@pytest.mark.parametrize("change, message", [
    ({"ready": [], "gone": True, "state_path": "result.*.state"}, None),
    ({"gone": True}, "ready: got ['AVAILABLE'] with gone: true; allowed: one of them"),
    ({"gone": "perhaps"}, "gone: got 'perhaps'; allowed: true or false"),
    ({"ready_count": 2}, "ready_count: got 2 with state_path 'file_system.lifecycle'; allowed: only with a state_path that maps a list"),
    ({"ready_count": -1, "state_path": "result.*.state"}, "ready_count: got -1; allowed: 0 or more items"),
    ({"retry_on": [""]}, "retry_on: got ['']; allowed: a list of non-empty strings"),
])
def test_arguments_of_the_other_shapes(change, message):
    action = _action(dict(ARGS, **change), [{"result": []}])
    result = action.run(task_vars={})
    if message is None:
        assert not result.get("failed"), result
    else:
        assert result["failed"] and message in result["msg"]
        action._execute_module.assert_not_called()


# A list of states: a * key in state_path (amazon.aws.ec2_vpc_nat_gateway_info lists NAT gateways under "result").
LIST = dict(ARGS, module="amazon.aws.ec2_vpc_nat_gateway_info", state_path="result.*.state", ready=["available"], failed=["failed"],
            what="NAT gateways of vpc-1", typical="1-3 min on AWS")


def _nats(*states):
    return {"changed": False, "result": [{"nat_gateway_id": f"nat-{i}", "state": s} for i, s in enumerate(states)]}


def test_dig_maps_a_star_over_a_list_and_describe_counts():
    assert plugin.dig(_nats("pending", "available"), "result.*.state") == ["pending", "available"]
    assert plugin.dig({"result": []}, "result.*.state") == [] and plugin.dig({"result": {}}, "result.*.state") is None
    assert plugin.dig({"a": [{"b": {"c": 1}}, {}]}, "a.*.b.c") == [1, None] and plugin.dig({"a": [1, 2]}, "a.*") == [1, 2]
    assert [plugin.describe(s) for s in ("X", None, [], ["a", "b", "a"])] == ["X", "no state yet", "none", "2 a, 1 b"]
    # A Job without conditions yet (resources.*.status.conditions.*.type): not "1 None".
    assert plugin.describe([None]) == "1 with no state yet"
    assert plugin.describe([["Complete"], None]) == "1 ['Complete'], 1 with no state yet"


def test_a_list_waits_for_ready_count_items(quiet):
    action = _action(dict(LIST, ready_count=2), [_nats("pending", "pending"), _nats("available", "pending"), _nats("available", "available")])
    result = action.run(task_vars={})
    assert not result.get("failed") and result["polls"] == 3 and result["state"] == ["available", "available"] and result["changed"] is False
    assert [line.split(",")[0] for line in quiet] == ["  waiting for NAT gateways of vpc-1: 2 pending", "  waiting for NAT gateways of vpc-1: 1 available",
                                                      "  NAT gateways of vpc-1: 2 available after 0s"]


def test_a_list_waits_for_every_item_by_default_and_an_empty_list_is_not_ready():
    action = _action(dict(LIST), [_nats(), _nats("available", "pending"), _nats("available", "available")])
    assert action.run(task_vars={})["polls"] == 3
    # ready_count 0: nothing to wait for (no NAT gateway wanted).
    action = _action(dict(LIST, ready_count=0), [_nats()])
    assert action.run(task_vars={})["polls"] == 1


def test_a_list_fails_when_any_item_is_in_a_failed_state():
    action = _action(dict(LIST, ready_count=1), [_nats("pending", "failed", "available")])
    result = action.run(task_vars={})
    assert result["failed"] and result["msg"] == "NAT gateways of vpc-1 is 1 pending, 1 failed, 1 available after 0s; it will not become available"


def test_gone_waits_until_the_list_is_empty(quiet):
    action = _action(dict(LIST, ready=[], gone=True, what="NAT gateways of vpc-1 (deleting)"),
                     [_nats("deleting", "deleting"), _nats("deleting"), _nats()])
    result = action.run(task_vars={})
    assert not result.get("failed") and result["polls"] == 3 and result["state"] == []
    assert [line.split(",")[0] for line in quiet] == ["  waiting for NAT gateways of vpc-1 (deleting): 2 deleting",
                                                      "  waiting for NAT gateways of vpc-1 (deleting): 1 deleting",
                                                      "  NAT gateways of vpc-1 (deleting): gone after 0s"]


def test_gone_is_a_no_op_when_nothing_is_left_and_null_counts_as_gone(quiet):
    for answer in (_nats(), {"changed": False}):
        action = _action(dict(LIST, ready=[], gone=True), [answer])
        result = action.run(task_vars={})
        assert not result.get("failed") and result["polls"] == 1
    assert quiet == []


def test_gone_times_out_with_what_is_left(monkeypatch):
    clock = iter(range(0, 1000, 30))
    monkeypatch.setattr(plugin.time, "monotonic", lambda: next(clock))
    action = _action(dict(LIST, ready=[], gone=True, typical=None), [_nats("deleting")] * 10)
    result = action.run(task_vars={})
    assert result["failed"] and result["msg"] == "NAT gateways of vpc-1 is still 1 deleting after 1m00s (timeout 1m00s)"


# A module that acts, retried while AWS refuses it (ec2_security_group state=absent answers group_id: null).
GROUP = dict(ARGS, module="amazon.aws.ec2_security_group", state_path="group_id", ready=[None], failed=[], retry_on=["DependencyViolation"],
             what="security group trn-lustre (deleting)", typical=None)
REFUSED = {"failed": True, "exception": "Traceback ...", "error": {"code": "DependencyViolation"},
           "msg": "Failed to delete security group: An error occurred (DependencyViolation) when calling the DeleteSecurityGroup operation: "
                  "resource sg-1 has a dependent object"}


def test_retry_on_runs_the_module_again_and_reports_its_change(quiet):
    action = _action(dict(GROUP), [dict(REFUSED), dict(REFUSED), {"changed": True, "group_id": None}])
    result = action.run(task_vars={})
    assert not result.get("failed") and result["changed"] is True and result["polls"] == 3 and result["state"] is None
    assert [line.split(",")[0] for line in quiet] == ["  waiting for security group trn-lustre (deleting): refused (DependencyViolation)",
                                                      "  security group trn-lustre (deleting): gone after 0s"]


def test_retry_on_matches_the_error_code_or_a_part_of_the_message():
    by_code = {"failed": True, "error": {"code": "DependencyViolation"}, "msg": "Unable to delete"}
    by_message = {"failed": True, "msg": "resource has a dependent object (DependencyViolation)"}
    action = _action(dict(GROUP), [by_code, by_message, {"changed": False, "group_id": None}])
    result = action.run(task_vars={})
    assert not result.get("failed") and result["polls"] == 3 and result["changed"] is False


def test_retry_on_stops_at_once_on_another_failure():
    action = _action(dict(GROUP), [dict(REFUSED), {"failed": True, "msg": "UnauthorizedOperation"}])
    result = action.run(task_vars={})
    assert result["failed"] and result["polls"] == 2
    assert result["msg"] == "waiting for security group trn-lustre (deleting): amazon.aws.ec2_security_group failed: UnauthorizedOperation"


def test_retry_on_times_out_with_the_last_message(monkeypatch):
    clock = iter(range(0, 1000, 30))
    monkeypatch.setattr(plugin.time, "monotonic", lambda: next(clock))
    action = _action(dict(GROUP), [dict(REFUSED)] * 10)
    result = action.run(task_vars={})
    assert result["failed"] and "exception" not in result
    assert result["msg"] == ("security group trn-lustre (deleting) is still refused (DependencyViolation) after 1m00s (timeout 1m00s); "
                             "last error: " + REFUSED["msg"])


def test_retry_on_in_check_mode_runs_once_and_does_not_fail():
    action = _action(dict(GROUP), [dict(REFUSED), {"changed": True, "group_id": None}], check_mode=True)
    result = action.run(task_vars={})
    assert not result.get("failed") and result["polls"] == 1 and "a real run would wait" in result["msg"]
    action = _action(dict(GROUP), [{"changed": True, "group_id": None}], check_mode=True)
    assert action.run(task_vars={})["changed"] is True


def test_a_poll_never_reports_a_change():
    # eks_nodegroup state=absent answers changed=true while the node group is DELETING; the wait changed nothing.
    answers = [{"changed": True, "nodegroup": {"status": "DELETING"}}, {"changed": False, "nodegroup": {}}]
    action = _action(dict(ARGS, module="trainium.eks.eks_nodegroup", state_path="nodegroup.status", ready=[None], failed=[]), answers)
    result = action.run(task_vars={})
    assert not result.get("failed") and result["changed"] is False and result["polls"] == 2


ROOT = pathlib.Path(__file__).resolve().parents[4]


def _tasks(node):
    """Every task of a task list, with those inside blocks (block, rescue, always)."""
    for task in node or []:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always"):
                yield from _tasks(task.get(key))


def _task_files():
    files = sorted(ROOT.glob("roles/*/tasks/*.yml")) + sorted(ROOT.glob("roles/*/handlers/*.yml"))
    assert files
    return files


def test_no_role_waits_with_an_until_loop():
    """Each until/retries loop prints a FAILED - RETRYING line at every poll (issue 9): roles wait with wait_for_state."""
    loops = [f"{path.relative_to(ROOT)}: {task.get('name')}" for path in _task_files()
             for task in _tasks(yaml.safe_load(path.read_text(encoding="utf-8"))) if "until" in task or "retries" in task]
    assert loops == []


def test_every_wait_of_the_roles_names_known_options():
    waits = [(path, task["trainium.eks.wait_for_state"]) for path in _task_files()
             for task in _tasks(yaml.safe_load(path.read_text(encoding="utf-8"))) if "trainium.eks.wait_for_state" in task]
    assert len(waits) >= 10
    for path, args in waits:
        assert set(args) <= set(plugin._ARGS), path
        assert {"module", "state_path", "what", "delay", "timeout"} <= set(args), path
        assert bool(args.get("ready")) != bool(args.get("gone")), path
