# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""ecr_tags: what to tag (pure) and the ECR requests it makes (botocore Stubber)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import ecr_tags
from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils.ecr_tags import EcrTagsError

ARN = "arn:aws:ecr:us-west-2:123456789012:repository/bert-pretrain-neuron"
REPO = {
    "repositoryArn": ARN, "registryId": "123456789012", "repositoryName": "bert-pretrain-neuron",
    "repositoryUri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/bert-pretrain-neuron",
}
WANTED = {"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks", "Name": "bert-pretrain-neuron"}


@pytest.fixture
def ecr():
    session = boto3.session.Session(aws_access_key_id="AKIAIOSFODNN7EXAMPLE", aws_secret_access_key="not-a-real-secret", region_name="us-west-2")
    client = session.client("ecr", endpoint_url="http://127.0.0.1:1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def tag_list(tags):
    return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]


# The tag diff ensure_tags uses is trainium_common.tag_diff (more cases in test_trainium_common.py).


def test_tag_diff_sets_only_what_differs():
    assert common.tag_diff({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}, purge_tags=False) == ({"b": "3", "c": "4"}, [])


def test_tag_diff_leaves_foreign_tags_unless_purging():
    assert common.tag_diff({"a": "1", "other": "x"}, {"a": "1"}, purge_tags=False) == ({}, [])
    assert common.tag_diff({"a": "1", "other": "x", "z": "y"}, {"a": "1"}, purge_tags=True) == ({}, ["other", "z"])


def test_tag_diff_compares_values_as_strings():
    assert common.tag_diff({"count": "7"}, {"count": 7}, purge_tags=False) == ({}, [])


def test_ensure_tags_adds_missing_tags(ecr):
    client, stubber = ecr
    stubber.add_response("describe_repositories", {"repositories": [REPO]}, {"repositoryNames": ["bert-pretrain-neuron"]})
    stubber.add_response("list_tags_for_resource", {"tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}]}, {"resourceArn": ARN})
    stubber.add_response("tag_resource", {}, {"resourceArn": ARN, "tags": tag_list({"Name": "bert-pretrain-neuron", "trainium.eks/cluster": "trn-rehearsal"})})
    result = ecr_tags.ensure_tags(client, "bert-pretrain-neuron", WANTED)
    assert result["changed"] is True
    assert result["tags"] == WANTED
    assert result["before"] == {"ManagedBy": "trainium.eks"}


def test_ensure_tags_changes_nothing_when_tags_match(ecr):
    client, stubber = ecr
    stubber.add_response("describe_repositories", {"repositories": [REPO]}, {"repositoryNames": ["bert-pretrain-neuron"]})
    stubber.add_response("list_tags_for_resource", {"tags": tag_list(dict(WANTED, project="x"))}, {"resourceArn": ARN})
    result = ecr_tags.ensure_tags(client, "bert-pretrain-neuron", WANTED)
    assert result["changed"] is False
    assert result["tags"] == dict(WANTED, project="x")


def test_ensure_tags_purges_then_tags(ecr):
    client, stubber = ecr
    stubber.add_response("describe_repositories", {"repositories": [REPO]}, {"repositoryNames": ["bert-pretrain-neuron"], "registryId": "123456789012"})
    stubber.add_response("list_tags_for_resource", {"tags": tag_list({"old": "1", "Name": "x"})}, {"resourceArn": ARN})
    stubber.add_response("untag_resource", {}, {"resourceArn": ARN, "tagKeys": ["old"]})
    stubber.add_response("tag_resource", {}, {"resourceArn": ARN, "tags": tag_list({"Name": "bert-pretrain-neuron"})})
    result = ecr_tags.ensure_tags(client, "bert-pretrain-neuron", {"Name": "bert-pretrain-neuron"}, purge=True, registry_id="123456789012")
    assert result["removed"] == ["old"]
    assert result["tags"] == {"Name": "bert-pretrain-neuron"}


def test_ensure_tags_in_check_mode_only_reads(ecr):
    client, stubber = ecr
    stubber.add_response("describe_repositories", {"repositories": [REPO]}, {"repositoryNames": ["bert-pretrain-neuron"]})
    stubber.add_response("list_tags_for_resource", {"tags": []}, {"resourceArn": ARN})
    result = ecr_tags.ensure_tags(client, "bert-pretrain-neuron", WANTED, check_mode=True)
    assert result["changed"] is True
    assert result["added"] == WANTED


def test_missing_repository_is_reported_not_raised(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_repositories", "RepositoryNotFoundException", "not found", 400)
    assert ecr_tags.ensure_tags(client, "gone", WANTED) == {"found": False}


def test_other_errors_raise_the_module_error(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_repositories", "AccessDeniedException", "no", 400)
    with pytest.raises(EcrTagsError, match="describe repository"):
        ecr_tags.ensure_tags(client, "bert-pretrain-neuron", WANTED)
