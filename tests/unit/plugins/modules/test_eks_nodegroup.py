# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium.eks.eks_nodegroup run in-process; its AWS calls are replaced by a fake EKS account."""

from __future__ import annotations

import copy
import json

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_nodegroup as ng
from ansible_collections.trainium.eks.plugins.modules import eks_nodegroup


CONNECTION = {"region": "us-west-2", "access_key": "AKIAIOSFODNN7EXAMPLE", "secret_key": "not-a-real-secret", "endpoint_url": "http://127.0.0.1:1"}
ROLE = "arn:aws:iam::123456789012:role/trn-rehearsal-node"
SUBNET = "subnet-0123456789abcdef0"
LT = "lt-0123456789abcdef0"
ARGS = dict(
    CONNECTION, cluster_name="trn-rehearsal", name="trn-rehearsal-trn1", node_role_arn=ROLE, subnets=[SUBNET],
    launch_template={"id": LT, "version": "1"}, capacity_type="ON_DEMAND",
    scaling_config={"min_size": 2, "max_size": 2, "desired_size": 2}, labels={"trainium.eks/pool": "trn1"},
    taints=[{"key": "aws.amazon.com/neuron", "effect": "NoSchedule"}], tags={"trainium.eks/cluster": "trn-rehearsal"},
)
EXISTING = {
    "nodegroupName": "trn-rehearsal-trn1", "nodegroupArn": "arn:aws:eks:us-west-2:123456789012:nodegroup/trn-rehearsal/trn-rehearsal-trn1/x",
    "clusterName": "trn-rehearsal", "status": "ACTIVE", "capacityType": "ON_DEMAND", "amiType": "AL2_x86_64", "version": "1.19",
    "scalingConfig": {"minSize": 2, "maxSize": 2, "desiredSize": 2}, "subnets": [SUBNET], "nodeRole": ROLE,
    "remoteAccess": {"ec2SshKey": "eksKeypair"}, "labels": {"trainium.eks/pool": "trn1"},
    "taints": [{"key": "aws.amazon.com/neuron", "effect": "NO_SCHEDULE"}],
    "launchTemplate": {"id": LT, "name": "trn-rehearsal-trn1", "version": "1"}, "tags": {"trainium.eks/cluster": "trn-rehearsal"},
    "health": {"issues": []},
}


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)


class FakeEks:
    """The account as the module_utils functions see it; records every changing call."""

    def __init__(self, cluster=True, nodegroups=None):
        self.cluster = cluster
        self.nodegroups = copy.deepcopy(nodegroups or {})
        self.calls = []

    def install(self, monkeypatch):
        monkeypatch.setattr(ng, "describe_cluster", lambda client, name: {"name": name} if self.cluster else None)
        monkeypatch.setattr(ng, "describe_nodegroup", lambda client, cluster, name: copy.deepcopy(self.nodegroups.get(name)))
        monkeypatch.setattr(ng, "list_nodegroups", lambda client, cluster: sorted(self.nodegroups))
        monkeypatch.setattr(ng, "create_nodegroup", self.create)
        monkeypatch.setattr(ng, "update_nodegroup_config", lambda client, request, timeout=None: self.record("update_config", request))
        monkeypatch.setattr(ng, "update_nodegroup_version", lambda client, request, timeout=None: self.record("update_version", request))
        monkeypatch.setattr(common, "update_tags", self.update_tags)
        monkeypatch.setattr(ng, "delete_nodegroup", lambda client, cluster, name, timeout=None: self.record("delete", name))
        monkeypatch.setattr(ng, "wait_for_nodegroup", self.wait)
        return self

    def update_tags(self, client, arn, to_set, to_remove):
        if to_remove:
            self.record("untag", to_remove)
        if to_set:
            self.record("tag", to_set)

    def record(self, what, payload):
        self.calls.append((what, payload))
        return {"id": what, "type": what}

    def create(self, client, request):
        self.calls.append(("create", request))
        nodegroup = dict(ng.predict_new(request), nodegroupArn="arn:new", status="CREATING")
        self.nodegroups[request["nodegroupName"]] = nodegroup
        return nodegroup

    def wait(self, client, cluster, name, gone=False, timeout=1200, **kwargs):
        self.calls.append(("wait_gone" if gone else "wait_active", name))
        if gone:
            self.nodegroups.pop(name, None)
            return None
        self.nodegroups[name]["status"] = "ACTIVE"
        return copy.deepcopy(self.nodegroups[name])


def run(capsys, args, check=False, diff=False):
    capsys.readouterr()
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exited:
            eks_nodegroup.main()
    return exited.value.code, json.loads(capsys.readouterr().out)


def test_creates_with_only_asked_fields(capsys, monkeypatch):
    fake = FakeEks().install(monkeypatch)
    rc, result = run(capsys, dict(ARGS, wait=True), diff=True)
    assert rc == 0 and result["changed"] is True
    assert [c[0] for c in fake.calls] == ["create", "wait_active"]
    request = fake.calls[0][1]
    assert "amiType" not in request and request["taints"] == [{"key": "aws.amazon.com/neuron", "effect": "NO_SCHEDULE"}]
    assert result["nodegroup"]["status"] == "ACTIVE"
    assert result["diff"]["before"] == {} and result["diff"]["after"]["scaling_config"]["desired_size"] == 2


def test_check_mode_creates_nothing(capsys, monkeypatch):
    fake = FakeEks().install(monkeypatch)
    rc, result = run(capsys, ARGS, check=True)
    assert rc == 0 and result["changed"] is True and fake.calls == []
    assert result["nodegroup"]["status"] == "CREATING"


def test_unchanged_when_equal(capsys, monkeypatch):
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": EXISTING}).install(monkeypatch)
    rc, result = run(capsys, ARGS)
    assert rc == 0 and result["changed"] is False and fake.calls == []


def test_scaling_change_updates_config_and_check_mode_does_not(capsys, monkeypatch):
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": EXISTING}).install(monkeypatch)
    args = dict(ARGS, scaling_config={"min_size": 2, "max_size": 3, "desired_size": 2})
    rc, result = run(capsys, args, check=True, diff=True)
    assert rc == 0 and result["changed"] is True and fake.calls == []
    assert result["diff"]["before"]["scaling_config"]["max_size"] == 2 and result["diff"]["after"]["scaling_config"]["max_size"] == 3
    rc, result = run(capsys, args)
    assert [c[0] for c in fake.calls] == ["update_config"]
    assert fake.calls[0][1]["scalingConfig"] == {"minSize": 2, "maxSize": 3, "desiredSize": 2}


def test_config_and_version_updates_wait_in_between(capsys, monkeypatch):
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": EXISTING}).install(monkeypatch)
    args = dict(ARGS, labels={"trainium.eks/pool": "trn1", "team": "ml"}, launch_template={"id": LT, "version": "2"})
    rc, result = run(capsys, args)
    assert rc == 0 and result["changed"] is True
    assert [c[0] for c in fake.calls] == ["update_config", "wait_active", "update_version"]
    assert fake.calls[2][1]["launchTemplate"] == {"id": LT, "version": "2"}
    assert len(result["updates"]) == 2


def test_a_capacity_block_group_is_scaled_to_0_for_its_version_update_and_back_with_a_warning(capsys, monkeypatch):
    block = dict(EXISTING, capacityType="CAPACITY_BLOCK")
    args = dict(ARGS, capacity_type="CAPACITY_BLOCK", launch_template={"id": LT, "version": "2"})
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": block}).install(monkeypatch)
    rc, result = run(capsys, args, check=True)
    assert rc == 0 and result["changed"] is True and fake.calls == []
    assert "check mode: it would be scaled from 2 nodes to 0" in str(result["warnings"])
    rc, result = run(capsys, args)
    assert rc == 0 and result["changed"] is True
    assert [c[0] for c in fake.calls] == ["update_config", "wait_active", "update_version", "wait_active", "update_config"]
    assert fake.calls[0][1]["scalingConfig"] == {"minSize": 0, "maxSize": 2, "desiredSize": 0}
    assert fake.calls[4][1]["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    assert "Capacity Block, where EKS updates versions only at desired size 0" in str(result["warnings"])
    assert "scaling it from 2 nodes to 0, updating it, then scaling it back" in str(result["warnings"])


def test_immutable_differences_fail_listing_them(capsys, monkeypatch):
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": EXISTING}).install(monkeypatch)
    rc, result = run(capsys, dict(ARGS, subnets=["subnet-other"], capacity_type="SPOT"))
    assert rc == 1 and fake.calls == []
    assert "subnets: is ['subnet-0123456789abcdef0'], asked ['subnet-other']" in result["msg"]
    assert "capacity_type: is 'ON_DEMAND', asked 'SPOT'" in result["msg"]


def test_bad_scaling_fails_before_any_aws_call(capsys, monkeypatch):
    monkeypatch.setattr(ng, "describe_cluster", lambda *a: pytest.fail("AWS was called"))
    rc, result = run(capsys, dict(ARGS, scaling_config={"min_size": 3, "max_size": 2, "desired_size": 2}))
    assert rc == 1
    assert "scaling_config.min_size: got 3, more than max_size 2" in result["msg"]


def test_missing_cluster_present_fails_naming_it(capsys, monkeypatch):
    FakeEks(cluster=False).install(monkeypatch)
    rc, result = run(capsys, ARGS)
    assert rc == 1 and "EKS cluster trn-rehearsal does not exist in us-west-2" in result["msg"]
    rc, result = run(capsys, ARGS, check=True)
    assert rc == 0 and result["changed"] is True, result
    assert any("would be created" in str(w) for w in result["warnings"]), result["warnings"]


def test_missing_cluster_absent_is_unchanged(capsys, monkeypatch):
    FakeEks(cluster=False).install(monkeypatch)
    rc, result = run(capsys, dict(CONNECTION, cluster_name="trn-rehearsal", name="trn-rehearsal-trn1", state="absent"))
    assert rc == 0 and result["changed"] is False and result["deleted"] == []


def test_absent_by_tag_deletes_only_tagged_groups_and_waits(capsys, monkeypatch):
    other = dict(EXISTING, nodegroupName="other", tags={"team": "x"})
    renamed = dict(EXISTING, nodegroupName="trn-rehearsal-old")
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": EXISTING, "other": other, "trn-rehearsal-old": renamed}).install(monkeypatch)
    args = dict(CONNECTION, cluster_name="trn-rehearsal", state="absent", match_tags={"trainium.eks/cluster": "trn-rehearsal"}, wait=True)
    rc, result = run(capsys, args, check=True)
    assert rc == 0 and result["changed"] is True and fake.calls == []
    assert result["deleted"] == ["trn-rehearsal-old", "trn-rehearsal-trn1"]
    rc, result = run(capsys, args)
    assert [c for c in fake.calls if c[0] == "delete"] == [("delete", "trn-rehearsal-old"), ("delete", "trn-rehearsal-trn1")]
    assert sorted(fake.nodegroups) == ["other"]
    rc, result = run(capsys, args)
    assert result["changed"] is False and result["deleted"] == []


def test_match_tags_with_present_is_refused(capsys):
    rc, result = run(capsys, dict(CONNECTION, cluster_name="c", match_tags={"a": "b"}, state="present"))
    assert rc == 1


def test_absent_waits_out_creating_without_wait_then_deletes(capsys, monkeypatch):
    """A run interrupted during creation: teardown (wait=false) polls CREATING until ACTIVE before DeleteNodegroup."""
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": dict(EXISTING, status="CREATING")}).install(monkeypatch)
    statuses = iter(["CREATING", "CREATING", "ACTIVE"])

    def describe(client, cluster, name):
        fake.calls.append(("describe", name))
        current = copy.deepcopy(fake.nodegroups.get(name))
        if current is not None:
            current["status"] = next(statuses, "ACTIVE")
        return current

    slept = []
    monkeypatch.setattr(ng, "describe_nodegroup", describe)
    monkeypatch.setattr("time.sleep", slept.append)
    rc, result = run(capsys, dict(CONNECTION, cluster_name="trn-rehearsal", name="trn-rehearsal-trn1", state="absent", wait=False))
    assert rc == 0 and result["changed"] is True
    # one describe to find it, two polls of the wait (CREATING, ACTIVE), then the delete
    assert [c[0] for c in fake.calls] == ["describe", "describe", "describe", "delete"]
    assert slept == [15]


def test_tag_changes_untag_then_tag_and_check_mode_does_not(capsys, monkeypatch):
    current = dict(EXISTING, tags={"trainium.eks/cluster": "trn-rehearsal", "stale": "1", "aws:eks:x": "y"})
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": current}).install(monkeypatch)
    args = dict(ARGS, tags={"trainium.eks/cluster": "trn-rehearsal", "team": "ml"})
    rc, result = run(capsys, args, check=True, diff=True)
    assert rc == 0 and result["changed"] is True and fake.calls == []
    assert result["diff"]["after"]["tags"] == {"trainium.eks/cluster": "trn-rehearsal", "team": "ml", "aws:eks:x": "y"}
    rc, result = run(capsys, args)
    assert rc == 0 and fake.calls == [("untag", ["stale"]), ("tag", {"team": "ml"})]


def test_no_branch_relies_on_exit_json_raising(capsys, monkeypatch):
    """With exit_json/fail_json that return (as in a test double), absent does not fall through into present."""
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": EXISTING}).install(monkeypatch)
    exits = []
    monkeypatch.setattr(eks_nodegroup.AnsibleAWSModule, "exit_json", lambda self, **result: exits.append(("exit", result)))
    monkeypatch.setattr(eks_nodegroup.AnsibleAWSModule, "fail_json", lambda self, **result: exits.append(("fail", result)))
    with patch_module_args(dict(CONNECTION, cluster_name="trn-rehearsal", name="trn-rehearsal-trn1", state="absent")):
        eks_nodegroup.main()
    assert [e[0] for e in exits] == ["exit"] and exits[0][1]["deleted"] == ["trn-rehearsal-trn1"]
    assert [c[0] for c in fake.calls] == ["delete"]
    exits.clear()
    fake.nodegroups = {}
    with patch_module_args(dict(ARGS)):
        eks_nodegroup.main()
    assert [e[0] for e in exits] == ["exit"] and [c[0] for c in fake.calls] == ["delete", "create"]


FAILED_GROUP = dict(EXISTING, status="CREATE_FAILED", health={"issues": [
    {"code": "AsgInstanceLaunchFailures", "message": "InsufficientInstanceCapacity", "resourceIds": ["eks-x"]}]})


def test_a_create_failed_group_is_deleted_and_created_again_with_its_health_in_a_warning(capsys, monkeypatch):
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": FAILED_GROUP}).install(monkeypatch)
    rc, result = run(capsys, ARGS, diff=True)
    assert rc == 0 and result["changed"] is True
    assert [c[0] for c in fake.calls] == ["delete", "wait_gone", "create"]
    assert result["replaced"] == {"name": "trn-rehearsal-trn1", "status": "CREATE_FAILED",
                                  "health": "AsgInstanceLaunchFailures: InsufficientInstanceCapacity (eks-x)"}
    assert "is CREATE_FAILED (AsgInstanceLaunchFailures" in json.dumps(result["warnings"])
    assert result["diff"]["before"]["status"] == "CREATE_FAILED" and result["nodegroup"]["status"] == "CREATING"


def test_a_create_failed_group_in_check_mode_or_without_replace_failed_is_left(capsys, monkeypatch):
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": FAILED_GROUP}).install(monkeypatch)
    rc, result = run(capsys, ARGS, check=True)
    assert rc == 0 and result["changed"] is True and fake.calls == []
    assert "would be deleted and created again" in json.dumps(result["warnings"])
    rc, result = run(capsys, dict(ARGS, replace_failed=False))
    assert rc == 1 and fake.calls == []
    assert "is CREATE_FAILED (AsgInstanceLaunchFailures: InsufficientInstanceCapacity (eks-x))" in result["msg"]


def test_a_task_that_names_a_create_failed_group_only_reads_it(capsys, monkeypatch):
    # What the waits do: they must see CREATE_FAILED, not set off a replacement.
    fake = FakeEks(nodegroups={"trn-rehearsal-trn1": FAILED_GROUP}).install(monkeypatch)
    rc, result = run(capsys, dict(CONNECTION, cluster_name="trn-rehearsal", name="trn-rehearsal-trn1"))
    assert rc == 0 and result["changed"] is False and fake.calls == []
    assert result["nodegroup"]["status"] == "CREATE_FAILED"
