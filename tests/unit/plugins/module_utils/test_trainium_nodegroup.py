# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Decisions of trainium.eks.eks_nodegroup (no AWS) and its boto3 calls checked with botocore's Stubber."""

from __future__ import annotations

import copy

import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_nodegroup as ng

ROLE = "arn:aws:iam::123456789012:role/trn-rehearsal-node"
SUBNET = "subnet-0123456789abcdef0"
LT = "lt-0123456789abcdef0"
ARN = "arn:aws:eks:us-west-2:123456789012:nodegroup/trn-rehearsal/trn-rehearsal-trn1/0ec7a0b4"


def params(**overrides):
    base = {
        "cluster_name": "trn-rehearsal", "name": "trn-rehearsal-trn1", "state": "present", "match_tags": None,
        "node_role_arn": ROLE, "subnets": [SUBNET], "launch_template": {"id": LT, "name": None, "version": "1"},
        "ami_type": None, "release_version": None, "capacity_type": "ON_DEMAND", "instance_types": None,
        "scaling_config": {"min_size": 2, "max_size": 2, "desired_size": 2}, "update_config": None,
        "labels": {"trainium.eks/pool": "trn1"}, "taints": [{"key": "aws.amazon.com/neuron", "value": None, "effect": "NoSchedule"}],
        "tags": {"trainium.eks/cluster": "trn-rehearsal"}, "purge_tags": True, "wait": False, "wait_timeout": 1200,
    }
    base.update(overrides)
    return base


# What moto 5.2.5 answers for the node group created from params(): it adds
# defaults nobody asked for (remote access, AL2_x86_64, t3.medium, version 1.19).
MOTO_NODEGROUP = {
    "nodegroupName": "trn-rehearsal-trn1", "nodegroupArn": ARN, "clusterName": "trn-rehearsal",
    "version": "1.19", "releaseVersion": "1.19.8-20210414", "status": "ACTIVE", "capacityType": "ON_DEMAND",
    "scalingConfig": {"minSize": 2, "maxSize": 2, "desiredSize": 2}, "instanceTypes": ["t3.medium"],
    "subnets": [SUBNET], "remoteAccess": {"ec2SshKey": "eksKeypair"}, "amiType": "AL2_x86_64", "nodeRole": ROLE,
    "labels": {"trainium.eks/pool": "trn1"}, "taints": [{"key": "aws.amazon.com/neuron", "effect": "NO_SCHEDULE"}],
    "resources": {"autoScalingGroups": [{"name": "eks-0ec7a0b4"}]}, "diskSize": 20, "health": {"issues": []},
    "launchTemplate": {"id": LT, "name": "trn-rehearsal-trn1", "version": "1"},
    "tags": {"trainium.eks/cluster": "trn-rehearsal"},
}


@pytest.fixture
def current():
    return copy.deepcopy(MOTO_NODEGROUP)


def plan_for(current_ng, **overrides):
    return ng.plan_changes(current_ng, ng.desired_state(params(**overrides)), purge_tags=True)


# ---------------------------------------------------------------- validation

def test_valid_params_have_no_errors():
    assert ng.validate_params(params()) == []


@pytest.mark.parametrize("sizes, expected", [
    ({"min_size": 3, "max_size": 2, "desired_size": 2}, "scaling_config.min_size: got 3, more than max_size 2"),
    ({"min_size": 1, "max_size": 2, "desired_size": 3}, "scaling_config.desired_size: got 3, more than max_size 2"),
    ({"min_size": 2, "max_size": 4, "desired_size": 1}, "scaling_config.desired_size: got 1, less than min_size 2"),
    ({"min_size": 0, "max_size": 0, "desired_size": 0}, "scaling_config.max_size: got 0; allowed: an integer of 1 or more"),
    ({"min_size": -1, "max_size": 2, "desired_size": 1}, "scaling_config.min_size: got -1; allowed: an integer of 0 or more"),
])
def test_scaling_is_validated_before_aws(sizes, expected):
    errors = ng.validate_params(params(scaling_config=sizes))
    assert any(e.startswith(expected) for e in errors), errors


def test_bad_taint_update_config_and_template_are_named():
    errors = ng.validate_params(params(
        taints=[{"key": "k", "value": None, "effect": "Sometimes"}],
        update_config={"max_unavailable": 1, "max_unavailable_percentage": 50},
        launch_template={"id": LT, "name": "x", "version": None},
    ))
    assert "taints[0].effect: got 'Sometimes'; allowed: NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE, NoSchedule, NoExecute, PreferNoSchedule" in errors
    assert "update_config: got both max_unavailable and max_unavailable_percentage; allowed: one of them" in errors
    assert "launch_template: got both id and name; allowed: one of them" in errors


def test_kubernetes_taint_spelling_is_converted():
    taints = ng.normalize_taints([
        {"key": "a", "value": "x", "effect": "NoSchedule"},
        {"key": "b", "value": None, "effect": "PreferNoSchedule"},
        {"key": "c", "value": "", "effect": "NO_EXECUTE"},
    ])
    assert taints == [
        {"key": "a", "value": "x", "effect": "NO_SCHEDULE"},
        {"key": "b", "effect": "PREFER_NO_SCHEDULE"},
        {"key": "c", "effect": "NO_EXECUTE"},
    ]


# ---------------------------------------------------------------- create

def test_create_request_carries_only_what_was_asked():
    request = ng.create_request("trn-rehearsal", "trn-rehearsal-trn1", ng.desired_state(params()))
    assert request == {
        "clusterName": "trn-rehearsal", "nodegroupName": "trn-rehearsal-trn1", "nodeRole": ROLE, "subnets": [SUBNET],
        "capacityType": "ON_DEMAND", "launchTemplate": {"id": LT, "version": "1"},
        "scalingConfig": {"minSize": 2, "maxSize": 2, "desiredSize": 2},
        "labels": {"trainium.eks/pool": "trn1"}, "taints": [{"key": "aws.amazon.com/neuron", "effect": "NO_SCHEDULE"}],
        "tags": {"trainium.eks/cluster": "trn-rehearsal"},
    }
    assert "amiType" not in request and "instanceTypes" not in request


def test_neuron_ami_type_and_capacity_block_reach_the_request():
    request = ng.create_request("c", "n", ng.desired_state(params(
        ami_type="AL2023_x86_64_NEURON", capacity_type="CAPACITY_BLOCK", launch_template=None, instance_types=["trn1.32xlarge"])))
    assert (request["amiType"], request["capacityType"], request["instanceTypes"]) == ("AL2023_x86_64_NEURON", "CAPACITY_BLOCK", ["trn1.32xlarge"])
    assert "launchTemplate" not in request


def test_creation_needs_role_and_subnets():
    desired = ng.desired_state(params(node_role_arn=None, subnets=None))
    assert ng.creation_errors(desired) == ["node_role_arn, subnets: not set; allowed: required to create a node group that does not exist yet"]


# ---------------------------------------------------------------- compare

def test_same_request_against_moto_defaults_changes_nothing(current):
    plan = plan_for(current)
    assert plan["errors"] == [] and plan["changed"] is False
    assert plan["config"] is None and plan["version"] is None


def test_only_cluster_and_name_reads_without_change(current):
    desired = ng.desired_state({"cluster_name": "trn-rehearsal", "name": "trn-rehearsal-trn1", "purge_tags": True})
    assert desired == {}
    plan = ng.plan_changes(current, desired)
    assert plan["changed"] is False and plan["errors"] == []


def test_scaling_change_updates_with_full_sizes(current):
    plan = plan_for(current, scaling_config={"min_size": 2, "max_size": 3, "desired_size": 2})
    assert plan["config"] == {
        "clusterName": "trn-rehearsal", "nodegroupName": "trn-rehearsal-trn1",
        "scalingConfig": {"minSize": 2, "maxSize": 3, "desiredSize": 2},
    }
    assert plan["changed"] is True and plan["version"] is None


def test_partial_scaling_merges_current_sizes_and_is_checked(current):
    plan = plan_for(current, scaling_config={"min_size": None, "max_size": 5, "desired_size": None})
    assert plan["config"]["scalingConfig"] == {"minSize": 2, "maxSize": 5, "desiredSize": 2}
    plan = plan_for(current, scaling_config={"min_size": 3, "max_size": None, "desired_size": None})
    assert any(e.startswith("scaling_config (with the node group's current sizes).min_size: got 3, more than max_size 2") for e in plan["errors"])


def test_label_add_update_and_remove_sets(current):
    current["labels"] = {"trainium.eks/pool": "trn1", "team": "ml", "old": "yes"}
    plan = plan_for(current, labels={"trainium.eks/pool": "trn1", "team": "research", "new": "1"})
    assert plan["config"]["labels"] == {"addOrUpdateLabels": {"team": "research", "new": "1"}, "removeLabels": ["old"]}
    assert "taints" not in plan["config"] and "scalingConfig" not in plan["config"]


def test_labels_unset_leave_labels_alone(current):
    current["labels"] = {"added-by-someone": "x"}
    assert plan_for(current, labels=None)["changed"] is False


def test_taint_add_update_and_remove_sets(current):
    current["taints"] = [
        {"key": "aws.amazon.com/neuron", "effect": "NO_SCHEDULE"},
        {"key": "dedicated", "value": "a", "effect": "NO_EXECUTE"},
        {"key": "gone", "value": "x", "effect": "NO_SCHEDULE"},
    ]
    plan = plan_for(current, taints=[
        {"key": "aws.amazon.com/neuron", "value": None, "effect": "NoSchedule"},
        {"key": "dedicated", "value": "b", "effect": "NoExecute"},
        {"key": "gone", "value": "x", "effect": "PreferNoSchedule"},
    ])
    assert plan["config"]["taints"] == {
        "addOrUpdateTaints": [
            {"key": "dedicated", "value": "b", "effect": "NO_EXECUTE"},
            {"key": "gone", "value": "x", "effect": "PREFER_NO_SCHEDULE"},
        ],
        "removeTaints": [{"key": "gone", "value": "x", "effect": "NO_SCHEDULE"}],
    }
    after = ng.predict(current, plan)
    assert sorted((t["key"], t["effect"], t.get("value")) for t in after["taints"]) == [
        ("aws.amazon.com/neuron", "NO_SCHEDULE", None), ("dedicated", "NO_EXECUTE", "b"), ("gone", "PREFER_NO_SCHEDULE", "x")]


def test_update_config_difference_is_updated_and_absence_ignored(current):
    assert plan_for(current, update_config=None)["changed"] is False
    current["updateConfig"] = {"maxUnavailable": 1}
    plan = plan_for(current, update_config={"max_unavailable": None, "max_unavailable_percentage": 25})
    assert plan["config"]["updateConfig"] == {"maxUnavailablePercentage": 25}


def test_immutable_differences_are_all_listed(current):
    plan = plan_for(
        current, subnets=["subnet-other"], node_role_arn="arn:aws:iam::123456789012:role/other", ami_type="AL2023_x86_64_NEURON",
        capacity_type="SPOT", instance_types=["trn1n.32xlarge"], launch_template={"id": "lt-other", "name": None, "version": "1"},
    )
    labels = [e.split(":")[0] for e in plan["errors"]]
    assert labels == ["node_role_arn", "subnets", "ami_type", "capacity_type", "instance_types", "launch_template.id"]


def test_moto_defaults_not_asked_for_are_ignored(current):
    # ami_type, instance_types unset: moto's AL2_x86_64 and t3.medium must not count as differences.
    plan = plan_for(current, ami_type=None, instance_types=None, capacity_type=None, release_version=None)
    assert plan["errors"] == [] and plan["changed"] is False


def test_launch_template_version_difference_updates_the_version(current):
    plan = plan_for(current, launch_template={"id": LT, "name": None, "version": "2"})
    assert plan["errors"] == [] and plan["config"] is None
    assert plan["version"] == {"clusterName": "trn-rehearsal", "nodegroupName": "trn-rehearsal-trn1", "launchTemplate": {"id": LT, "version": "2"}}
    assert ng.predict(current, plan)["launchTemplate"]["version"] == "2"


def test_updates_run_config_then_version_and_on_a_capacity_block_scale_to_0_around_the_version(current):
    names = {"clusterName": "trn-rehearsal", "nodegroupName": "trn-rehearsal-trn1"}
    wanted = {"launch_template": {"id": LT, "name": None, "version": "2"}, "labels": {"trainium.eks/pool": "trn1", "team": "ml"}}
    plan = plan_for(current, **wanted)
    steps = ng.update_steps(current, ng.desired_state(params(**wanted)), plan)
    assert [step[0] for step in steps] == ["config", "version"] and steps[1][1]["launchTemplate"]["version"] == "2"
    current["capacityType"] = "CAPACITY_BLOCK"
    wanted.update(capacity_type="CAPACITY_BLOCK", scaling_config={"min_size": 1, "max_size": 2, "desired_size": 2})
    plan = plan_for(current, **wanted)
    steps = ng.update_steps(current, ng.desired_state(params(**wanted)), plan)
    assert steps == [
        ("config", dict(names, scalingConfig={"minSize": 0, "maxSize": 2, "desiredSize": 0})),
        ("version", dict(names, launchTemplate={"id": LT, "version": "2"})),
        ("config", dict(names, scalingConfig={"minSize": 1, "maxSize": 2, "desiredSize": 2}, labels={"addOrUpdateLabels": {"team": "ml"}})),
    ]
    # Without sizes asked for, the group gets back the ones it had; already at 0 it is updated as it is.
    wanted.pop("scaling_config")
    steps = ng.update_steps(current, ng.desired_state(params(scaling_config=None, **wanted)), plan_for(current, scaling_config=None, **wanted))
    assert steps[2][1]["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    # A run interrupted after the scale-down finds the group at 0: the version first, then the sizes asked for.
    current["scalingConfig"] = {"minSize": 0, "maxSize": 2, "desiredSize": 0}
    wanted["scaling_config"] = {"min_size": 1, "max_size": 2, "desired_size": 2}
    steps = ng.update_steps(current, ng.desired_state(params(**wanted)), plan_for(current, **wanted))
    assert [step[0] for step in steps] == ["version", "config"]
    assert steps[1][1]["scalingConfig"] == {"minSize": 1, "maxSize": 2, "desiredSize": 2}


def test_launch_template_by_name_compares_the_name(current):
    plan = plan_for(current, launch_template={"id": None, "name": "trn-rehearsal-trn1", "version": None})
    assert plan["changed"] is False and plan["errors"] == []
    plan = plan_for(current, launch_template={"id": None, "name": "other", "version": None})
    assert plan["errors"] == ["launch_template.name: is 'trn-rehearsal-trn1', asked 'other'"]


def test_release_version_difference_updates_the_version(current):
    plan = plan_for(current, release_version="1.34.2-20251120")
    assert plan["version"]["releaseVersion"] == "1.34.2-20251120" and "launchTemplate" not in plan["version"]


def test_tags_added_and_purged_but_aws_tags_kept(current):
    current["tags"] = {"trainium.eks/cluster": "trn-rehearsal", "stale": "1", "aws:cloudformation:stack-name": "x"}
    plan = plan_for(current, tags={"trainium.eks/cluster": "trn-rehearsal", "Name": "trn-rehearsal-trn1"})
    assert (plan["tags_to_set"], plan["tags_to_remove"]) == ({"Name": "trn-rehearsal-trn1"}, ["stale"])
    # the node group's tag diff is trainium_common.tag_diff
    assert common.tag_diff(current["tags"], {"a": "b"}, purge_tags=False) == ({"a": "b"}, [])
    assert common.tag_diff(current["tags"], None, purge_tags=True) == ({}, [])


def test_summary_is_snake_case_and_keeps_label_keys(current):
    summary = ng.summarize(current)
    assert summary["name"] == "trn-rehearsal-trn1" and summary["arn"] == ARN
    assert summary["scaling_config"] == {"min_size": 2, "max_size": 2, "desired_size": 2}
    assert summary["labels"] == {"trainium.eks/pool": "trn1"} and summary["tags"] == {"trainium.eks/cluster": "trn-rehearsal"}
    assert summary["launch_template"] == {"id": LT, "name": "trn-rehearsal-trn1", "version": "1"}


# ---------------------------------------------------------------- boto3 calls

@pytest.fixture
def eks(boto3_session, sleeps):  # pylint: disable=unused-argument
    client = boto3_session.client("eks", endpoint_url="http://127.0.0.1:1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_update_version_request_shape_passes_the_stubber(eks, current):
    client, stubber = eks
    request = plan_for(current, launch_template={"id": LT, "name": None, "version": "2"})["version"]
    stubber.add_response("update_nodegroup_version", {"update": {"id": "u-1", "status": "InProgress", "type": "VersionUpdate"}}, request)
    assert ng.update_nodegroup_version(client, request)["type"] == "VersionUpdate"


def test_update_config_request_shape_passes_the_stubber(eks, current):
    client, stubber = eks
    current["labels"] = {"old": "x"}
    request = plan_for(current, scaling_config={"min_size": 2, "max_size": 3, "desired_size": 3})["config"]
    assert set(request) == {"clusterName", "nodegroupName", "scalingConfig", "labels"}
    stubber.add_response("update_nodegroup_config", {"update": {"id": "u-2", "status": "InProgress", "type": "ConfigUpdate"}}, request)
    assert ng.update_nodegroup_config(client, request)["id"] == "u-2"


def test_create_request_shape_passes_the_stubber(eks):
    client, stubber = eks
    request = ng.create_request("trn-rehearsal", "trn-rehearsal-trn1", ng.desired_state(params(ami_type="AL2023_x86_64_NEURON")))
    stubber.add_response("create_nodegroup", {"nodegroup": dict(MOTO_NODEGROUP, status="CREATING")}, request)
    assert ng.create_nodegroup(client, request)["status"] == "CREATING"


def test_missing_cluster_and_nodegroup_read_as_none(eks):
    client, stubber = eks
    stubber.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404, expected_params={"name": "nope"})
    stubber.add_client_error("describe_nodegroup", "ResourceNotFoundException", http_status_code=404)
    assert ng.describe_cluster(client, "nope") is None
    assert ng.describe_nodegroup(client, "trn-rehearsal", "x") is None


def test_version_update_404_from_moto_is_reported(eks, current):
    client, stubber = eks
    request = plan_for(current, launch_template={"id": LT, "name": None, "version": "2"})["version"]
    stubber.add_client_error("update_nodegroup_version", "404", "Not Found", http_status_code=404)
    with pytest.raises(ng.TrainiumNodegroupError) as raised:
        ng.update_nodegroup_version(client, request)
    assert "update the node group version" in raised.value.message


def test_delete_of_missing_nodegroup_is_fine(eks):
    client, stubber = eks
    stubber.add_client_error("delete_nodegroup", "ResourceNotFoundException", http_status_code=404,
                             expected_params={"clusterName": "c", "nodegroupName": "n"})
    assert ng.delete_nodegroup(client, "c", "n") is False


def test_wait_fails_with_health_issues(eks):
    client, stubber = eks
    failed = dict(MOTO_NODEGROUP, status="CREATE_FAILED", health={"issues": [
        {"code": "InsufficientFreeAddresses", "message": "One or more subnets lack free addresses", "resourceIds": [SUBNET]}]})
    stubber.add_response("describe_nodegroup", {"nodegroup": dict(MOTO_NODEGROUP, status="CREATING")})
    stubber.add_response("describe_nodegroup", {"nodegroup": failed})
    slept = []
    with pytest.raises(ng.TrainiumNodegroupError) as raised:
        ng.wait_for_nodegroup(client, "trn-rehearsal", "trn-rehearsal-trn1", sleep=slept.append, clock=lambda: 0)
    assert "is CREATE_FAILED: InsufficientFreeAddresses: One or more subnets lack free addresses (subnet-0123456789abcdef0)" in raised.value.message
    assert slept == [15]


def test_wait_gone_and_timeout(eks):
    client, stubber = eks
    stubber.add_response("describe_nodegroup", {"nodegroup": dict(MOTO_NODEGROUP, status="DELETING")})
    stubber.add_client_error("describe_nodegroup", "ResourceNotFoundException", http_status_code=404)
    assert ng.wait_for_nodegroup(client, "c", "n", gone=True, sleep=lambda s: None, clock=lambda: 0) is None
    stubber.add_response("describe_nodegroup", {"nodegroup": dict(MOTO_NODEGROUP, status="CREATING")})
    ticks = iter([0, 100])
    with pytest.raises(ng.TrainiumNodegroupError) as raised:
        ng.wait_for_nodegroup(client, "c", "n", timeout=60, sleep=lambda s: None, clock=lambda: next(ticks))
    assert "Timed out after 60 s" in raised.value.message and "(last state: CREATING)" in raised.value.message


# ------------------------------------------- teardown of a node group still being created


def test_creating_node_group_is_polled_until_active_then_deleted(eks):
    client, stubber = eks
    where = {"clusterName": "trn-rehearsal", "nodegroupName": "trn-rehearsal-trn1"}
    for status in ("CREATING", "CREATING", "ACTIVE"):
        stubber.add_response("describe_nodegroup", {"nodegroup": {"nodegroupName": "trn-rehearsal-trn1", "status": status}}, where)
    stubber.add_response("delete_nodegroup", {"nodegroup": {"nodegroupName": "trn-rehearsal-trn1", "status": "DELETING"}}, where)
    slept = []
    settled = ng.wait_until_settled(client, "trn-rehearsal", "trn-rehearsal-trn1", 600, delay=15, sleep=slept.append, clock=lambda: 0)
    assert settled["status"] == "ACTIVE" and slept == [15, 15]
    assert ng.delete_nodegroup(client, "trn-rehearsal", "trn-rehearsal-trn1", timeout=600) is True


@pytest.mark.parametrize("status", ["ACTIVE", "CREATE_FAILED", "DEGRADED", "DELETING"])
def test_settled_states_end_the_wait_at_once(eks, status):
    client, stubber = eks
    stubber.add_response("describe_nodegroup", {"nodegroup": {"nodegroupName": "n", "status": status}}, {"clusterName": "c", "nodegroupName": "n"})
    assert ng.wait_until_settled(client, "c", "n", 600, sleep=pytest.fail, clock=lambda: 0)["status"] == status


def test_wait_until_settled_times_out_naming_the_state(eks):
    client, stubber = eks
    stubber.add_response("describe_nodegroup", {"nodegroup": {"nodegroupName": "n", "status": "UPDATING"}}, {"clusterName": "c", "nodegroupName": "n"})
    times = iter([0, 601])
    with pytest.raises(ng.TrainiumNodegroupError, match=r"node group n of cluster c to finish CREATING or UPDATING before deleting .*\(last state: UPDATING\)"):
        ng.wait_until_settled(client, "c", "n", 600, sleep=pytest.fail, clock=lambda: next(times))


def test_delete_in_use_is_retried_with_backoff(eks, sleeps):
    client, stubber = eks
    where = {"clusterName": "c", "nodegroupName": "n"}
    stubber.add_client_error("delete_nodegroup", "ResourceInUseException", "Nodegroup n is currently in CREATING state", expected_params=where)
    stubber.add_client_error("delete_nodegroup", "ResourceInUseException", "Nodegroup n is currently in CREATING state", expected_params=where)
    stubber.add_response("delete_nodegroup", {"nodegroup": {"nodegroupName": "n", "status": "DELETING"}}, where)
    slept = []
    assert ng.delete_nodegroup(client, "c", "n", timeout=300, clock=lambda: 0, sleep=slept.append) is True
    assert len(slept) == 2 and all(0 <= s <= 30 for s in slept) and sleeps == []


def test_delete_in_use_retries_are_bounded_by_the_timeout(eks, sleeps):
    client, stubber = eks
    for _attempt in range(2):
        stubber.add_client_error("delete_nodegroup", "ResourceInUseException", "still CREATING", expected_params={"clusterName": "c", "nodegroupName": "n"})
    times = iter([0, 1, 31])
    slept = []
    with pytest.raises(ng.TrainiumNodegroupError, match="delete the node group"):
        ng.delete_nodegroup(client, "c", "n", timeout=30, clock=lambda: next(times), sleep=slept.append)
    assert len(slept) == 1 and sleeps == []
