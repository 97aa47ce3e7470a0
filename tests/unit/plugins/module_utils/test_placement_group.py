# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""ensure_placement_group of trainium_launch_template against a stubbed EC2: which calls it makes, and what it returns.

The Stubber fails a test on any call it was not told to expect, so "no write
call" is asserted by queueing none.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_launch_template as lt

NAME = "trn-rehearsal-trn1"
GROUP_ID = "pg-0123456789abcdef0"
TAGS = {"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks"}


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _describe(stubber, group):
    stubber.add_response("describe_placement_groups", {"PlacementGroups": [group] if group else []},
                         {"Filters": [{"Name": "group-name", "Values": [NAME]}]})


def _group(strategy="cluster", tags=None):
    tags = TAGS if tags is None else tags
    return {"GroupName": NAME, "GroupId": GROUP_ID, "Strategy": strategy, "State": "available",
            "GroupArn": f"arn:aws:ec2:us-west-2:123456789012:placement-group/{NAME}",
            "Tags": [{"Key": key, "Value": value} for key, value in tags.items()]}


def test_missing_group_is_created_with_its_tags(ec2):
    client, stubber = ec2
    _describe(stubber, None)
    stubber.add_response("create_placement_group", {"PlacementGroup": _group()}, {
        "GroupName": NAME, "Strategy": "cluster",
        "TagSpecifications": [{"ResourceType": "placement-group", "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"},
                                                                           {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]}],
    })
    assert lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=False) == (
        True, None, {"name": NAME, "strategy": "cluster", "tags": TAGS})


def test_missing_group_without_tags_gets_no_tag_specification(ec2):
    client, stubber = ec2
    _describe(stubber, None)
    stubber.add_response("create_placement_group", {"PlacementGroup": _group("spread", {})}, {"GroupName": NAME, "Strategy": "spread"})
    assert lt.ensure_placement_group(client, NAME, "spread", None, check_mode=False)[0] is True


def test_group_in_place_makes_no_write_call(ec2):
    client, stubber = ec2
    _describe(stubber, _group())
    changed, before, after = lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=False)
    assert changed is False
    assert before == after == {"name": NAME, "strategy": "cluster", "tags": TAGS}


def test_tags_converge_removing_others_and_keeping_aws_ones(ec2):
    client, stubber = ec2
    current = {"ManagedBy": "someone", "trainium.eks/cluster": "trn-rehearsal", "old": "x", "aws:cloudformation:stack-name": "s"}
    _describe(stubber, _group(tags=current))
    stubber.add_response("delete_tags", {}, {"Resources": [GROUP_ID], "Tags": [{"Key": "old"}]})
    stubber.add_response("create_tags", {}, {"Resources": [GROUP_ID], "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}]})
    changed, before, after = lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=False)
    assert changed is True
    assert before["tags"] == current
    assert after == {"name": NAME, "strategy": "cluster", "tags": dict(TAGS, **{"aws:cloudformation:stack-name": "s"})}


def test_only_missing_tags_are_added(ec2):
    client, stubber = ec2
    _describe(stubber, _group(tags={"ManagedBy": "trainium.eks"}))
    stubber.add_response("create_tags", {}, {"Resources": [GROUP_ID], "Tags": [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]})
    assert lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=False)[0] is True


def test_tags_none_leaves_the_tags_alone(ec2):
    client, stubber = ec2
    _describe(stubber, _group(tags={"team": "ml"}))
    changed, _before, after = lt.ensure_placement_group(client, NAME, "cluster", None, check_mode=False)
    assert changed is False and after["tags"] == {"team": "ml"}


@pytest.mark.parametrize("check_mode", [False, True])
def test_another_strategy_is_an_error_naming_both(ec2, check_mode):
    client, stubber = ec2
    _describe(stubber, _group("spread", tags={}))
    with pytest.raises(lt.TrainiumLaunchTemplateError) as raised:
        lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=check_mode)
    message = raised.value.message
    assert f"placement_group: {NAME} exists with strategy spread, not cluster" in message
    assert "strategy cannot change" in message


def test_check_mode_on_a_missing_group_creates_nothing(ec2):
    client, stubber = ec2
    _describe(stubber, None)
    assert lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=True) == (
        True, None, {"name": NAME, "strategy": "cluster", "tags": TAGS})


def test_check_mode_on_tag_drift_reports_the_tags_it_would_set(ec2):
    client, stubber = ec2
    _describe(stubber, _group(tags={"ManagedBy": "someone", "old": "x"}))
    changed, before, after = lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=True)
    assert changed is True
    assert before["tags"] == {"ManagedBy": "someone", "old": "x"}
    assert after["tags"] == TAGS


def test_describe_error_becomes_a_module_error(ec2):
    client, stubber = ec2
    stubber.add_client_error("describe_placement_groups", "UnauthorizedOperation", http_status_code=403,
                             expected_params={"Filters": [{"Name": "group-name", "Values": [NAME]}]})
    with pytest.raises(lt.TrainiumLaunchTemplateError) as raised:
        lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=False)
    assert "Failed to describe placement group" in raised.value.message


def test_create_error_becomes_a_module_error(ec2):
    client, stubber = ec2
    _describe(stubber, None)
    stubber.add_client_error("create_placement_group", "InvalidParameterValue", http_status_code=400)
    with pytest.raises(lt.TrainiumLaunchTemplateError) as raised:
        lt.ensure_placement_group(client, NAME, "cluster", TAGS, check_mode=False)
    assert "Failed to create placement group" in raised.value.message
