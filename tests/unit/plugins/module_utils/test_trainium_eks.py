# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Decisions of trainium.eks.eks_cluster without AWS, and the shape of its EKS/IAM requests."""

from __future__ import annotations

import copy

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks as eks

ARN = "arn:aws:eks:us-west-2:123456789012:cluster/trn-rehearsal"
ISSUER = "https://oidc.eks.us-west-2.amazonaws.com/id/ABCDEF0123456789"
KEY = "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
CLUSTER = {
    "name": "trn-rehearsal",
    "arn": ARN,
    "version": "1.33",
    "status": "ACTIVE",
    "endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
    "roleArn": "arn:aws:iam::123456789012:role/trn-rehearsal-cluster",
    "resourcesVpcConfig": {
        "subnetIds": ["subnet-b", "subnet-a"],
        "securityGroupIds": [],
        "clusterSecurityGroupId": "sg-cluster",
        "vpcId": "vpc-1",
        "endpointPublicAccess": True,
        "endpointPrivateAccess": True,
        "publicAccessCidrs": ["0.0.0.0/0"],
    },
    "kubernetesNetworkConfig": {"serviceIpv4Cidr": "10.100.0.0/16", "ipFamily": "ipv4"},
    "logging": {"clusterLogging": [
        {"types": ["api", "audit", "authenticator"], "enabled": True},
        {"types": ["controllerManager", "scheduler"], "enabled": False},
    ]},
    "identity": {"oidc": {"issuer": ISSUER}},
    "certificateAuthority": {"data": "LS0tLS1CRUdJTg=="},
    "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
    "tags": {"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks", "aws:created-by": "x"},
}


def params(**overrides):
    base = {
        "name": "trn-rehearsal", "version": None, "role_arn": None, "subnets": None, "security_groups": None,
        "endpoint_public_access": None, "endpoint_private_access": None, "public_access_cidrs": None, "logging": None,
        "secrets_encryption_kms_key_arn": None, "authentication_mode": None, "bootstrap_cluster_creator_admin": None,
        "service_ipv4_cidr": None, "tags": None,
    }
    base.update(overrides)
    return base


@pytest.fixture
def cluster():
    return copy.deepcopy(CLUSTER)


def nothing_to_do(plan):
    return plan["errors"] == [] and plan["changed"] is False


# --- versions -------------------------------------------------------------


@pytest.mark.parametrize("current,desired,expected", [
    ("1.33", "1.33", None), ("1.33", None, None), ("1.33", "1.34", "1.34"), ("1.9", "1.10", "1.10"),
])
def test_version_steps_that_are_allowed(current, desired, expected):
    assert eks.version_step(current, desired) == expected


@pytest.mark.parametrize("current,desired,policy,adopted", [
    ("1.36", "1.35", "STANDARD", "1.36"), ("1.36", "1.35", "EXTENDED", None), ("1.36", "1.35", None, None),
    ("1.37", "1.35", "STANDARD", None), ("1.35", "1.35", "STANDARD", None), ("2.0", "1.35", "STANDARD", None),
    # A version the collection does not know is refused, not adopted.
    ("1.37", "1.36", "STANDARD", None),
])
def test_a_cluster_eks_upgraded_itself_is_adopted_only_one_minor_above_under_standard(current, desired, policy, adopted):
    """upgradePolicy STANDARD: EKS upgrades the cluster one minor version when standard support ends."""
    assert eks.adopted_version(current, desired, policy) == adopted
    if adopted:
        assert eks.version_step(current, desired, policy) is None


def test_the_plan_of_an_adopted_cluster_changes_nothing_and_says_why():
    found = dict(copy.deepcopy(CLUSTER), version="1.36", upgradePolicy={"supportType": "STANDARD"})
    plan = eks.plan_update(found, params(version="1.35", upgrade_policy="STANDARD"))
    assert plan["errors"] == [] and plan["version"] is None and plan["adopted_version"] == "1.36"
    note = eks.adoption_note(found, "1.35")
    assert "runs Kubernetes 1.36, one minor version above the 1.35 asked for" in note and 'trainium_kubernetes_version: "1.36"' in note
    refused = eks.plan_update(dict(found, upgradePolicy={"supportType": "EXTENDED"}), params(version="1.35", upgrade_policy="EXTENDED"))
    assert refused["adopted_version"] is None and any("cannot downgrade" in e for e in refused["errors"])


@pytest.mark.parametrize("status,held", [("EXTENDED_SUPPORT", True), ("STANDARD_SUPPORT", False), (None, False)])
def test_a_move_to_standard_is_held_while_the_version_is_in_extended_support(status, held):
    """EKS User Guide, "Disable EKS extended support": not once the cluster has entered it."""
    import datetime  # pylint: disable=import-outside-toplevel

    found = dict(copy.deepcopy(CLUSTER), upgradePolicy={"supportType": "EXTENDED"}, tags={"team": "ml"})
    plan = eks.plan_update(found, params(upgrade_policy="STANDARD", logging=["api"], tags={"team": "ml", "env": "x"}))
    assert eks.asks_standard_policy(plan) and plan["changed"]
    information = {"versionStatus": status, "endOfStandardSupportDate": datetime.datetime(2026, 7, 29)} if status else {}
    after, note = eks.hold_standard_policy(found, plan, information)
    if not held:
        assert after is plan and note is None
        return
    assert not eks.asks_standard_policy(after) and after["config"] == [{"logging": eks.logging_request(["api"])}]
    assert after["tags_to_set"] == {"env": "x"} and after["changed"] is True
    assert "runs Kubernetes 1.33, in extended support since 2026-07-29" in note and "(eks_cluster_upgrade_policy)" in note
    # Nothing else to do: the held plan changes nothing (a rerun reports changed=0).
    alone = eks.plan_update(found, params(upgrade_policy="STANDARD"))
    assert eks.hold_standard_policy(found, alone, information)[0]["changed"] is False


@pytest.mark.parametrize("current,desired,words", [
    ("1.33", "1.35", "one minor version at a time"),
    ("1.33", "1.32", "cannot downgrade"),
    ("1.33", "2.0", "one minor version at a time"),
    ("1.33", "1.33.1", "a Kubernetes minor version"),
])
def test_version_steps_that_fail_name_the_values(current, desired, words):
    with pytest.raises(eks.EksConfigError) as refused:
        eks.version_step(current, desired)
    assert words in str(refused.value)
    assert desired in str(refused.value)
    if "minor version such" not in str(refused.value):
        assert f"runs {current}" in str(refused.value)


# --- create ---------------------------------------------------------------


def test_create_request_carries_everything_asked():
    request = eks.create_request(params(
        version="1.34", role_arn="arn:aws:iam::1:role/r", subnets=["subnet-a", "subnet-b"], security_groups=["sg-1"],
        endpoint_public_access=False, endpoint_private_access=True, public_access_cidrs=["10.0.0.0/8"],
        logging=["api", "audit"], secrets_encryption_kms_key_arn=KEY, authentication_mode="API_AND_CONFIG_MAP",
        bootstrap_cluster_creator_admin=True, service_ipv4_cidr="172.20.0.0/16", tags={"a": "b"},
    ))
    assert request == {
        "name": "trn-rehearsal",
        "roleArn": "arn:aws:iam::1:role/r",
        "version": "1.34",
        "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"], "securityGroupIds": ["sg-1"], "endpointPublicAccess": False,
                               "endpointPrivateAccess": True, "publicAccessCidrs": ["10.0.0.0/8"]},
        "kubernetesNetworkConfig": {"serviceIpv4Cidr": "172.20.0.0/16"},
        "logging": {"clusterLogging": [{"types": ["api", "audit"], "enabled": True},
                                       {"types": ["authenticator", "controllerManager", "scheduler"], "enabled": False}]},
        "encryptionConfig": [{"resources": ["secrets"], "provider": {"keyArn": KEY}}],
        "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": True},
        "tags": {"a": "b"},
    }


def test_create_request_leaves_unset_options_out():
    request = eks.create_request(params(role_arn="arn:aws:iam::1:role/r", subnets=["subnet-a", "subnet-b"]))
    assert set(request) == {"name", "roleArn", "resourcesVpcConfig", "accessConfig"}
    assert request["resourcesVpcConfig"] == {"subnetIds": ["subnet-a", "subnet-b"]}
    # Not EKS's own default (CONFIG_MAP): access entries only.
    assert request["accessConfig"] == {"authenticationMode": "API"}


def test_logging_all_off_and_all_on():
    assert eks.logging_request([]) == {"clusterLogging": [{"types": list(eks.LOG_TYPES), "enabled": False}]}
    assert eks.logging_request(list(eks.LOG_TYPES)) == {"clusterLogging": [{"types": list(eks.LOG_TYPES), "enabled": True}]}


@pytest.mark.parametrize("bad,option", [
    ({"logging": ["api", "kubelet"]}, "logging: got ['kubelet']"),
    ({"subnets": ["subnet-a"]}, "subnets: got ['subnet-a']"),
    ({"subnets": ["subnet-a", "subnet-a"]}, "subnets: got"),
    ({"version": "latest"}, "version: got 'latest'"),
    ({"secrets_encryption_kms_key_arn": "alias/x"}, "secrets_encryption_kms_key_arn: got 'alias/x'"),
])
def test_bad_input_is_refused_naming_the_option(bad, option):
    with pytest.raises(eks.EksConfigError) as refused:
        eks.validate_request(params(**bad))
    assert option in str(refused.value)


# --- updates ---------------------------------------------------------------


def test_nothing_asked_means_nothing_to_do(cluster):
    plan = eks.plan_update(cluster, params())
    assert nothing_to_do(plan)


def test_same_values_mean_nothing_to_do(cluster):
    plan = eks.plan_update(cluster, params(
        version="1.33", role_arn=cluster["roleArn"], subnets=["subnet-a", "subnet-b"], endpoint_public_access=True,
        endpoint_private_access=True, public_access_cidrs=["0.0.0.0/0"], logging=["authenticator", "api", "audit"],
        authentication_mode="API_AND_CONFIG_MAP", service_ipv4_cidr="10.100.0.0/16",
        tags={"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks"},
    ))
    assert nothing_to_do(plan), plan


def test_each_kind_of_change_is_its_own_update(cluster):
    plan = eks.plan_update(cluster, params(
        version="1.34", logging=["api"], endpoint_public_access=False, authentication_mode="API",
        secrets_encryption_kms_key_arn=KEY, tags={"ManagedBy": "trainium.eks", "team": "ml"},
    ))
    assert plan["version"] == "1.34"
    assert plan["config"] == [
        {"logging": eks.logging_request(["api"])},
        {"resourcesVpcConfig": {"endpointPublicAccess": False}},
        {"accessConfig": {"authenticationMode": "API"}},
    ]
    assert plan["encryption"] == KEY
    assert plan["tags_to_set"] == {"team": "ml"}
    # aws: tags are never purged
    assert plan["tags_to_remove"] == ["trainium.eks/cluster"]


def test_endpoint_update_sends_both_halves_when_both_asked(cluster):
    plan = eks.plan_update(cluster, params(endpoint_public_access=False, endpoint_private_access=True))
    assert plan["config"] == [{"resourcesVpcConfig": {"endpointPublicAccess": False, "endpointPrivateAccess": True}}]


def test_public_cidrs_compared_as_a_set(cluster):
    cluster["resourcesVpcConfig"]["publicAccessCidrs"] = ["10.0.0.0/8", "192.168.0.0/16"]
    assert nothing_to_do(eks.plan_update(cluster, params(public_access_cidrs=["192.168.0.0/16", "10.0.0.0/8"])))
    plan = eks.plan_update(cluster, params(public_access_cidrs=["10.0.0.0/8"]))
    assert plan["config"] == [{"resourcesVpcConfig": {"publicAccessCidrs": ["10.0.0.0/8"]}}]


def test_tags_left_alone_without_purge(cluster):
    plan = eks.plan_update(cluster, params(tags={"team": "ml"}), purge_tags=False)
    assert plan["tags_to_set"] == {"team": "ml"} and plan["tags_to_remove"] == []


def test_attributes_the_cluster_does_not_report_are_not_differences(cluster):
    """A cluster answer without subnets or access config (an API that leaves them out) is not changed."""
    del cluster["accessConfig"]
    cluster["resourcesVpcConfig"] = {}
    plan = eks.plan_update(cluster, params(subnets=["subnet-x", "subnet-y"], authentication_mode="API", endpoint_public_access=True))
    assert nothing_to_do(plan)


def test_immutable_differences_are_all_listed(cluster):
    cluster["encryptionConfig"] = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    plan = eks.plan_update(cluster, params(
        role_arn="arn:aws:iam::123456789012:role/other", subnets=["subnet-a", "subnet-c"], service_ipv4_cidr="172.20.0.0/16",
        secrets_encryption_kms_key_arn=KEY.replace("1234abcd", "9999abcd"), authentication_mode="CONFIG_MAP", version="1.35",
    ))
    assert len(plan["errors"]) == 6
    message = eks.refusal(cluster, plan["errors"])
    assert "cannot change 6 setting(s) of EKS cluster trn-rehearsal" in message
    for part in ("role_arn: cluster has arn:aws:iam::123456789012:role/trn-rehearsal-cluster, asked arn:aws:iam::123456789012:role/other",
                 "subnets: cluster has ['subnet-a', 'subnet-b'], asked ['subnet-a', 'subnet-c']",
                 "service_ipv4_cidr: cluster has 10.100.0.0/16, asked 172.20.0.0/16",
                 "secrets_encryption_kms_key_arn: cluster encrypts secrets with",
                 "authentication_mode: cluster has API_AND_CONFIG_MAP, asked CONFIG_MAP",
                 "version: got 1.35, the cluster runs 1.33"):
        assert part in message


def test_removing_encryption_is_refused(cluster):
    cluster["encryptionConfig"] = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    errors = eks.plan_update(cluster, params(secrets_encryption_kms_key_arn=""))["errors"]
    assert len(errors) == 1 and "cannot remove secrets encryption" in errors[0]
    assert nothing_to_do(eks.plan_update(cluster, params(secrets_encryption_kms_key_arn=KEY)))


def test_apply_plan_locally_shows_the_result(cluster):
    plan = eks.plan_update(cluster, params(version="1.34", logging=[], endpoint_public_access=False, tags={"team": "ml"}))
    after = eks.describe_result(eks.apply_plan_locally(cluster, plan))
    assert after["version"] == "1.34"
    assert after["logging"] == []
    assert after["endpoint_public_access"] is False and after["endpoint_private_access"] is True
    assert after["subnet_ids"] == ["subnet-a", "subnet-b"]
    assert after["tags"] == {"team": "ml", "aws:created-by": "x"}
    assert cluster["version"] == "1.33"


def test_describe_result_keys(cluster):
    result = eks.describe_result(cluster, "arn:aws:iam::123456789012:oidc-provider/x")
    assert result["cluster_security_group_id"] == "sg-cluster"
    assert result["service_ipv4_cidr"] == "10.100.0.0/16"
    assert result["certificate_authority"] == "LS0tLS1CRUdJTg=="
    assert result["oidc_issuer"] == ISSUER
    assert result["logging"] == ["api", "audit", "authenticator"]
    assert eks.describe_result(None) == {}


def test_oidc_provider_arn_follows_partition_and_account():
    assert eks.oidc_provider_arn_for(ARN, ISSUER) == (
        "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABCDEF0123456789")
    assert eks.oidc_provider_arn_for("arn:aws-cn:eks:cn-north-1:210987654321:cluster/c", "https://oidc.eks.cn-north-1.amazonaws.com.cn/id/X") == (
        "arn:aws-cn:iam::210987654321:oidc-provider/oidc.eks.cn-north-1.amazonaws.com.cn/id/X")
    assert eks.oidc_provider_arn_for(ARN, None) is None


# --- request shapes (Stubber) ---------------------------------------------


def stubbed(service):
    client = boto3.client(service, region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b")
    return client, Stubber(client)


def test_describe_missing_cluster_is_none():
    client, stub = stubbed("eks")
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "gone"})
    with stub:
        assert eks.describe_cluster(client, "gone") is None
    stub.assert_no_pending_responses()


def test_update_requests(cluster):
    client, stub = stubbed("eks")
    update = {"id": "u-1", "status": "InProgress", "type": "LoggingUpdate"}
    stub.add_response("update_cluster_config", {"update": update},
                      {"name": "trn-rehearsal", "logging": eks.logging_request(["api"])})
    stub.add_response("update_cluster_version", {"update": dict(update, type="VersionUpdate")}, {"name": "trn-rehearsal", "version": "1.34"})
    stub.add_response("associate_encryption_config", {"update": dict(update, type="AssociateEncryptionConfig")},
                      {"clusterName": "trn-rehearsal", "encryptionConfig": [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]})
    stub.add_response("describe_update", {"update": dict(update, status="Successful")}, {"name": "trn-rehearsal", "updateId": "u-1"})
    with stub:
        assert eks.update_cluster_config(client, "trn-rehearsal", {"logging": eks.logging_request(["api"])})["id"] == "u-1"
        eks.update_cluster_version(client, "trn-rehearsal", "1.34")
        eks.associate_encryption(client, "trn-rehearsal", KEY)
        assert eks.wait_for_update(client, "trn-rehearsal", update, 60, sleep=lambda _s: None)["status"] == "Successful"
    stub.assert_no_pending_responses()


def test_failed_update_is_an_error():
    client, stub = stubbed("eks")
    update = {"id": "u-2", "status": "InProgress", "type": "VersionUpdate"}
    stub.add_response("describe_update", {"update": dict(update, status="Failed", errors=[{"errorMessage": "add-on too old"}])},
                      {"name": "c", "updateId": "u-2"})
    with stub, pytest.raises(eks.EksClusterError, match="ended Failed: add-on too old"):
        eks.wait_for_update(client, "c", update, 60, sleep=lambda _s: None)


def test_oidc_provider_requests_and_lookup_by_tag():
    iam, stub = stubbed("iam")
    own = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/OLD"
    other = "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"
    stub.add_response("create_open_id_connect_provider", {"OpenIDConnectProviderArn": own},
                      {"Url": ISSUER, "ClientIDList": ["sts.amazonaws.com"],
                       "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}, {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]})
    stub.add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": own}, {"Arn": other}]}, {})
    stub.add_response("get_open_id_connect_provider", {"Url": "x", "ClientIDList": [], "ThumbprintList": [],
                                                       "Tags": [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]},
                      {"OpenIDConnectProviderArn": own})
    stub.add_response("get_open_id_connect_provider", {"Url": "y", "ClientIDList": [], "ThumbprintList": [], "Tags": []},
                      {"OpenIDConnectProviderArn": other})
    with stub:
        assert eks.create_oidc_provider(iam, ISSUER, {"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks"}) == own
        assert eks.oidc_provider_arns_of_cluster(iam, "trn-rehearsal") == [own]
    stub.assert_no_pending_responses()


# --- teardown of a cluster still being created; IAM propagation on create ----


def test_creating_cluster_is_polled_until_active_then_deleted(sleeps):
    client, stub = stubbed("eks")
    for status in ("CREATING", "CREATING", "ACTIVE"):
        stub.add_response("describe_cluster", {"cluster": {"name": "trn-rehearsal", "status": status}}, {"name": "trn-rehearsal"})
    stub.add_response("delete_cluster", {"cluster": {"name": "trn-rehearsal", "status": "DELETING"}}, {"name": "trn-rehearsal"})
    slept = []
    with stub:
        assert eks.wait_until_settled(client, "trn-rehearsal", 600, delay=15, clock=lambda: 0, sleep=slept.append)["status"] == "ACTIVE"
        assert eks.delete_cluster(client, "trn-rehearsal", timeout=600) is True
    stub.assert_no_pending_responses()
    assert slept == [15, 15] and sleeps == []


@pytest.mark.parametrize("status", ["ACTIVE", "FAILED", "DELETING"])
def test_settled_cluster_states_end_the_wait_at_once(status):
    client, stub = stubbed("eks")
    stub.add_response("describe_cluster", {"cluster": {"name": "c", "status": status}}, {"name": "c"})
    with stub:
        assert eks.wait_until_settled(client, "c", 600, clock=lambda: 0, sleep=pytest.fail)["status"] == status


def test_cluster_gone_while_waiting_is_none():
    client, stub = stubbed("eks")
    stub.add_response("describe_cluster", {"cluster": {"name": "c", "status": "CREATING"}}, {"name": "c"})
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "c"})
    with stub:
        assert eks.wait_until_settled(client, "c", 600, clock=lambda: 0, sleep=lambda _s: None) is None


def test_wait_until_settled_times_out_naming_the_state():
    client, stub = stubbed("eks")
    stub.add_response("describe_cluster", {"cluster": {"name": "c", "status": "UPDATING"}}, {"name": "c"})
    times = iter([0, 601])
    with stub, pytest.raises(eks.EksClusterError, match=r"EKS cluster c to finish CREATING or UPDATING before deleting it .*\(last state: UPDATING\)"):
        eks.wait_until_settled(client, "c", 600, clock=lambda: next(times), sleep=pytest.fail)


def test_delete_cluster_in_use_is_retried_with_backoff(sleeps):
    client, stub = stubbed("eks")
    stub.add_client_error("delete_cluster", "ResourceInUseException", "Cannot delete because cluster c currently has an update in progress",
                          expected_params={"name": "c"})
    stub.add_response("delete_cluster", {"cluster": {"name": "c", "status": "DELETING"}}, {"name": "c"})
    slept = []
    with stub:
        assert eks.delete_cluster(client, "c", timeout=1200, clock=lambda: 0, sleep=slept.append) is True
    stub.assert_no_pending_responses()
    assert len(slept) == 1 and 0 <= slept[0] <= 30 and sleeps == []


def test_delete_cluster_in_use_gives_up_within_the_timeout(sleeps):
    client, stub = stubbed("eks")
    for _attempt in range(2):
        stub.add_client_error("delete_cluster", "ResourceInUseException", "still CREATING", expected_params={"name": "c"})
    times = iter([0, 1, 46])
    slept = []
    with stub, pytest.raises(eks.EksClusterError, match="delete EKS cluster"):
        eks.delete_cluster(client, "c", timeout=45, clock=lambda: next(times), sleep=slept.append)
    assert len(slept) == 1 and sleeps == []


ROLE_MESSAGE = "Role with arn: arn:aws:iam::123456789012:role/trn-rehearsal-cluster, cannot be assumed by the EKS service principal"


def test_create_cluster_retries_while_the_new_role_cannot_be_assumed():
    client, stub = stubbed("eks")
    request = {"name": "c", "roleArn": "arn:aws:iam::123456789012:role/trn-rehearsal-cluster",
               "resourcesVpcConfig": {"subnetIds": ["subnet-0123456789abcdef0"]}}
    stub.add_client_error("create_cluster", "InvalidParameterException", ROLE_MESSAGE, expected_params=request)
    stub.add_client_error("create_cluster", "InvalidParameterException",
                          "Role with arn: arn:aws:iam::123456789012:role/x, could not be assumed"
                          " because it does not exist or the trusted entity is not correct",
                          expected_params=request)
    stub.add_response("create_cluster", {"cluster": {"name": "c", "status": "CREATING"}}, request)
    slept = []
    with stub:
        assert eks.create_cluster(client, request, sleep=slept.append)["status"] == "CREATING"
    stub.assert_no_pending_responses()
    assert slept == [5, 10]


def test_create_cluster_gives_up_after_the_attempts():
    client, stub = stubbed("eks")
    request = {"name": "c", "roleArn": "arn:aws:iam::123456789012:role/r", "resourcesVpcConfig": {"subnetIds": ["subnet-0123456789abcdef0"]}}
    for _attempt in range(3):
        stub.add_client_error("create_cluster", "InvalidParameterException", ROLE_MESSAGE, expected_params=request)
    slept = []
    with stub, pytest.raises(eks.EksClusterError, match="cannot be assumed"):
        eks.create_cluster(client, request, attempts=3, sleep=slept.append)
    assert slept == [5, 10]


@pytest.mark.parametrize("code, message", [
    ("InvalidParameterException", "Subnet subnet-1 does not exist"),
    ("InvalidParameterException", "Kubernetes version 1.10 is unsupported"),
    ("AccessDeniedException", "Role r cannot be assumed"),
])
def test_other_create_errors_are_not_retried(code, message):
    client, stub = stubbed("eks")
    request = {"name": "c", "roleArn": "arn:aws:iam::123456789012:role/r", "resourcesVpcConfig": {"subnetIds": ["subnet-0123456789abcdef0"]}}
    stub.add_client_error("create_cluster", code, message, expected_params=request)
    with stub, pytest.raises(eks.EksClusterError):
        eks.create_cluster(client, request, sleep=pytest.fail)


# --- zones EKS refuses (UnsupportedAvailabilityZoneException) ------------------

ZONES = {"subnet-a": ("us-east-1a", "use1-az6"), "subnet-b": ("us-east-1b", "use1-az1"), "subnet-e": ("us-east-1e", "use1-az3")}
ZONE_MESSAGE = ("Cannot create cluster 'c' because us-east-1e, the targeted availability zone, does not currently have sufficient "
                "capacity to support the cluster. Retry and choose from these availability zones: us-east-1a, us-east-1b, us-east-1c")


def zone_request(subnets):
    return {"name": "c", "roleArn": "arn:aws:iam::123456789012:role/r", "resourcesVpcConfig": {"subnetIds": list(subnets)},
            "tags": {"trainium.eks/cluster": "c"}}


def test_a_refused_zone_is_left_out_and_recorded_when_two_zones_remain():
    client, stub = stubbed("eks")
    first = zone_request(["subnet-a", "subnet-b", "subnet-e"])
    stub.add_client_error("create_cluster", eks.UNSUPPORTED_ZONE_CODE, ZONE_MESSAGE, expected_params=first,
                          modeled_fields={"validZones": ["us-east-1a", "us-east-1b", "us-east-1c"], "clusterName": "c"})
    retry = zone_request(["subnet-a", "subnet-b"])
    retry["tags"][eks.SKIPPED_SUBNETS_TAG] = "subnet-e"
    stub.add_response("create_cluster", {"cluster": {"name": "c", "status": "CREATING", "tags": retry["tags"],
                                                     "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]}}}, retry)
    asked = []
    with stub:
        created = eks.create_cluster(client, first, sleep=pytest.fail, subnet_zones=lambda ids: asked.append(ids) or ZONES)
    stub.assert_no_pending_responses()
    assert asked == [["subnet-a", "subnet-b", "subnet-e"]]
    assert eks.skipped_subnets(created) == {"subnet-e"}
    # A later run asks for all three again: the one EKS refused is no difference, a new one still is.
    cluster = dict(created, roleArn=first["roleArn"])
    assert eks.immutable_differences(cluster, {"subnets": ["subnet-a", "subnet-b", "subnet-e"]}) == []
    assert eks.immutable_differences(cluster, {"subnets": ["subnet-a", "subnet-b", "subnet-e", "subnet-f"]}) != []
    # The record survives a tag purge.
    plan = eks.plan_update(cluster, {"tags": {"trainium.eks/cluster": "c"}}, purge_tags=True)
    assert eks.SKIPPED_SUBNETS_TAG not in plan["tags_to_remove"]


def test_the_record_counts_only_subnets_not_in_the_cluster_and_is_never_the_user_s():
    cluster = {"roleArn": "arn:aws:iam::123456789012:role/r", "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]},
               "tags": {eks.SKIPPED_SUBNETS_TAG: "subnet-e subnet-a"}}
    # subnet-a is in the cluster: the tag cannot hide that it is no longer asked for.
    assert eks.immutable_differences(cluster, {"subnets": ["subnet-b", "subnet-e"]}) != []
    assert eks.immutable_differences(cluster, {"subnets": ["subnet-a", "subnet-b", "subnet-e"]}) == []
    for key in (eks.SKIPPED_SUBNETS_TAG, eks.ADMIN_ENTRIES_TAG):
        with pytest.raises(eks.EksConfigError) as refused:
            eks.validate_request({"name": "c", "tags": {key: "subnet-x"}})
        assert str(refused.value).startswith(f"tags: got the key(s) {key}; allowed: keys other than these")


def test_more_left_out_subnets_than_the_tag_holds_are_refused_before_the_retry():
    many = {f"subnet-{i:017x}": ("us-east-1e", "use1-az3") for i in range(11)}
    zones = dict(ZONES, **many)
    with pytest.raises(eks.EksConfigError) as refused:
        eks.request_in_valid_zones(zone_request(["subnet-a", "subnet-b", *many]), zones, ["us-east-1a", "us-east-1b"])
    assert "in the zones of 11 of its subnets, more than the tag trainium.eks/control-plane-skipped-subnets can record (256 characters)" \
        in str(refused.value)
    retry, left_out = eks.request_in_valid_zones(zone_request(["subnet-a", "subnet-b", *list(many)[:10]]), zones, ["us-east-1a", "us-east-1b"])
    assert len(left_out) == 10 and len(retry["tags"][eks.SKIPPED_SUBNETS_TAG]) == 249


def test_zone_ids_count_as_well_as_names():
    retry, left_out = eks.request_in_valid_zones(zone_request(["subnet-a", "subnet-b", "subnet-e"]), ZONES, ["use1-az6", "use1-az1"])
    assert retry["resourcesVpcConfig"]["subnetIds"] == ["subnet-a", "subnet-b"] and left_out == ["subnet-e"]


def test_fewer_than_two_zones_left_is_refused_naming_the_supported_zones():
    with pytest.raises(eks.EksConfigError) as refused:
        eks.request_in_valid_zones(zone_request(["subnet-a", "subnet-e"]), ZONES, ["us-east-1a", "us-east-1c", "us-east-1d"])
    message = str(refused.value)
    assert message.startswith("subnets: EKS refused cluster c's control plane in us-east-1e (UnsupportedAvailabilityZoneException)")
    assert "the other subnets are in 1 zone(s) (us-east-1a)" in message
    assert "allowed: subnets in at least two of the zones EKS named, us-east-1a, us-east-1c, us-east-1d" in message


def test_a_zone_refused_again_after_the_retry_is_an_error_not_a_loop():
    client, stub = stubbed("eks")
    for subnets in (["subnet-a", "subnet-b", "subnet-e"], ["subnet-a", "subnet-b"]):
        stub.add_client_error("create_cluster", eks.UNSUPPORTED_ZONE_CODE, ZONE_MESSAGE,
                              modeled_fields={"validZones": ["us-east-1a", "us-east-1b"]})
    with stub, pytest.raises(eks.EksClusterError, match="sufficient capacity"):
        eks.create_cluster(client, zone_request(["subnet-a", "subnet-b", "subnet-e"]), sleep=pytest.fail, subnet_zones=lambda ids: ZONES)
    stub.assert_no_pending_responses()


def test_without_subnet_zones_the_refusal_is_reported_as_it_is():
    client, stub = stubbed("eks")
    stub.add_client_error("create_cluster", eks.UNSUPPORTED_ZONE_CODE, ZONE_MESSAGE, modeled_fields={"validZones": ["us-east-1a"]})
    with stub, pytest.raises(eks.EksClusterError, match="us-east-1e"):
        eks.create_cluster(client, zone_request(["subnet-a", "subnet-e"]), sleep=pytest.fail)


def test_subnet_zones_reads_names_and_ids():
    client, stub = stubbed("ec2")
    stub.add_response("describe_subnets", {"Subnets": [{"SubnetId": "subnet-a", "AvailabilityZone": "us-east-1a", "AvailabilityZoneId": "use1-az6"}]},
                      {"SubnetIds": ["subnet-a"]})
    with stub:
        assert eks.describe_subnet_zones(client, ["subnet-a"]) == {"subnet-a": ("us-east-1a", "use1-az6")}


# --- upgrade policy ----------------------------------------------------------


def test_upgrade_policy_is_created_compared_and_updated(cluster):
    request = eks.create_request(params(role_arn="arn:aws:iam::1:role/r", subnets=["subnet-a", "subnet-b"], upgrade_policy="EXTENDED"))
    assert request["upgradePolicy"] == {"supportType": "EXTENDED"}
    assert eks.cluster_from_request(request)["upgradePolicy"] == {"supportType": "EXTENDED"}
    cluster["upgradePolicy"] = {"supportType": "EXTENDED"}
    assert nothing_to_do(eks.plan_update(cluster, params(upgrade_policy="EXTENDED")))
    plan = eks.plan_update(cluster, params(upgrade_policy="STANDARD"))
    assert plan["changed"] is True and plan["config"] == [{"upgradePolicy": {"supportType": "STANDARD"}}]
    after = eks.describe_result(eks.apply_plan_locally(cluster, plan))
    assert after["upgrade_policy"] == "STANDARD" and eks.describe_result(cluster)["upgrade_policy"] == "EXTENDED"


def test_upgrade_policy_the_cluster_does_not_report_is_left_alone(cluster):
    """moto 5.2.5 drops upgradePolicy: an unknown policy must not cause an update on every run."""
    assert "upgradePolicy" not in cluster
    assert nothing_to_do(eks.plan_update(cluster, params(upgrade_policy="STANDARD")))
    assert eks.describe_result(cluster)["upgrade_policy"] is None


def test_update_cluster_config_retries_an_update_in_progress(monkeypatch, sleeps):
    client, stub = stubbed("eks")
    payload = {"upgradePolicy": {"supportType": "STANDARD"}}
    stub.add_client_error("update_cluster_config", "ResourceInUseException", "An update is already in progress",
                          expected_params={"name": "c", **payload})
    stub.add_response("update_cluster_config", {"update": {"id": "u-3", "status": "InProgress", "type": "UpgradePolicyUpdate"}},
                      {"name": "c", **payload})
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    with stub:
        assert eks.update_cluster_config(client, "c", payload, timeout=600)["id"] == "u-3"
    stub.assert_no_pending_responses()
    assert slept == [5] and sleeps == []
