# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Access entries of extra administrators: the checks, the planner, the reads and writes it needs (Stubber)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks as eks

ARN = "arn:aws:eks:us-west-2:123456789012:cluster/trn-rehearsal"
ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
ALICE = "arn:aws:iam::123456789012:role/platform/alice-admins"
BOB = "arn:aws:iam::123456789012:user/bob"
CREATOR = "arn:aws:iam::123456789012:role/ci"
CLUSTER_SCOPE = {"type": "cluster"}
OURS = {eks.ACCESS_ENTRY_TAG: eks.ACCESS_ENTRY_TAG_VALUE}


def cluster(*listed, mode="API", status="ACTIVE"):
    """A cluster whose tag names the principals ``listed`` by the last run."""
    tags = {"ManagedBy": "trainium.eks"}
    if listed:
        tags[eks.ADMIN_ENTRIES_TAG] = eks.admin_entries_tag_value(eks.principal_key(arn) for arn in listed)
    return {"name": "trn-rehearsal", "arn": ARN, "status": status, "accessConfig": {"authenticationMode": mode}, "tags": tags}


def admin(scope=None):
    return [{"policyArn": ADMIN, "accessScope": scope or CLUSTER_SCOPE}]


@pytest.mark.parametrize("arns, mode, message", [
    (["arn:aws:sts::123456789012:assumed-role/ci/session-1"], "API",
     "admin_principal_arns[0]: got 'arn:aws:sts::123456789012:assumed-role/ci/session-1'; allowed: the ARN of an IAM role or user"),
    (["arn:aws:iam::123456789012:group/admins"], "API", "admin_principal_arns[0]: got 'arn:aws:iam::123456789012:group/admins'"),
    ([ALICE, "alice"], None, "admin_principal_arns[1]: got 'alice'; allowed: the ARN of an IAM role or user"),
    ([ALICE, BOB, ALICE], "API", f"admin_principal_arns: got {ALICE!r} twice; allowed: each principal once"),
    ([f"arn:aws:iam::123456789012:role/r{i}" for i in range(26)], "API", "admin_principal_arns: got 26 principals; allowed: at most 25"),
    ([ALICE], "CONFIG_MAP", "admin_principal_arns: got 1 principal(s) with authentication_mode CONFIG_MAP; allowed: none in CONFIG_MAP"),
])
def test_bad_principal_lists_are_refused_naming_the_value(arns, mode, message):
    with pytest.raises(eks.EksConfigError) as refused:
        eks.validate_request({"admin_principal_arns": arns, "authentication_mode": mode})
    assert str(refused.value).startswith(message)


def test_good_principal_lists_pass():
    for arns in (None, [], [ALICE, BOB, "arn:aws-cn:iam::123456789012:role/admins", "arn:aws:iam::123456789012:user/ops/carol@example.com"]):
        eks.validate_request({"admin_principal_arns": arns, "authentication_mode": "API_AND_CONFIG_MAP"})


def test_creator_admin_off_needs_a_mode_with_access_entries():
    with pytest.raises(eks.EksConfigError, match="bootstrap_cluster_creator_admin: got False with authentication_mode CONFIG_MAP"):
        eks.validate_request({"authentication_mode": "CONFIG_MAP", "bootstrap_cluster_creator_admin": False})
    eks.validate_request({"authentication_mode": "API", "bootstrap_cluster_creator_admin": False})


def test_policy_arn_follows_the_partition():
    assert eks.admin_policy_arn(ARN) == ADMIN
    assert eks.admin_policy_arn("arn:aws-cn:eks:cn-north-1:123456789012:cluster/c") == \
        "arn:aws-cn:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def test_the_tag_fits_the_most_principals_allowed():
    keys = [eks.principal_key(f"arn:aws:iam::123456789012:role/r{i}") for i in range(eks.MAX_ADMIN_PRINCIPALS)]
    value = eks.admin_entries_tag_value(keys)
    assert len(value) <= 256 and len(set(value.split())) == eks.MAX_ADMIN_PRINCIPALS


def test_new_principals_get_an_entry_and_the_policy():
    plan = eks.plan_access_entries(cluster(), [ALICE, BOB], {ALICE: None, BOB: None}, {})
    assert (plan["create"], plan["associate"], plan["delete"]) == ([ALICE, BOB], [ALICE, BOB], [])
    assert plan["hint_before"] == "" and set(plan["hint_after"].split()) == {eks.principal_key(ALICE), eks.principal_key(BOB)}
    assert plan["before"] == [] and plan["changed"] is True


def test_nothing_to_do_when_every_listed_principal_is_an_administrator():
    plan = eks.plan_access_entries(cluster(ALICE, BOB), [ALICE, BOB], {ALICE: admin(), BOB: admin() + [{"policyArn": "x"}]}, {})
    assert plan["changed"] is False and plan["hint_before"] == plan["hint_after"]
    assert plan["before"] == sorted([ALICE, BOB])


def test_a_namespace_scoped_admin_policy_is_widened():
    plan = eks.plan_access_entries(cluster(ALICE), [ALICE], {ALICE: admin({"type": "namespace", "namespaces": ["ml"]})}, {})
    assert (plan["create"], plan["associate"]) == ([], [ALICE])


def test_an_entry_someone_else_made_only_gets_the_policy():
    """The creator's own entry (bootstrap) listed too: no create, nothing when it is an administrator already."""
    plan = eks.plan_access_entries(cluster(), [CREATOR], {CREATOR: [{"policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
                                                                     "accessScope": CLUSTER_SCOPE}]}, {})
    assert (plan["create"], plan["associate"]) == ([], [CREATOR])
    assert eks.plan_access_entries(cluster(CREATOR), [CREATOR], {CREATOR: admin()}, {})["changed"] is False


def test_only_the_entries_it_created_are_deleted():
    found = {ALICE: {"principalArn": ALICE, "tags": dict(OURS)}, CREATOR: {"principalArn": CREATOR, "tags": {}}}
    plan = eks.plan_access_entries(cluster(ALICE, CREATOR, BOB), [BOB], {BOB: admin()}, found)
    assert plan["delete"] == [ALICE] and plan["create"] == [] and plan["associate"] == []
    assert plan["hint_after"] == eks.principal_key(BOB)
    assert plan["before"] == sorted([ALICE, BOB])


def test_stale_keys_are_the_tag_hashes_no_longer_listed():
    assert eks.stale_keys(cluster(ALICE, BOB), [BOB]) == {eks.principal_key(ALICE)}
    assert eks.stale_keys(cluster(), [BOB]) == set()


def test_the_create_request_carries_the_tag_before_any_entry_exists():
    request = eks.create_request({"name": "trn-rehearsal", "role_arn": "r", "subnets": ["a", "b"], "authentication_mode": "API",
                                  "tags": {"Name": "trn-rehearsal"}, "admin_principal_arns": [BOB, ALICE]})
    assert request["tags"] == {"Name": "trn-rehearsal", eks.ADMIN_ENTRIES_TAG: cluster(ALICE, BOB)["tags"][eks.ADMIN_ENTRIES_TAG]}
    assert "tags" not in eks.create_request({"name": "c", "role_arn": "r", "subnets": ["a", "b"], "admin_principal_arns": []})


def test_the_cluster_tags_keep_the_admin_tag_when_others_are_purged():
    plan = eks.plan_update(cluster(ALICE), {"tags": {"ManagedBy": "trainium.eks"}})
    assert plan["tags_to_set"] == {} and plan["tags_to_remove"] == [] and plan["changed"] is False


def test_tags_after_the_plan():
    plan = eks.plan_access_entries(cluster(ALICE), [], {}, {ALICE: {"tags": dict(OURS)}})
    assert eks.tags_after_access_entries(cluster(ALICE)["tags"], plan) == {"ManagedBy": "trainium.eks"}
    plan = eks.plan_access_entries(cluster(), [ALICE], {ALICE: None}, {})
    assert eks.tags_after_access_entries({}, plan) == {eks.ADMIN_ENTRIES_TAG: eks.principal_key(ALICE)}


@pytest.fixture
def stub():
    client = boto3.client("eks", region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_a_steady_state_reads_one_policy_list_per_principal(stub):
    client, stubber = stub
    stubber.add_response("list_associated_access_policies", {"clusterName": "trn-rehearsal", "principalArn": ALICE,
                                                             "associatedAccessPolicies": admin()},
                         {"clusterName": "trn-rehearsal", "principalArn": ALICE})
    policies, stale = eks.read_access_entries(client, cluster(ALICE), [ALICE])
    assert policies == {ALICE: admin()} and stale == {}


def test_no_principal_and_no_tag_reads_nothing(stub):
    client, _stubber = stub
    assert eks.read_access_entries(client, cluster(), []) == ({}, {})


def test_a_principal_without_entry_reads_as_none_and_stale_tags_are_looked_up(stub):
    client, stubber = stub
    stubber.add_client_error("list_associated_access_policies", "ResourceNotFoundException",
                             expected_params={"clusterName": "trn-rehearsal", "principalArn": BOB})
    stubber.add_response("list_access_entries", {"accessEntries": [CREATOR, BOB, ALICE]}, {"clusterName": "trn-rehearsal"})
    stubber.add_response("describe_access_entry", {"accessEntry": {"principalArn": ALICE, "tags": dict(OURS)}},
                         {"clusterName": "trn-rehearsal", "principalArn": ALICE})
    # The tag names Alice and someone whose entry is gone already; the creator's and Bob's entries are not described.
    gone = "arn:aws:iam::123456789012:role/gone"
    policies, stale = eks.read_access_entries(client, cluster(ALICE, gone), [BOB])
    assert policies == {BOB: None}
    assert stale == {ALICE: {"principalArn": ALICE, "tags": dict(OURS)}}
    assert eks.plan_access_entries(cluster(ALICE, gone), [BOB], policies, stale)["delete"] == [ALICE]


def test_apply_grows_the_tag_first_then_shrinks_it(stub):
    client, stubber = stub
    plan = eks.plan_access_entries(cluster(ALICE), [BOB], {BOB: None}, {ALICE: {"tags": dict(OURS)}})
    both = eks.admin_entries_tag_value([eks.principal_key(ALICE), eks.principal_key(BOB)])
    stubber.add_response("tag_resource", {}, {"resourceArn": ARN, "tags": {eks.ADMIN_ENTRIES_TAG: both}})
    stubber.add_response("create_access_entry", {"accessEntry": {"principalArn": BOB}},
                         {"clusterName": "trn-rehearsal", "principalArn": BOB, "type": "STANDARD", "tags": dict(OURS)})
    stubber.add_response("associate_access_policy", {}, {"clusterName": "trn-rehearsal", "principalArn": BOB, "policyArn": ADMIN,
                                                         "accessScope": CLUSTER_SCOPE})
    stubber.add_response("delete_access_entry", {}, {"clusterName": "trn-rehearsal", "principalArn": ALICE})
    stubber.add_response("tag_resource", {}, {"resourceArn": ARN, "tags": {eks.ADMIN_ENTRIES_TAG: eks.principal_key(BOB)}})
    eks.apply_access_entries(client, cluster(ALICE), plan, OURS)


def test_apply_removes_the_tag_with_the_last_principal(stub):
    client, stubber = stub
    plan = eks.plan_access_entries(cluster(ALICE), [], {}, {ALICE: {"tags": dict(OURS)}})
    stubber.add_response("delete_access_entry", {}, {"clusterName": "trn-rehearsal", "principalArn": ALICE})
    stubber.add_response("untag_resource", {}, {"resourceArn": ARN, "tagKeys": [eks.ADMIN_ENTRIES_TAG]})
    eks.apply_access_entries(client, cluster(ALICE), plan, OURS)


class DescribeOnly:
    """describe_access_entry of a few entries; counts the calls."""

    def __init__(self, entries):
        self.entries, self.calls = entries, []

    def describe_access_entry(self, clusterName, principalArn):  # noqa: N803 - boto3's names
        self.calls.append(principalArn)
        return {"accessEntry": self.entries[principalArn]}


def test_an_entry_someone_else_made_is_refused_unless_it_is_cluster_admin_already(monkeypatch):
    client = DescribeOnly({BOB: {"tags": {}}, ALICE: {"tags": OURS}, CREATOR: {"tags": {}}})
    monkeypatch.setattr(eks, "describe_access_entry", lambda c, name, arn: c.describe_access_entry(clusterName=name, principalArn=arn)["accessEntry"])
    policies = {BOB: admin({"type": "namespace", "namespaces": ["ml"]}), ALICE: [], CREATOR: admin()}
    assert eks.foreign_entries(client, cluster(), [BOB, ALICE, CREATOR], policies) == [BOB]
    # The creator is admin already (nothing to raise): not even read; a principal without an entry neither.
    assert client.calls == [BOB, ALICE]
    assert eks.foreign_entries(DescribeOnly({}), cluster(), [CREATOR, ALICE], {CREATOR: admin(), ALICE: None}) == []
