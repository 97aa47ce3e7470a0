# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The shared AWS-call layer: constants, error handler, tag diff and writer, plan shape, waiter, in-use retry."""

from __future__ import annotations

import types

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common


ARN = "arn:aws:eks:us-west-2:123456789012:cluster/c"


def client_error(code, message="refused"):
    return ClientError({"Error": {"Code": code, "Message": message}}, "Operation")


def answers(*states, key="status"):
    """describe() answering each state in turn (None: gone), the last one forever."""
    states = list(states)

    def describe():
        state = states.pop(0) if len(states) > 1 else states[0]
        return None if state is None else {key: state}

    return describe


# ---------------------------------------------------------------- constants


def test_taint_effects_have_one_spelling_each_and_map_both_ways():
    assert set(common.KUBERNETES_TO_EKS_TAINT_EFFECT) == set(common.KUBERNETES_TAINT_EFFECTS)
    assert set(common.KUBERNETES_TO_EKS_TAINT_EFFECT.values()) == set(common.EKS_TAINT_EFFECTS)
    assert all(common.EKS_TO_KUBERNETES_TAINT_EFFECT[common.KUBERNETES_TO_EKS_TAINT_EFFECT[k]] == k for k in common.KUBERNETES_TAINT_EFFECTS)
    assert not set(common.EKS_TAINT_EFFECTS) & set(common.KUBERNETES_TAINT_EFFECTS)
    assert sorted(common.TAINT_EFFECT_CHOICES) == sorted(common.EKS_TAINT_EFFECTS + common.KUBERNETES_TAINT_EFFECTS)


@pytest.mark.parametrize("given, eks", [("NoSchedule", "NO_SCHEDULE"), ("PreferNoSchedule", "PREFER_NO_SCHEDULE"),
                                        ("NO_EXECUTE", "NO_EXECUTE"), ("NoExecute", "NO_EXECUTE")])
def test_eks_taint_effect_accepts_either_spelling(given, eks):
    assert common.eks_taint_effect(given) == eks


def test_eks_taint_effect_refuses_anything_else():
    with pytest.raises(ValueError):
        common.eks_taint_effect("noschedule")


def test_fsx_throughputs_cover_every_deployment_type():
    assert set(common.FSX_THROUGHPUTS) == set(common.FSX_DEPLOYMENT_TYPES)
    assert common.FSX_THROUGHPUTS["SCRATCH_2"] == ()


# ----------------------------------------------------------------- tag diff


def test_tag_diff_with_purge_removes_what_is_not_asked_but_never_aws_tags():
    current = {"keep": "1", "change": "old", "stale": "x", "aws:cloudformation:stack-name": "s"}
    to_set, to_remove = common.tag_diff(current, {"keep": "1", "change": "new", "add": "2"}, purge_tags=True)
    assert to_set == {"change": "new", "add": "2"}
    assert to_remove == ["stale"]


def test_tag_diff_without_purge_only_adds_and_changes():
    current = {"keep": "1", "change": "old", "stale": "x"}
    assert common.tag_diff(current, {"change": "new"}, purge_tags=False) == ({"change": "new"}, [])


def test_tag_diff_sorts_removals_and_stringifies_values():
    assert common.tag_diff({"z": "1", "a": "2", "n": "7"}, {"n": 7}) == ({}, ["a", "z"])
    assert common.tag_diff({}, {"count": 7, 3: True}) == ({"count": "7", "3": "True"}, [])


def test_tag_diff_of_no_desired_tags_changes_nothing_even_with_purge():
    assert common.tag_diff({"a": "1"}, None, purge_tags=True) == ({}, [])
    assert common.tag_diff({"a": "1"}, {}, purge_tags=True) == ({}, ["a"])
    assert common.tag_diff(None, {"a": "1"}) == ({"a": "1"}, [])


def test_tags_after_applies_a_diff():
    current = {"a": "1", "b": "2", "aws:x": "y"}
    to_set, to_remove = common.tag_diff(current, {"a": "9", "c": "3"})
    assert common.tags_after(current, to_set, to_remove) == {"a": "9", "c": "3", "aws:x": "y"}
    assert current == {"a": "1", "b": "2", "aws:x": "y"}


@pytest.mark.parametrize("service, untag, tag", [
    ("eks", ("untag_resource", {"resourceArn": ARN, "tagKeys": ["old"]}),
     ("tag_resource", {"resourceArn": ARN, "tags": {"b": "2", "a": "1"}})),
    ("ecr", ("untag_resource", {"resourceArn": ARN, "tagKeys": ["old"]}),
     ("tag_resource", {"resourceArn": ARN, "tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]})),
    ("fsx", ("untag_resource", {"ResourceARN": ARN, "TagKeys": ["old"]}),
     ("tag_resource", {"ResourceARN": ARN, "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]})),
    ("ec2", ("delete_tags", {"Resources": [ARN], "Tags": [{"Key": "old"}]}),
     ("create_tags", {"Resources": [ARN], "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]})),
])
def test_update_tags_speaks_each_service(boto3_session, service, untag, tag):
    client = boto3_session.client(service, endpoint_url="http://127.0.0.1:1")
    with Stubber(client) as stub:
        stub.add_response(untag[0], {}, untag[1])
        stub.add_response(tag[0], {}, tag[1])
        common.update_tags(client, ARN, {"b": "2", "a": "1"}, ["old"])
        common.update_tags(client, ARN, {}, [])  # nothing to do: no call
        stub.assert_no_pending_responses()


def test_update_tags_failure_is_a_trainium_error(boto3_session, sleeps):
    client = boto3_session.client("eks", endpoint_url="http://127.0.0.1:1")
    with Stubber(client) as stub:
        stub.add_client_error("tag_resource", "AccessDeniedException", "no", 403)
        with pytest.raises(common.TrainiumAWSError, match="Failed to update the tags"):
            common.update_tags(client, ARN, {"a": "1"}, [])
    assert sleeps == []


# ------------------------------------------------------------------- errors


class SampleError(common.TrainiumAWSError):
    pass


SampleHandler = common.error_handler(SampleError, "NoSuchThing", "GoneAway")


def test_error_handler_wraps_botocore_errors_and_knows_missing_codes():
    @SampleHandler.common_error_handler("do the thing")
    def failing():
        raise client_error("AccessDenied")

    @SampleHandler.list_error_handler("find the thing", default_value="absent")
    def missing(code):
        raise client_error(code)

    with pytest.raises(SampleError) as raised:
        failing()
    assert raised.value.message == "Failed to do the thing" and isinstance(raised.value, common.TrainiumAWSError)
    assert missing("GoneAway") == "absent" and missing("NoSuchThing") == "absent"
    with pytest.raises(SampleError):
        missing("AccessDenied")
    assert SampleHandler.__name__ == "SampleErrorHandler"


def test_fail_on_aws_error_reports_the_error_the_amazon_aws_way():
    reported = []
    module = types.SimpleNamespace(fail_json_aws_error=reported.append)
    error = SampleError(message="Failed to do the thing", exception=client_error("AccessDenied"))

    def broken():
        raise error

    assert common.fail_on_aws_error(module, broken) is None
    assert reported == [error]
    assert common.fail_on_aws_error(module, lambda a, b=0: a + b, 1, b=2) == 3 and reported == [error]


def test_error_code_and_in_use():
    assert common.error_code(client_error("ResourceInUseException")) == "ResourceInUseException"
    assert common.error_code(ValueError("x")) is None
    assert common.is_in_use_error(client_error("ResourceInUseException"))
    assert not common.is_in_use_error(client_error("InvalidParameterException"))


# ------------------------------------------------------------------- plans


def test_new_plan_shape():
    plan = common.new_plan(["a: cannot"], ({"t": "1"}, ["z", "b"]), config=None, version=None)
    assert plan == {"errors": ["a: cannot"], "tags_to_set": {"t": "1"}, "tags_to_remove": ["b", "z"],
                    "config": None, "version": None, "changed": True}
    assert common.new_plan(["only an error"], config=None, update={})["changed"] is False
    assert common.new_plan(update={"StorageCapacity": 2400})["changed"] is True
    assert common.new_plan() == {"errors": [], "tags_to_set": {}, "tags_to_remove": [], "changed": False}


# ------------------------------------------------------------------- waiter


def test_wait_for_returns_the_answer_that_is_done(fake_clock):
    clock = fake_clock
    result = common.wait_for(answers("CREATING", "CREATING", "ACTIVE"), lambda a: a["status"] == "ACTIVE", 600, "thing t", "to be up",
                             delay=15, clock=clock, sleep=clock.sleep)
    assert result == {"status": "ACTIVE"} and clock.slept == [15, 15]


def test_wait_for_first_delay_doubles_up_to_delay_and_keeps_the_timeout(fake_clock):
    clock = fake_clock
    result = common.wait_for(answers("CREATING", "CREATING", "CREATING", "CREATING", "ACTIVE"), lambda a: a["status"] == "ACTIVE", 600,
                             "thing t", "to be up", delay=10, first_delay=3, clock=clock, sleep=clock.sleep)
    assert result == {"status": "ACTIVE"} and clock.slept == [3, 6, 10, 10]
    clock.slept.clear()
    with pytest.raises(common.TrainiumAWSError, match=r"Timed out after 5 s"):
        common.wait_for(answers(*["CREATING"] * 9), lambda a: False, 5, "thing t", "to be up",
                        delay=10, first_delay=1, clock=clock, sleep=clock.sleep)
    assert clock.slept == [1, 2, 4]
    # A first delay above the delay is the delay.
    clock.slept.clear()
    common.wait_for(answers("CREATING", "ACTIVE"), lambda a: a["status"] == "ACTIVE", 600, "thing t", "to be up",
                    delay=2, first_delay=30, clock=clock, sleep=clock.sleep)
    assert clock.slept == [2]


def test_wait_for_gives_up_after_the_timeout_naming_the_last_state(fake_clock):
    clock = fake_clock
    with pytest.raises(common.TrainiumAWSError) as raised:
        common.wait_for(answers("CREATING", "CREATING", "UPDATING"), lambda a: False, 40, "thing t", "to be up",
                        delay=15, clock=clock, sleep=clock.sleep)
    assert raised.value.message == "Timed out after 40 s waiting for thing t to be up (last state: UPDATING)"
    assert clock.slept == [15, 15, 15]


def test_wait_for_raises_the_callers_error_and_says_gone(fake_clock):
    clock = fake_clock
    with pytest.raises(SampleError, match=r"\(last state: gone\)"):
        common.wait_for(answers(None), lambda a: False, 0, "thing t", "to come back", error=SampleError, clock=clock, sleep=clock.sleep)
    assert clock.slept == []


def test_wait_for_stops_at_a_failure(fake_clock):
    clock = fake_clock
    with pytest.raises(common.TrainiumAWSError, match="^thing t broke$"):
        common.wait_for(answers("CREATING", "BROKEN"), lambda a: False, 600, "thing t", "to be up",
                        failure=lambda a: "thing t broke" if a["status"] == "BROKEN" else None, clock=clock, sleep=clock.sleep)
    assert clock.slept == [15]


def test_wait_for_status_active_failed_gone_and_disappeared(fake_clock):
    clock = fake_clock
    assert common.wait_for_status(answers("CREATING", "ACTIVE"), "ACTIVE", 60, "x", delay=5, clock=clock, sleep=clock.sleep) == {"status": "ACTIVE"}
    assert common.wait_for_status(answers("DELETING", None), "ACTIVE", 60, "x", gone=True, delay=5, clock=clock, sleep=clock.sleep) is None
    with pytest.raises(common.TrainiumAWSError, match="^x is CREATE_FAILED: no capacity$"):
        common.wait_for_status(answers("CREATE_FAILED"), "ACTIVE", 60, "x", failed=("CREATE_FAILED",), reason=lambda a: "no capacity",
                               clock=clock, sleep=clock.sleep)
    with pytest.raises(common.TrainiumAWSError, match="^x disappeared while waiting for it to become AVAILABLE$"):
        common.wait_for_status(answers(None, key="Lifecycle"), "AVAILABLE", 60, "x", state_key="Lifecycle", clock=clock, sleep=clock.sleep)
    with pytest.raises(common.TrainiumAWSError, match=r"x to be deleted \(last state: DELETING\)"):
        common.wait_for_status(answers("DELETING"), "ACTIVE", 10, "x", gone=True, delay=5, clock=clock, sleep=clock.sleep)


def test_wait_until_settled_waits_out_busy_states_only(fake_clock):
    clock = fake_clock
    describe = answers("CREATING", "UPDATING", "FAILED", key="Lifecycle")
    assert common.wait_until_settled(describe, ("CREATING", "UPDATING"), 600, "fs", state_key="Lifecycle",
                                     clock=clock, sleep=clock.sleep) == {"Lifecycle": "FAILED"}
    assert clock.slept == [15, 15]
    assert common.wait_until_settled(answers("CREATING", None), ("CREATING",), 600, "fs", clock=clock, sleep=clock.sleep) is None
    with pytest.raises(common.TrainiumAWSError, match=r"fs to finish CREATING or UPDATING before deleting it .*\(last state: UPDATING\)"):
        common.wait_until_settled(answers("UPDATING"), ("CREATING", "UPDATING"), 20, "fs", clock=clock, sleep=clock.sleep)


def test_waits_resolve_time_sleep_when_called(monkeypatch):
    """Without an injected sleep the waiter sleeps with time.sleep as it is at call time (tests patch it)."""
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    assert common.wait_for(answers("A", "B"), lambda a: a["status"] == "B", 60, "x", "to be B", delay=3) == {"status": "B"}
    assert slept == [3]


# ------------------------------------------------------------ in-use retry


def flaky(*outcomes):
    """A call that raises or returns each outcome in turn; records its calls."""
    outcomes = list(outcomes)
    calls = []

    def call():
        calls.append(1)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return call, calls


def test_retry_in_use_retries_an_in_use_error_then_succeeds(sleeps, fake_clock):
    clock = fake_clock
    call, calls = flaky(client_error("ResourceInUseException"), client_error("ResourceInUseException"), "done")
    assert common.retry_in_use(call, 600, clock=clock, sleep=clock.sleep) == "done"
    assert len(calls) == 3 and clock.slept == [5, 10] and sleeps == []


def test_retry_in_use_backs_off_up_to_max_delay_and_gives_up_at_the_timeout(fake_clock):
    clock = fake_clock
    call, calls = flaky(*[client_error("ResourceInUseException")] * 10)
    with pytest.raises(ClientError, match="ResourceInUseException"):
        common.retry_in_use(call, 100, clock=clock, sleep=clock.sleep)
    assert clock.slept == [5, 10, 20, 30, 30, 5]
    assert sum(clock.slept) == 100 and len(calls) == 7


def test_retry_in_use_does_not_retry_other_errors_or_without_a_timeout(fake_clock):
    clock = fake_clock
    call, calls = flaky(client_error("AccessDeniedException"))
    with pytest.raises(ClientError, match="AccessDenied"):
        common.retry_in_use(call, 600, clock=clock, sleep=clock.sleep)
    call, calls = flaky(client_error("ResourceInUseException"))
    with pytest.raises(ClientError, match="ResourceInUse"):
        common.retry_in_use(call, None, clock=clock, sleep=clock.sleep)
    assert len(calls) == 1 and clock.slept == []


def test_retry_in_use_takes_its_own_predicate(fake_clock):
    clock = fake_clock
    call, calls = flaky(client_error("BadRequest", "still CREATING"), "ok")
    assert common.retry_in_use(call, 60, in_use=lambda e: "CREATING" in str(e), clock=clock, sleep=clock.sleep) == "ok"
    assert len(calls) == 2 and clock.slept == [5]


def test_retry_in_use_leaves_throttling_to_awsretry(sleeps, fake_clock):
    clock = fake_clock
    call, calls = flaky(client_error("Throttling"), "ok")
    assert common.retry_in_use(call, 60, clock=clock, sleep=clock.sleep) == "ok"
    assert len(calls) == 2 and clock.slept == [] and len(sleeps) == 1


def test_all_items_reads_every_page_or_the_one_answer():
    import boto3  # pylint: disable=import-outside-toplevel

    eks = boto3.client("eks", region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b")
    with Stubber(eks) as stub:
        stub.add_response("list_nodegroups", {"nodegroups": ["a", "b"], "nextToken": "t"}, {"clusterName": "c"})
        stub.add_response("list_nodegroups", {"nodegroups": ["c"]}, {"clusterName": "c", "nextToken": "t"})
        assert common.all_items(eks, "list_nodegroups", "nodegroups", clusterName="c") == ["a", "b", "c"]
        stub.assert_no_pending_responses()
    ec2 = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b")
    assert not ec2.can_paginate("describe_vpc_attribute")
    with Stubber(ec2) as stub:
        stub.add_response("describe_subnets", {}, {"SubnetIds": ["subnet-1"]})
        assert common.all_items(ec2, "describe_subnets", "Subnets", SubnetIds=["subnet-1"]) == []
        stub.add_response("describe_vpc_attribute", {"VpcId": "vpc-1", "EnableDnsSupport": {"Value": True}},
                          {"VpcId": "vpc-1", "Attribute": "enableDnsSupport"})
        assert common.all_items(ec2, "describe_vpc_attribute", "EnableDnsSupport", VpcId="vpc-1", Attribute="enableDnsSupport") == {"Value": True}
