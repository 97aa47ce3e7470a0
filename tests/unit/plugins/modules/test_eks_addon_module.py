# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium.eks.eks_addon run in-process; its AWS calls are replaced by a fake EKS account."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks_addon as ad
from ansible_collections.trainium.eks.plugins.modules import eks_addon

CONNECTION = {"region": "us-west-2", "access_key": "AKIAIOSFODNN7EXAMPLE", "secret_key": "not-a-real-secret", "endpoint_url": "http://127.0.0.1:1"}
ROLE = "arn:aws:iam::123456789012:role/trn-rehearsal-vpc-cni"
ARGS = dict(CONNECTION, cluster_name="trn-rehearsal", name="vpc-cni", service_account_role_arn=ROLE,
            configuration_values={"env": {"ENABLE_PREFIX_DELEGATION": "true"}}, tags={"trainium.eks/cluster": "trn-rehearsal"})
EXISTING = {
    "addonName": "vpc-cni", "clusterName": "trn-rehearsal", "status": "ACTIVE", "addonVersion": "v1.20.4-eksbuild.2",
    "addonArn": "arn:aws:eks:us-west-2:123456789012:addon/trn-rehearsal/vpc-cni/x", "serviceAccountRoleArn": ROLE,
    "configurationValues": '{"env":{"ENABLE_PREFIX_DELEGATION":"true"}}', "tags": {"trainium.eks/cluster": "trn-rehearsal"},
    "health": {"issues": []},
}
VERSIONS = [
    {"addonName": "vpc-cni", "addonVersions": [
        {"addonVersion": "v1.20.10-eksbuild.1", "compatibilities": [{"clusterVersion": "1.34", "defaultVersion": False}]},
        {"addonVersion": "v1.20.4-eksbuild.2", "compatibilities": [{"clusterVersion": "1.34", "defaultVersion": True}]},
    ]},
    {"addonName": "coredns", "addonVersions": [
        {"addonVersion": "v1.12.3-eksbuild.1", "compatibilities": [{"clusterVersion": "1.34", "defaultVersion": True}]},
    ]},
]


class FakeEks:
    """The account as the module_utils functions see it; records every call that would change it."""

    def __init__(self, cluster=True, addons=None, settle=None):
        self.cluster = cluster
        self.addons = copy.deepcopy(addons or {})
        self.calls = []
        # Statuses the add-on passes through while wait_until_idle polls it.
        self.settle = list(settle or [])

    def install(self, monkeypatch):
        monkeypatch.setattr(ad, "describe_cluster", lambda client, name: {"name": name, "version": "1.34"} if self.cluster else None)
        monkeypatch.setattr(ad, "describe_addon", lambda client, cluster, name: copy.deepcopy(self.addons.get(name)))
        monkeypatch.setattr(ad, "describe_addon_versions", self.versions)
        monkeypatch.setattr(ad, "create_addon", self.create)
        monkeypatch.setattr(ad, "update_addon", self.update)
        monkeypatch.setattr(ad, "delete_addon", self.delete)
        monkeypatch.setattr(ad, "wait_for_addon", self.wait)
        monkeypatch.setattr(ad, "wait_until_idle", self.wait_idle)
        monkeypatch.setattr(common, "update_tags", self.update_tags)
        return self

    def versions(self, client, kubernetes_version, name=None):
        self.calls.append(("versions", name))
        return [a for a in VERSIONS if name in (None, a["addonName"])]

    def create(self, client, request):
        self.calls.append(("create", request))
        addon = dict(ad.predict_new(request), addonArn="arn:new")
        self.addons[request["addonName"]] = addon
        return copy.deepcopy(addon)

    def update(self, client, request, timeout=None):
        assert self.addons[request["addonName"]]["status"] not in ad.BUSY_STATES, "UpdateAddon while busy"
        self.calls.append(("update", request))
        self.addons[request["addonName"]] = ad.predict(self.addons[request["addonName"]], {"update": request})
        return {"id": "u-1", "status": "InProgress", "type": "AddonUpdate"}

    def delete(self, client, cluster, name, preserve=False, timeout=None):
        self.calls.append(("delete", name, preserve))
        self.addons[name]["status"] = "DELETING"
        return True

    def update_tags(self, client, arn, to_set, to_remove):
        if to_remove:
            self.calls.append(("untag", to_remove))
        if to_set:
            self.calls.append(("tag", to_set))

    def wait(self, client, cluster, name, gone=False, timeout=900, **kwargs):
        self.calls.append(("wait_gone" if gone else "wait_active", name))
        if gone:
            self.addons.pop(name, None)
            return None
        self.addons[name]["status"] = "ACTIVE"
        return copy.deepcopy(self.addons[name])

    def wait_idle(self, client, cluster, name, timeout, **kwargs):
        self.calls.append(("wait_idle", name))
        for status in self.settle:
            self.addons[name]["status"] = status
        return copy.deepcopy(self.addons.get(name))


@pytest.fixture
def run(run_main):
    """run(args, check=False, diff=False) -> (exit code, result) of eks_addon."""
    return lambda args, **modes: run_main(eks_addon.main, args, **modes)


def kinds(fake):
    return [call[0] for call in fake.calls]


def test_creates_with_the_default_version_and_waits(run, monkeypatch):
    fake = FakeEks().install(monkeypatch)
    rc, result = run(dict(ARGS, wait=True), diff=True)
    assert rc == 0 and result["changed"] is True, result
    assert kinds(fake) == ["versions", "create", "wait_active"]
    assert fake.calls[1][1] == {"clusterName": "trn-rehearsal", "addonName": "vpc-cni", "resolveConflicts": "OVERWRITE",
                                "addonVersion": "v1.20.4-eksbuild.2", "serviceAccountRoleArn": ROLE,
                                "configurationValues": '{"env": {"ENABLE_PREFIX_DELEGATION": "true"}}',
                                "tags": {"trainium.eks/cluster": "trn-rehearsal"}}
    assert result["addon"]["status"] == "ACTIVE" and result["addon"]["version"] == "v1.20.4-eksbuild.2"
    assert result["diff"]["before"] == {} and result["diff"]["after"]["service_account_role_arn"] == ROLE


def test_check_mode_creates_nothing_but_names_the_version(run, monkeypatch):
    fake = FakeEks().install(monkeypatch)
    rc, result = run(dict(ARGS, addon_version="v1.20.10-eksbuild.1"), check=True)
    assert rc == 0 and result["changed"] is True and kinds(fake) == ["versions"]
    assert (result["addon"]["status"], result["addon"]["version"]) == ("CREATING", "v1.20.10-eksbuild.1")


def test_unknown_version_fails_listing_the_offered_ones(run, monkeypatch):
    fake = FakeEks().install(monkeypatch)
    rc, result = run(dict(ARGS, addon_version="v1.1.1-eksbuild.1"))
    assert rc == 1 and kinds(fake) == ["versions"]
    assert result["msg"] == ("addon_version: got 'v1.1.1-eksbuild.1' (str); allowed: a version EKS offers for add-on vpc-cni on "
                             "Kubernetes 1.34: v1.20.10-eksbuild.1, v1.20.4-eksbuild.2 (default v1.20.4-eksbuild.2)")
    fake = FakeEks(addons={"vpc-cni": EXISTING}).install(monkeypatch)
    rc, result = run(dict(ARGS, addon_version="v1.1.1-eksbuild.1"))
    assert rc == 1 and "allowed: a version EKS offers" in result["msg"] and "update" not in kinds(fake)


def test_unknown_addon_fails_listing_the_offered_ones(run, monkeypatch):
    fake = FakeEks().install(monkeypatch)
    rc, result = run(dict(ARGS, name="vpc-cin"))
    assert rc == 1 and kinds(fake) == ["versions", "versions"]
    assert result["msg"] == "name: got 'vpc-cin' (str); allowed: an add-on EKS offers for Kubernetes 1.34: coredns, vpc-cni"


def test_unchanged_when_equal(run, monkeypatch):
    fake = FakeEks(addons={"vpc-cni": EXISTING}).install(monkeypatch)
    rc, result = run(dict(ARGS, configuration_values='{"env": {"ENABLE_PREFIX_DELEGATION": "true"}}', wait=True))
    assert rc == 0 and result["changed"] is False and fake.calls == [], fake.calls
    assert result["updates"] == [] and result["addon"]["configuration_values"] == {"env": {"ENABLE_PREFIX_DELEGATION": "true"}}


def test_differences_go_in_one_update_and_check_mode_sends_nothing(run, monkeypatch):
    fake = FakeEks(addons={"vpc-cni": EXISTING}).install(monkeypatch)
    args = dict(ARGS, service_account_role_arn="arn:aws:iam::123456789012:role/other", configuration_values={},
                addon_version="v1.20.10-eksbuild.1", resolve_conflicts="PRESERVE", tags={"team": "ml"})
    rc, result = run(args, check=True, diff=True)
    assert rc == 0 and result["changed"] is True and kinds(fake) == ["versions"]
    assert result["diff"]["before"]["version"] == "v1.20.4-eksbuild.2" and result["diff"]["after"]["version"] == "v1.20.10-eksbuild.1"
    assert result["diff"]["after"]["configuration_values"] == {} and result["diff"]["after"]["tags"] == {"team": "ml"}
    fake.calls.clear()
    rc, result = run(dict(args, wait=True))
    assert kinds(fake) == ["versions", "update", "untag", "tag", "wait_active"]
    assert fake.calls[1][1] == {"clusterName": "trn-rehearsal", "addonName": "vpc-cni", "resolveConflicts": "PRESERVE",
                                "addonVersion": "v1.20.10-eksbuild.1", "serviceAccountRoleArn": "arn:aws:iam::123456789012:role/other",
                                "configurationValues": ""}
    assert result["updates"] == [{"id": "u-1", "status": "InProgress", "type": "AddonUpdate"}]
    assert result["addon"]["status"] == "ACTIVE" and result["addon"]["configuration_values"] == {}


def test_tags_only_change_tags(run, monkeypatch):
    fake = FakeEks(addons={"vpc-cni": EXISTING}).install(monkeypatch)
    rc, result = run(dict(ARGS, tags={"trainium.eks/cluster": "trn-rehearsal", "team": "ml"}, wait=True))
    assert rc == 0 and result["changed"] is True and kinds(fake) == ["tag"]


def test_busy_addon_is_waited_out_before_the_update(run, monkeypatch):
    fake = FakeEks(addons={"vpc-cni": dict(EXISTING, status="CREATING")}, settle=["ACTIVE"]).install(monkeypatch)
    rc, result = run(dict(ARGS, configuration_values={}))
    assert rc == 0 and result["changed"] is True
    assert kinds(fake) == ["wait_idle", "update"] and fake.calls[1][1]["configurationValues"] == ""


def test_busy_addon_that_fails_meanwhile_is_reported(run, monkeypatch):
    failed = dict(EXISTING, status="CREATING", health={"issues": [{"code": "ConfigurationConflict", "message": "Conflicts found"}]})
    fake = FakeEks(addons={"vpc-cni": failed}, settle=["CREATE_FAILED"]).install(monkeypatch)
    rc, result = run(dict(ARGS, configuration_values={}))
    assert rc == 1 and kinds(fake) == ["wait_idle"]
    assert result["msg"] == ("add-on vpc-cni of cluster trn-rehearsal is CREATE_FAILED (ConfigurationConflict: Conflicts found) "
                             "after waiting to update it; run again")


def test_create_failed_addon_fails_with_its_health(run, monkeypatch):
    failed = dict(EXISTING, status="CREATE_FAILED", health={"issues": [
        {"code": "ConfigurationConflict", "message": "Conflicts found", "resourceIds": ["aws-node"]}]})
    fake = FakeEks(addons={"vpc-cni": failed}).install(monkeypatch)
    rc, result = run(ARGS)
    assert rc == 1 and fake.calls == []
    assert result["msg"].startswith("add-on vpc-cni of cluster trn-rehearsal is CREATE_FAILED (ConfigurationConflict: Conflicts found "
                                    "(aws-node)); fix the cause, then delete it (state=absent)")
    assert result["addon"]["status"] == "CREATE_FAILED"


def test_degraded_addon_is_updated_with_a_warning(run, monkeypatch):
    degraded = dict(EXISTING, status="DEGRADED", health={"issues": [{"code": "InsufficientNumberOfReplicas", "message": "no replicas"}]})
    fake = FakeEks(addons={"vpc-cni": degraded}).install(monkeypatch)
    rc, result = run(dict(ARGS, configuration_values={}))
    assert rc == 0 and result["changed"] is True and kinds(fake) == ["update"]
    assert any("is DEGRADED: InsufficientNumberOfReplicas: no replicas" in str(w) for w in result["warnings"]), result


def test_deleting_addon_is_refused_for_present(run, monkeypatch):
    fake = FakeEks(addons={"vpc-cni": dict(EXISTING, status="DELETING")}).install(monkeypatch)
    rc, result = run(ARGS)
    assert rc == 1 and fake.calls == [] and "is being deleted; run again once it is gone" in result["msg"]


def test_bad_parameters_fail_before_any_aws_call(run, monkeypatch):
    monkeypatch.setattr(ad, "describe_cluster", lambda *a: pytest.fail("AWS was called"))
    rc, result = run(dict(ARGS, service_account_role_arn="cni-role", configuration_values="[1]"))
    assert rc == 1 and result["msg"].startswith("2 problem(s) in the parameters: service_account_role_arn: got 'cni-role' (str)")


def test_missing_cluster(run, monkeypatch):
    FakeEks(cluster=False).install(monkeypatch)
    rc, result = run(ARGS)
    assert rc == 1 and result["msg"].startswith("cluster_name: EKS cluster trn-rehearsal does not exist in us-west-2")
    rc, result = run(ARGS, check=True)
    assert rc == 0 and result["changed"] is True
    assert any("would be created with the cluster" in str(w) for w in result["warnings"]), result
    rc, result = run(dict(CONNECTION, cluster_name="trn-rehearsal", name="vpc-cni", state="absent"))
    assert rc == 0 and result["changed"] is False and result["addon"] == {}


def test_absent_deletes_waits_and_then_changes_nothing(run, monkeypatch):
    fake = FakeEks(addons={"vpc-cni": EXISTING}).install(monkeypatch)
    args = dict(CONNECTION, cluster_name="trn-rehearsal", name="vpc-cni", state="absent", preserve=True, wait=True)
    rc, result = run(args, check=True, diff=True)
    assert rc == 0 and result["changed"] is True and fake.calls == []
    assert result["diff"]["after"] == {} and result["diff"]["before"]["name"] == "vpc-cni"
    rc, result = run(args)
    assert rc == 0 and result["changed"] is True and fake.calls == [("delete", "vpc-cni", True), ("wait_gone", "vpc-cni")]
    assert result["addon"]["status"] == "DELETING"
    rc, result = run(args)
    assert rc == 0 and result["changed"] is False and result["addon"] == {}


def test_absent_on_a_deleting_addon_changes_nothing(run, monkeypatch):
    fake = FakeEks(addons={"vpc-cni": dict(EXISTING, status="DELETING")}).install(monkeypatch)
    rc, result = run(dict(CONNECTION, cluster_name="trn-rehearsal", name="vpc-cni", state="absent"))
    assert rc == 0 and result["changed"] is False and fake.calls == []
