# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""ecr_tags: what to tag (pure) and the ECR requests it makes (botocore Stubber)."""

from __future__ import annotations

import json

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


# ------------------------------------------------ ensure_repository (ecr_repository)

POLICY = {"rules": [
    {"rulePriority": 2, "description": "keep 50", "selection": {"tagStatus": "tagged", "tagPatternList": ["*"],
                                                                "countType": "imageCountMoreThan", "countNumber": 50},
     "action": {"type": "expire"}},
    {"rulePriority": 1, "description": "untagged 7 days", "selection": {"tagStatus": "untagged", "countType": "sinceImagePushed",
                                                                        "countUnit": "days", "countNumber": 7},
     "action": {"type": "expire"}},
]}
SETTINGS = {"image_tag_mutability": "IMMUTABLE", "scan_on_push": True, "encryption_type": "AES256", "kms_key": None,
            "lifecycle_policy": POLICY}
CONFIGURED = dict(REPO, imageTagMutability="IMMUTABLE", imageScanningConfiguration={"scanOnPush": True},
                  encryptionConfiguration={"encryptionType": "AES256"})
NAME = {"repositoryName": "bert-pretrain-neuron"}


def policy_text(policy):
    return json.dumps(policy)


# What ecr_repository puts: the rules in priority order, the keys sorted.
PUT_POLICY = json.dumps(ecr_tags.normalize_policy(POLICY), sort_keys=True)


def test_normalize_policy_orders_rules_by_priority_and_reads_json_text():
    from_text = ecr_tags.normalize_policy(policy_text(POLICY))
    assert [rule["rulePriority"] for rule in from_text["rules"]] == [1, 2]
    assert from_text == ecr_tags.normalize_policy(POLICY)
    assert ecr_tags.normalize_policy(None) is None


def test_ensure_repository_creates_a_missing_repository_with_tags_and_policy(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_repositories", "RepositoryNotFoundException", expected_params={"repositoryNames": ["bert-pretrain-neuron"]})
    stubber.add_response("create_repository", {"repository": CONFIGURED}, dict(
        NAME, imageTagMutability="IMMUTABLE", imageScanningConfiguration={"scanOnPush": True},
        encryptionConfiguration={"encryptionType": "AES256"}, tags=tag_list(WANTED)))
    stubber.add_response("put_lifecycle_policy", {}, dict(NAME, lifecyclePolicyText=PUT_POLICY))
    result = ecr_tags.ensure_repository(client, "bert-pretrain-neuron", SETTINGS, WANTED)
    assert result["changed"] is True and result["created"] is True
    assert result["repository"]["repositoryUri"] == REPO["repositoryUri"]
    assert result["tags"] == WANTED


def test_ensure_repository_in_check_mode_creates_nothing(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_repositories", "RepositoryNotFoundException")
    result = ecr_tags.ensure_repository(client, "bert-pretrain-neuron", SETTINGS, WANTED, check_mode=True)
    assert result["changed"] is True and result["created"] is True and result["repository"] is None
    assert result["lifecycle_policy"]["rules"][0]["rulePriority"] == 1


def test_ensure_repository_changes_nothing_when_everything_matches(ecr):
    client, stubber = ecr
    stubber.add_response("describe_repositories", {"repositories": [CONFIGURED]})
    # ECR hands the policy back in its own key order and the rules unsorted: still the same policy.
    stubber.add_response("list_tags_for_resource", {"tags": tag_list(WANTED)}, {"resourceArn": ARN})
    stubber.add_response("get_lifecycle_policy", {"lifecyclePolicyText": policy_text(POLICY)}, NAME)
    result = ecr_tags.ensure_repository(client, "bert-pretrain-neuron", SETTINGS, WANTED)
    assert result["changed"] is False and result["updates"] == {} and result["warnings"] == []


def test_ensure_repository_fixes_drift_in_place(ecr):
    client, stubber = ecr
    drifted = dict(CONFIGURED, imageTagMutability="MUTABLE", imageScanningConfiguration={"scanOnPush": False})
    stubber.add_response("describe_repositories", {"repositories": [drifted]})
    stubber.add_response("list_tags_for_resource", {"tags": tag_list(dict(WANTED, stray="x"))}, {"resourceArn": ARN})
    stubber.add_client_error("get_lifecycle_policy", "LifecyclePolicyNotFoundException")
    stubber.add_response("put_image_tag_mutability", {}, dict(NAME, imageTagMutability="IMMUTABLE"))
    stubber.add_response("put_image_scanning_configuration", {}, dict(NAME, imageScanningConfiguration={"scanOnPush": True}))
    stubber.add_response("put_lifecycle_policy", {}, dict(NAME, lifecyclePolicyText=PUT_POLICY))
    stubber.add_response("untag_resource", {}, {"resourceArn": ARN, "tagKeys": ["stray"]})
    result = ecr_tags.ensure_repository(client, "bert-pretrain-neuron", SETTINGS, WANTED)
    assert result["changed"] is True and result["created"] is False
    assert set(result["updates"]) == {"image_tag_mutability", "scan_on_push", "lifecycle_policy"}
    assert result["before"]["lifecycle_policy"] is None and result["before"]["scan_on_push"] is False
    assert "stray" not in result["tags"]


def test_a_repository_encrypted_otherwise_is_warned_about_not_changed():
    repository = dict(CONFIGURED, encryptionConfiguration={"encryptionType": "KMS", "kmsKey": "arn:aws:kms:us-west-2:123456789012:key/k"})
    plan = ecr_tags.plan_repository(repository, POLICY, SETTINGS)
    assert plan["updates"] == {}
    assert len(plan["warnings"]) == 1 and "encryption_type" in plan["warnings"][0] and "KMS" in plan["warnings"][0]


def test_delete_repository_is_false_when_the_repository_is_gone(ecr):
    client, stubber = ecr
    stubber.add_client_error("delete_repository", "RepositoryNotFoundException", expected_params=dict(NAME, force=True))
    assert ecr_tags.delete_repository(client, "bert-pretrain-neuron", True) is False


def test_a_repository_of_another_deployment_is_refused_before_anything_changes(ecr):
    client, stubber = ecr
    stubber.add_response("describe_repositories", {"repositories": [CONFIGURED]})
    stubber.add_response("list_tags_for_resource", {"tags": tag_list({"trainium.eks/cluster": "other", "team": "x"})}, {"resourceArn": ARN})
    result = ecr_tags.ensure_repository(client, "bert-pretrain-neuron", SETTINGS, WANTED, owner_tags={"trainium.eks/cluster": "trn-rehearsal"})
    assert result == {"refused": "name: the ECR repository bert-pretrain-neuron exists without the tags trainium.eks/cluster=trn-rehearsal "
                                 "of this deployment; allowed: a repository this deployment made, or a new name (or adopt this one on purpose)"}
    assert ecr_tags.missing_owner_tags({"trainium.eks/cluster": "trn-rehearsal"}, {"trainium.eks/cluster": "trn-rehearsal"}) == []
