# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Decisions of trainium.eks.eks_addon (no AWS) and its boto3 calls checked with botocore's Stubber."""

from __future__ import annotations

import copy
import datetime
import json

import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks_addon as ad

ROLE = "arn:aws:iam::123456789012:role/trn-rehearsal-vpc-cni"
ARN = "arn:aws:eks:us-west-2:123456789012:addon/trn-rehearsal/vpc-cni/1a2b3c4d-0000-1111-2222-333344445555"
CURRENT = {
    "addonName": "vpc-cni", "clusterName": "trn-rehearsal", "status": "ACTIVE", "addonVersion": "v1.20.4-eksbuild.2",
    "health": {"issues": []}, "addonArn": ARN, "serviceAccountRoleArn": ROLE,
    "configurationValues": '{"env": {"ENABLE_PREFIX_DELEGATION": "true"}}', "tags": {"trainium.eks/cluster": "trn-rehearsal"},
    "publisher": "eks", "owner": "aws",
    "createdAt": datetime.datetime(2025, 11, 20, 10, 0, tzinfo=datetime.timezone.utc),
}


def params(**overrides):
    base = {
        "cluster_name": "trn-rehearsal", "name": "vpc-cni", "state": "present", "addon_version": None,
        "service_account_role_arn": ROLE, "configuration_values": {"env": {"ENABLE_PREFIX_DELEGATION": "true"}},
        "resolve_conflicts": "OVERWRITE", "preserve": False, "tags": {"trainium.eks/cluster": "trn-rehearsal"},
        "purge_tags": True, "wait": False, "wait_timeout": 900,
    }
    base.update(overrides)
    return base


@pytest.fixture
def current():
    return copy.deepcopy(CURRENT)


def version_info(version, *clusters, default=()):
    return {"addonVersion": version, "compatibilities": [
        {"clusterVersion": c, "platformVersions": ["*"], "defaultVersion": c in default} for c in clusters]}


ADDON_VERSIONS = [
    {"addonName": "vpc-cni", "type": "networking", "addonVersions": [
        version_info("v1.19.2-eksbuild.1", "1.32", "1.33", default=("1.32",)),
        version_info("v1.20.10-eksbuild.1", "1.34"),
        version_info("v1.20.4-eksbuild.2", "1.33", "1.34", default=("1.33", "1.34")),
        version_info("v1.20.9-eksbuild.1", "1.35", default=("1.35",)),
    ]},
    {"addonName": "coredns", "type": "networking", "addonVersions": [version_info("v1.12.3-eksbuild.1", "1.34", default=("1.34",))]},
]


# ------------------------------------------------------------ validation


def test_valid_params_have_no_errors():
    assert ad.validate_params(params()) == []
    assert ad.validate_params(params(service_account_role_arn=None, configuration_values="", addon_version="v1.20.4-eksbuild.2")) == []
    assert ad.validate_params(params(service_account_role_arn="arn:aws-us-gov:iam::123456789012:role/path/cni")) == []


def test_bad_params_are_each_named_with_what_is_allowed():
    errors = ad.validate_params(params(service_account_role_arn="arn:aws:iam::123456789012:user/ops", configuration_values="[1, 2]",
                                       addon_version=" ", name="", resolve_conflicts="KEEP", wait_timeout=-1))
    assert len(errors) == 6, errors
    assert errors[0] == "name: got ''; allowed: a non-empty name"
    assert "addon_version: got ' '" in errors[1]
    assert errors[2].startswith("service_account_role_arn: got 'arn:aws:iam::123456789012:user/ops' (str); allowed: an IAM role ARN")
    assert errors[3].startswith("configuration_values: got text that holds a list, not a mapping; allowed: a mapping")
    assert "resolve_conflicts: got 'KEEP'; allowed: OVERWRITE, NONE, PRESERVE" in errors
    assert "wait_timeout: got -1; allowed: 0 or more seconds" in errors


@pytest.mark.parametrize("text, data", [
    ('{"env": {"A": "1"}}', {"env": {"A": "1"}}),
    ("env:\n  A: '1'\n", {"env": {"A": "1"}}),
    ("", {}),
    ("  ", {}),
    ({}, {}),
    (None, None),
])
def test_configuration_is_read_as_json_or_yaml(text, data):
    assert ad.parse_configuration(text) == data


@pytest.mark.parametrize("text", ["{not json: [", "just text", "- a\n- b\n", 5])
def test_configuration_that_is_no_mapping_is_refused(text):
    with pytest.raises(ValueError):
        ad.parse_configuration(text)


def test_desired_state_keeps_only_what_was_set():
    assert ad.desired_state(params(service_account_role_arn=None, configuration_values=None, tags=None)) == {}
    desired = ad.desired_state(params(addon_version=" v1.20.4-eksbuild.2 ", configuration_values='{"env": {"A": 1}}', tags={"n": 1}))
    assert desired == {"addonVersion": "v1.20.4-eksbuild.2", "serviceAccountRoleArn": ROLE, "configurationValues": {"env": {"A": 1}},
                       "tags": {"n": "1"}}
    assert ad.desired_state(params(configuration_values={}))["configurationValues"] == {}


def test_the_role_cannot_be_taken_off():
    # EKS's RoleArn has a minimum length of 1: UpdateAddon cannot remove the role.
    assert ad.validate_params(params(service_account_role_arn=""))[0].startswith(
        "service_account_role_arn: got '' (str); allowed: an IAM role ARN (arn:aws:iam::<account>:role/<name>), or leave it unset "
        "(EKS cannot take the role off an add-on")


# -------------------------------------------------------------- versions


def test_offered_versions_newest_first_with_the_default_of_the_kubernetes_version():
    assert ad.offered_versions(ADDON_VERSIONS, "vpc-cni", "1.34") == (["v1.20.10-eksbuild.1", "v1.20.4-eksbuild.2"], "v1.20.4-eksbuild.2")
    assert ad.offered_versions(ADDON_VERSIONS, "vpc-cni", "1.33") == (["v1.20.4-eksbuild.2", "v1.19.2-eksbuild.1"], "v1.20.4-eksbuild.2")
    assert ad.offered_versions(ADDON_VERSIONS, "vpc-cni", "1.31") == ([], None)
    assert ad.offered_versions(ADDON_VERSIONS, "kube-proxy", "1.34") == ([], None)
    assert ad.offered_names(ADDON_VERSIONS) == ["coredns", "vpc-cni"]


def test_version_and_name_errors_list_what_is_allowed():
    message = ad.version_error("vpc-cni", "v9.9.9", "1.34", ["v1.20.10-eksbuild.1", "v1.20.4-eksbuild.2"], "v1.20.4-eksbuild.2")
    assert message == ("addon_version: got 'v9.9.9' (str); allowed: a version EKS offers for add-on vpc-cni on Kubernetes 1.34: "
                       "v1.20.10-eksbuild.1, v1.20.4-eksbuild.2 (default v1.20.4-eksbuild.2)")
    assert ad.name_error("vpc-cin", "1.34", ["coredns", "vpc-cni"]) == \
        "name: got 'vpc-cin' (str); allowed: an add-on EKS offers for Kubernetes 1.34: coredns, vpc-cni"


# ------------------------------------------------------------- planning


def test_create_request_sends_json_and_preserve_as_none():
    request = ad.create_request("trn-rehearsal", "vpc-cni", ad.desired_state(params()), "v1.20.4-eksbuild.2", "PRESERVE")
    assert request == {"clusterName": "trn-rehearsal", "addonName": "vpc-cni", "resolveConflicts": "NONE", "addonVersion": "v1.20.4-eksbuild.2",
                       "serviceAccountRoleArn": ROLE, "configurationValues": '{"env": {"ENABLE_PREFIX_DELEGATION": "true"}}',
                       "tags": {"trainium.eks/cluster": "trn-rehearsal"}}
    bare = ad.create_request("c", "coredns", ad.desired_state(params(service_account_role_arn=None, configuration_values={}, tags=None)),
                             None, "OVERWRITE")
    assert bare == {"clusterName": "c", "addonName": "coredns", "resolveConflicts": "OVERWRITE"}


def test_same_settings_change_nothing_whatever_the_configuration_text(current):
    assert ad.plan_changes(current, ad.desired_state(params()))["changed"] is False
    current["configurationValues"] = "env:\n  ENABLE_PREFIX_DELEGATION: 'true'\n"
    assert ad.plan_changes(current, ad.desired_state(params()))["changed"] is False
    unset = ad.desired_state(params(service_account_role_arn=None, configuration_values=None, tags=None))
    assert ad.plan_changes(current, unset)["changed"] is False


def test_one_update_carries_only_the_differences(current):
    desired = ad.desired_state(params(service_account_role_arn="arn:aws:iam::123456789012:role/other", addon_version="v1.20.10-eksbuild.1"))
    plan = ad.plan_changes(current, desired, "PRESERVE")
    assert plan["update"] == {"clusterName": "trn-rehearsal", "addonName": "vpc-cni", "resolveConflicts": "PRESERVE",
                              "addonVersion": "v1.20.10-eksbuild.1", "serviceAccountRoleArn": "arn:aws:iam::123456789012:role/other"}
    assert plan["changed"] is True and plan["tags_to_set"] == {} and plan["tags_to_remove"] == []


def test_empty_configuration_removes_it(current):
    plan = ad.plan_changes(current, ad.desired_state(params(configuration_values={})))
    assert plan["update"] == {"clusterName": "trn-rehearsal", "addonName": "vpc-cni", "resolveConflicts": "OVERWRITE", "configurationValues": ""}
    after = ad.predict(current, plan)
    assert "configurationValues" not in after and after["serviceAccountRoleArn"] == ROLE and after["status"] == "UPDATING"
    del current["configurationValues"]
    assert ad.plan_changes(current, ad.desired_state(params(configuration_values="")))["changed"] is False


def test_a_role_is_added_to_an_addon_without_one(current):
    del current["serviceAccountRoleArn"]
    plan = ad.plan_changes(current, ad.desired_state(params()))
    assert plan["update"]["serviceAccountRoleArn"] == ROLE and ad.predict(current, plan)["serviceAccountRoleArn"] == ROLE


def test_unreadable_current_configuration_is_replaced(current):
    current["configurationValues"] = "{broken"
    plan = ad.plan_changes(current, ad.desired_state(params()))
    assert json.loads(plan["update"]["configurationValues"]) == {"env": {"ENABLE_PREFIX_DELEGATION": "true"}}
    assert ad.summarize(current)["configuration_values"] == "{broken"


def test_tags_are_added_and_purged_but_aws_tags_kept(current):
    current["tags"] = {"old": "x", "aws:cloudformation:stack-name": "s", "trainium.eks/cluster": "trn-rehearsal"}
    plan = ad.plan_changes(current, ad.desired_state(params(tags={"trainium.eks/cluster": "trn-rehearsal", "team": "ml"})))
    assert (plan["update"], plan["tags_to_set"], plan["tags_to_remove"]) == (None, {"team": "ml"}, ["old"])
    assert ad.predict(current, plan)["tags"] == {"aws:cloudformation:stack-name": "s", "trainium.eks/cluster": "trn-rehearsal", "team": "ml"}
    assert ad.predict(current, plan)["status"] == "ACTIVE"
    kept = ad.plan_changes(current, ad.desired_state(params(tags={"team": "ml"})), purge_tags=False)
    assert kept["tags_to_remove"] == []


def test_summary_and_prediction_of_a_new_addon(current):
    summary = ad.summarize(current)
    assert summary == {
        "name": "vpc-cni", "cluster_name": "trn-rehearsal", "arn": ARN, "version": "v1.20.4-eksbuild.2", "status": "ACTIVE",
        "service_account_role_arn": ROLE, "configuration_values": {"env": {"ENABLE_PREFIX_DELEGATION": "true"}},
        "health": {"issues": []}, "tags": {"trainium.eks/cluster": "trn-rehearsal"}, "publisher": "eks", "owner": "aws",
        "created_at": "2025-11-20T10:00:00+00:00",
    }
    assert ad.summarize(None) == {}
    new = ad.summarize(ad.predict_new(ad.create_request("c", "coredns", {}, "v1.12.3-eksbuild.1", "OVERWRITE")))
    assert (new["status"], new["version"], new["arn"], new["configuration_values"], new["tags"]) == ("CREATING", "v1.12.3-eksbuild.1", None, {}, {})


def test_health_message_lists_every_issue():
    addon = {"health": {"issues": [
        {"code": "ConfigurationConflict", "message": "Conflicts found", "resourceIds": ["aws-node"]},
        {"code": "AccessDenied", "message": "denied"},
    ]}}
    assert ad.health_message(addon) == "ConfigurationConflict: Conflicts found (aws-node); AccessDenied: denied"
    assert ad.health_message({"health": {"issues": []}}) == "no health issues reported"


# ---------------------------------------------------------------- boto3 calls


@pytest.fixture
def eks(boto3_session, sleeps):  # pylint: disable=unused-argument
    client = boto3_session.client("eks", endpoint_url="http://127.0.0.1:1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


WHERE = {"clusterName": "trn-rehearsal", "addonName": "vpc-cni"}


def test_request_shapes_pass_the_stubber(eks, current):
    client, stubber = eks
    create = ad.create_request("trn-rehearsal", "vpc-cni", ad.desired_state(params()), "v1.20.4-eksbuild.2", "OVERWRITE")
    stubber.add_response("create_addon", {"addon": dict(current, status="CREATING")}, create)
    assert ad.create_addon(client, create)["status"] == "CREATING"
    update = ad.plan_changes(current, ad.desired_state(params(configuration_values={})))["update"]
    stubber.add_response("update_addon", {"update": {"id": "u-1", "status": "InProgress", "type": "AddonUpdate"}}, update)
    assert ad.update_addon(client, update)["type"] == "AddonUpdate"
    stubber.add_response("describe_addon_versions", {"addons": ADDON_VERSIONS[:1]}, {"kubernetesVersion": "1.34", "addonName": "vpc-cni"})
    assert ad.describe_addon_versions(client, "1.34", "vpc-cni") == ADDON_VERSIONS[:1]
    stubber.add_response("delete_addon", {"addon": dict(current, status="DELETING")}, dict(WHERE, preserve=True))
    assert ad.delete_addon(client, "trn-rehearsal", "vpc-cni", preserve=True) is True


def test_missing_cluster_and_addon_read_as_none(eks):
    client, stubber = eks
    stubber.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404, expected_params={"name": "nope"})
    stubber.add_client_error("describe_addon", "ResourceNotFoundException", http_status_code=404, expected_params=WHERE)
    stubber.add_client_error("delete_addon", "ResourceNotFoundException", http_status_code=404, expected_params=dict(WHERE, preserve=False))
    assert ad.describe_cluster(client, "nope") is None
    assert ad.describe_addon(client, "trn-rehearsal", "vpc-cni") is None
    assert ad.delete_addon(client, "trn-rehearsal", "vpc-cni") is False


def test_update_refused_while_busy_is_retried_within_the_timeout(eks, sleeps):
    client, stubber = eks
    request = dict(WHERE, resolveConflicts="OVERWRITE", serviceAccountRoleArn=ROLE)
    stubber.add_client_error("update_addon", "ResourceInUseException", "Addon vpc-cni is in CREATING state", expected_params=request)
    stubber.add_response("update_addon", {"update": {"id": "u-2", "status": "InProgress", "type": "AddonUpdate"}}, request)
    slept = []
    assert ad.update_addon(client, request, timeout=300, clock=lambda: 0, sleep=slept.append)["id"] == "u-2"
    assert len(slept) == 1 and sleeps == []
    stubber.add_client_error("update_addon", "InvalidParameterException", "Addon version specified is not supported", expected_params=request)
    with pytest.raises(ad.TrainiumAddonError, match="update the add-on"):
        ad.update_addon(client, request, timeout=300, clock=lambda: 0, sleep=pytest.fail)


def test_wait_fails_at_once_on_create_failed_with_the_health_issues(eks, current):
    client, stubber = eks
    failed = dict(current, status="CREATE_FAILED", health={"issues": [
        {"code": "ConfigurationConflict", "message": "Conflicts found when trying to apply", "resourceIds": []}]})
    stubber.add_response("describe_addon", {"addon": dict(current, status="CREATING")}, WHERE)
    stubber.add_response("describe_addon", {"addon": failed}, WHERE)
    slept = []
    with pytest.raises(ad.TrainiumAddonError) as raised:
        ad.wait_for_addon(client, "trn-rehearsal", "vpc-cni", sleep=slept.append, clock=lambda: 0)
    assert raised.value.message == ("add-on vpc-cni of cluster trn-rehearsal is CREATE_FAILED: "
                                    "ConfigurationConflict: Conflicts found when trying to apply")
    assert slept == [1]  # the first poll after 1 s, not after the whole delay


def test_wait_polls_after_1_2_4_s_then_every_delay(eks, current):
    client, stubber = eks
    for dummy in range(5):
        stubber.add_response("describe_addon", {"addon": dict(current, status="CREATING")}, WHERE)
    stubber.add_response("describe_addon", {"addon": dict(current, status="ACTIVE")}, WHERE)
    slept = []
    assert ad.wait_for_addon(client, "trn-rehearsal", "vpc-cni", sleep=slept.append, clock=lambda: 0)["status"] == "ACTIVE"
    assert slept == [1, 2, 4, 5, 5]


def test_degraded_is_waited_on_and_its_health_is_in_the_timeout(eks, current):
    client, stubber = eks
    degraded = dict(current, status="DEGRADED", health={"issues": [
        {"code": "InsufficientNumberOfReplicas", "message": "The add-on is unhealthy", "resourceIds": []}]})
    stubber.add_response("describe_addon", {"addon": degraded}, WHERE)
    stubber.add_response("describe_addon", {"addon": degraded}, WHERE)
    stubber.add_response("describe_addon", {"addon": degraded}, WHERE)
    ticks = iter([0, 10, 100])
    with pytest.raises(ad.TrainiumAddonError) as raised:
        ad.wait_for_addon(client, "trn-rehearsal", "vpc-cni", timeout=60, sleep=lambda s: None, clock=lambda: next(ticks))
    assert raised.value.message == ("Timed out after 60 s waiting for add-on vpc-cni of cluster trn-rehearsal to become ACTIVE "
                                    "(last state: DEGRADED); health issues: InsufficientNumberOfReplicas: The add-on is unhealthy")


def test_wait_gone_and_wait_until_idle(eks, current):
    client, stubber = eks
    stubber.add_response("describe_addon", {"addon": dict(current, status="DELETING")}, WHERE)
    stubber.add_client_error("describe_addon", "ResourceNotFoundException", http_status_code=404, expected_params=WHERE)
    assert ad.wait_for_addon(client, "trn-rehearsal", "vpc-cni", gone=True, sleep=lambda s: None, clock=lambda: 0) is None
    for status in ("CREATING", "UPDATING", "DEGRADED"):
        stubber.add_response("describe_addon", {"addon": dict(current, status=status)}, WHERE)
    slept = []
    assert ad.wait_until_idle(client, "trn-rehearsal", "vpc-cni", 600, sleep=slept.append, clock=lambda: 0)["status"] == "DEGRADED"
    assert slept == [5, 5]
    stubber.add_response("describe_addon", {"addon": dict(current, status="UPDATING")}, WHERE)
    ticks = iter([0, 601])
    with pytest.raises(ad.TrainiumAddonError, match=r"to finish CREATING or UPDATING \(EKS refuses an update until then\).*UPDATING"):
        ad.wait_until_idle(client, "trn-rehearsal", "vpc-cni", 600, sleep=pytest.fail, clock=lambda: next(ticks))
