# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium.eks.eks_cluster run in-process against Stubber-checked EKS and IAM clients."""

from __future__ import annotations

import copy
import json
import types

import boto3
import pytest
from botocore.stub import ANY
from botocore.stub import Stubber

from ansible.module_utils.testing import patch_module_args
from ansible_collections.amazon.aws.plugins.module_utils import cloud
from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks as eks
from ansible_collections.trainium.eks.plugins.modules import eks_cluster


CONNECTION = {"region": "us-west-2", "access_key": "AKIAIOSFODNN7EXAMPLE", "secret_key": "not-a-real-secret"}
ARN = "arn:aws:eks:us-west-2:123456789012:cluster/trn-rehearsal"
ISSUER = "https://oidc.eks.us-west-2.amazonaws.com/id/ABCDEF"
OIDC_ARN = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABCDEF"
ROLE = "arn:aws:iam::123456789012:role/trn-rehearsal-cluster"
CLUSTER = {
    "name": "trn-rehearsal", "arn": ARN, "version": "1.34", "status": "ACTIVE", "roleArn": ROLE,
    "endpoint": "https://127.0.0.1:6443", "certificateAuthority": {"data": "Q0E="},
    "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"], "endpointPublicAccess": True, "endpointPrivateAccess": True,
                           "publicAccessCidrs": ["0.0.0.0/0"], "clusterSecurityGroupId": "sg-c"},
    "kubernetesNetworkConfig": {"serviceIpv4Cidr": "172.20.0.0/16"},
    "logging": eks.logging_request(["api", "audit", "authenticator"]),
    "identity": {"oidc": {"issuer": ISSUER}},
    "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
    "tags": {"ManagedBy": "trainium.eks"},
}
WANTED = dict(
    CONNECTION, name="trn-rehearsal", version="1.34", role_arn=ROLE, subnets=["subnet-a", "subnet-b"],
    endpoint_public_access=True, endpoint_private_access=True, logging=["api", "audit", "authenticator"], tags={"ManagedBy": "trainium.eks"},
)


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def aws(monkeypatch):
    """Stubbed eks and iam clients handed to the module instead of real ones."""
    clients = {s: boto3.client(s, region_name="us-west-2", aws_access_key_id="a", aws_secret_access_key="b") for s in ("eks", "iam")}
    stubs = {s: Stubber(c) for s, c in clients.items()}
    monkeypatch.setattr(AnsibleAWSModule, "client", lambda self, service, *a, **k: clients[service])
    for stub in stubs.values():
        stub.activate()
    yield stubs
    for stub in stubs.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


def run(capsys, args, check_mode=False, diff=False):
    capsys.readouterr()
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            eks_cluster.main()
    return json.loads(capsys.readouterr().out)


def cluster(**changes):
    answer = copy.deepcopy(CLUSTER)
    answer.update(changes)
    return answer


def oidc_present(stubs):
    stubs["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": OIDC_ARN}]}, {})
    stubs["iam"].add_response("get_open_id_connect_provider", {"Url": ISSUER, "ClientIDList": ["sts.amazonaws.com"], "ThumbprintList": []},
                              {"OpenIDConnectProviderArn": OIDC_ARN})


def test_check_mode_on_an_empty_account_reports_the_create_without_calling_create(capsys, aws):
    aws["eks"].add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "trn-rehearsal"})
    result = run(capsys, WANTED, check_mode=True, diff=True)
    assert result["changed"] is True
    assert result["updates"] == ["create"]
    assert result["cluster"]["arn"] is None and result["cluster"]["version"] == "1.34"
    assert result["diff"]["before"] == {} and result["diff"]["after"]["subnet_ids"] == ["subnet-a", "subnet-b"]


def test_create_sends_the_request_and_makes_the_oidc_provider(capsys, aws):
    aws["eks"].add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "trn-rehearsal"})
    aws["eks"].add_response("create_cluster", {"cluster": cluster(status="CREATING")}, {
        "name": "trn-rehearsal", "roleArn": ROLE, "version": "1.34",
        "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"], "endpointPublicAccess": True, "endpointPrivateAccess": True},
        "logging": eks.logging_request(["api", "audit", "authenticator"]),
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True},
        "upgradePolicy": {"supportType": "STANDARD"},
        "tags": {"ManagedBy": "trainium.eks"},
    })
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="CREATING")}, {"name": "trn-rehearsal"})
    aws["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": []}, {})
    aws["iam"].add_response("create_open_id_connect_provider", {"OpenIDConnectProviderArn": OIDC_ARN}, {
        "Url": ISSUER, "ClientIDList": ["sts.amazonaws.com"],
        "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}, {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}],
    })
    result = run(capsys, WANTED)
    assert result["changed"] is True
    assert result["updates"] == ["create", "oidc_provider"]
    assert result["cluster"]["oidc_provider_arn"] == OIDC_ARN
    assert result["cluster"]["status"] == "CREATING"


def test_an_up_to_date_cluster_is_left_alone(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, WANTED)
    assert result["changed"] is False and result["updates"] == []
    assert result["cluster"]["cluster_security_group_id"] == "sg-c"
    assert result["cluster"]["oidc_provider_arn"] == OIDC_ARN


def test_check_mode_reports_updates_without_making_them(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, dict(WANTED, version="1.35", logging=["api"], tags={"team": "ml"}), check_mode=True, diff=True)
    assert result["changed"] is True
    assert result["updates"] == ["version", "logging", "tags"]
    assert result["cluster"]["version"] == "1.35"
    assert result["diff"]["before"]["logging"] == ["api", "audit", "authenticator"]
    assert result["diff"]["after"]["logging"] == ["api"]


def test_updates_run_one_after_another(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("update_cluster_version", {"update": {"id": "u-1", "status": "InProgress"}}, {"name": "trn-rehearsal", "version": "1.35"})
    # the next update waits for the first one
    aws["eks"].add_response("describe_update", {"update": {"id": "u-1", "status": "Successful"}}, {"name": "trn-rehearsal", "updateId": "u-1"})
    aws["eks"].add_response("update_cluster_config", {"update": {"id": "u-2", "status": "InProgress"}},
                            {"name": "trn-rehearsal", "resourcesVpcConfig": {"endpointPublicAccess": False, "endpointPrivateAccess": True}})
    aws["eks"].add_response("untag_resource", {}, {"resourceArn": ARN, "tagKeys": ["ManagedBy"]})
    aws["eks"].add_response("tag_resource", {}, {"resourceArn": ARN, "tags": {"team": "ml"}})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="UPDATING", version="1.35")}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, dict(WANTED, version="1.35", endpoint_public_access=False, tags={"team": "ml"}))
    assert result["changed"] is True
    assert result["updates"] == ["version", "endpoint_access", "tags"]


def test_immutable_differences_fail_before_any_change(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    result = run(capsys, dict(WANTED, subnets=["subnet-a", "subnet-z"], version="1.36"))
    assert result["failed"] is True
    assert "cannot change 2 setting(s)" in result["msg"]
    assert "subnets: cluster has ['subnet-a', 'subnet-b'], asked ['subnet-a', 'subnet-z']" in result["msg"]
    assert "version: got 1.36, the cluster runs 1.34; allowed: 1.34 or 1.35" in result["msg"]


def test_create_without_role_fails_naming_it(capsys, aws):
    aws["eks"].add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "trn-rehearsal"})
    args = dict(WANTED)
    del args["role_arn"]
    result = run(capsys, args)
    assert result["failed"] is True
    assert result["msg"] == "role_arn: required to create EKS cluster trn-rehearsal, which does not exist"


def test_bad_logging_type_is_refused_by_the_argument_spec(capsys, aws):
    result = run(capsys, dict(WANTED, logging=["api", "kubelet"]))
    assert result["failed"] is True
    assert "kubelet" in result["msg"]


def test_absent_deletes_provider_and_cluster(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    aws["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": OIDC_ARN}]}, {})
    aws["iam"].add_response("get_open_id_connect_provider", {"Url": ISSUER, "ClientIDList": [], "ThumbprintList": [],
                                                             "Tags": [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]},
                            {"OpenIDConnectProviderArn": OIDC_ARN})
    aws["iam"].add_response("delete_open_id_connect_provider", {}, {"OpenIDConnectProviderArn": OIDC_ARN})
    aws["eks"].add_response("delete_cluster", {"cluster": cluster(status="DELETING")}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="DELETING")}, {"name": "trn-rehearsal"})
    result = run(capsys, dict(CONNECTION, name="trn-rehearsal", state="absent"))
    assert result["changed"] is True
    assert result["updates"] == ["delete_oidc_provider", "delete"]
    assert result["exists"] is True and result["cluster"]["status"] == "DELETING"


def test_absent_leaves_the_issuers_provider_made_by_someone_else(capsys, aws):
    """The teardown policy deletes only OIDC providers tagged with the cluster: the issuer's own provider without the
    tag (eksctl, by hand) stays."""
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    aws["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": OIDC_ARN}]}, {})
    aws["iam"].add_response("get_open_id_connect_provider", {"Url": ISSUER, "ClientIDList": [], "ThumbprintList": [], "Tags": []},
                            {"OpenIDConnectProviderArn": OIDC_ARN})
    aws["eks"].add_response("delete_cluster", {"cluster": cluster(status="DELETING")}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="DELETING")}, {"name": "trn-rehearsal"})
    result = run(capsys, dict(CONNECTION, name="trn-rehearsal", state="absent"))
    assert result["updates"] == ["delete"]


def test_absent_when_only_a_tagged_provider_is_left(capsys, aws):
    aws["eks"].add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "trn-rehearsal"})
    aws["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": OIDC_ARN}]}, {})
    aws["iam"].add_response("get_open_id_connect_provider", {"Url": ISSUER, "ClientIDList": [], "ThumbprintList": [],
                                                             "Tags": [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]},
                            {"OpenIDConnectProviderArn": OIDC_ARN})
    aws["iam"].add_response("delete_open_id_connect_provider", {}, {"OpenIDConnectProviderArn": ANY})
    result = run(capsys, dict(CONNECTION, name="trn-rehearsal", state="absent"))
    assert result["changed"] is True and result["exists"] is False


def test_absent_on_an_empty_account_changes_nothing(capsys, aws):
    aws["eks"].add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "trn-rehearsal"})
    aws["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": []}, {})
    result = run(capsys, dict(CONNECTION, name="trn-rehearsal", state="absent"), check_mode=True)
    assert result["changed"] is False and result["exists"] is False and result["cluster"] == {}


def test_absent_waits_out_creating_without_wait_then_retries_in_use_delete(capsys, aws, monkeypatch):
    """A run interrupted during creation: teardown (wait=false) polls CREATING until ACTIVE, then deletes (in-use refusal retried)."""
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    monkeypatch.setattr(cloud, "time", types.SimpleNamespace(sleep=slept.append))
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="CREATING")}, {"name": "trn-rehearsal"})
    aws["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": []}, {})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="CREATING")}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="ACTIVE")}, {"name": "trn-rehearsal"})
    aws["eks"].add_client_error("delete_cluster", "ResourceInUseException", "Cluster trn-rehearsal is in CREATING state",
                                expected_params={"name": "trn-rehearsal"})
    aws["eks"].add_response("delete_cluster", {"cluster": cluster(status="DELETING")}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="DELETING")}, {"name": "trn-rehearsal"})
    result = run(capsys, dict(CONNECTION, name="trn-rehearsal", state="absent", wait=False))
    assert result["changed"] is True and result["updates"] == ["delete"]
    assert result["cluster"]["status"] == "DELETING"
    assert slept[0] == 15 and len(slept) == 2


def test_present_on_a_failed_cluster_fails_with_its_status(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(status="FAILED")}, {"name": "trn-rehearsal"})
    result = run(capsys, dict(CONNECTION, name="trn-rehearsal"))
    assert result["failed"] is True and "is FAILED" in result["msg"]
    assert result["cluster"]["status"] == "FAILED"


def standard_support(aws, version):
    aws["eks"].add_response("describe_cluster_versions", {"clusterVersions": [{"clusterVersion": version, "versionStatus": "STANDARD_SUPPORT"}]},
                            {"clusterVersions": [version], "includeAll": True})


def test_upgrade_policy_difference_is_reported_in_check_mode_and_updated_in_place(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(upgradePolicy={"supportType": "EXTENDED"})}, {"name": "trn-rehearsal"})
    standard_support(aws, cluster()["version"])
    oidc_present(aws)
    result = run(capsys, WANTED, check_mode=True, diff=True)
    assert result["changed"] is True and result["updates"] == ["upgrade_policy"]
    assert result["diff"]["before"]["upgrade_policy"] == "EXTENDED" and result["diff"]["after"]["upgrade_policy"] == "STANDARD"
    assert result["cluster"]["upgrade_policy"] == "STANDARD"

    aws["eks"].add_response("describe_cluster", {"cluster": cluster(upgradePolicy={"supportType": "EXTENDED"})}, {"name": "trn-rehearsal"})
    standard_support(aws, cluster()["version"])
    aws["eks"].add_response("update_cluster_config", {"update": {"id": "u-9", "status": "InProgress"}},
                            {"name": "trn-rehearsal", "upgradePolicy": {"supportType": "STANDARD"}})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(upgradePolicy={"supportType": "STANDARD"})}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, WANTED)
    assert result["changed"] is True and result["updates"] == ["upgrade_policy"]
    assert result["cluster"]["upgrade_policy"] == "STANDARD"


def test_a_deployer_without_describe_cluster_versions_gets_one_line_naming_the_permission(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(upgradePolicy={"supportType": "EXTENDED"})}, {"name": "trn-rehearsal"})
    aws["eks"].add_client_error("describe_cluster_versions", "AccessDeniedException", "not authorized to perform: eks:DescribeClusterVersions",
                                http_status_code=403)
    result = run(capsys, WANTED)
    assert result["failed"] is True and "describe EKS cluster versions (needs eks:DescribeClusterVersions)" in result["msg"], result["msg"]


def test_a_cluster_that_reports_no_upgrade_policy_is_left_alone(capsys, aws):
    """moto 5.2.5 answers DescribeCluster without upgradePolicy: no update, on any run."""
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, dict(WANTED, upgrade_policy="EXTENDED"))
    assert result["changed"] is False and result["updates"] == []
    assert result["cluster"]["upgrade_policy"] is None


# ------------------------------------------------------------ access entries

ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
ALICE = "arn:aws:iam::123456789012:role/alice-admins"
OLD = "arn:aws:iam::123456789012:user/old-admin"
CREATOR = "arn:aws:iam::123456789012:role/ci"


def api_cluster(*listed, **changes):
    """The cluster in API mode, its tag naming the principals ``listed`` by the last run."""
    tags = {"ManagedBy": "trainium.eks"}
    if listed:
        tags[eks.ADMIN_ENTRIES_TAG] = eks.admin_entries_tag_value(eks.principal_key(arn) for arn in listed)
    return cluster(accessConfig={"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}, tags=tags, **changes)


def policies_of(stubs, principal, policies):
    if policies is None:
        stubs["eks"].add_client_error("list_associated_access_policies", "ResourceNotFoundException",
                                      expected_params={"clusterName": "trn-rehearsal", "principalArn": principal})
    else:
        stubs["eks"].add_response("list_associated_access_policies", {"clusterName": "trn-rehearsal", "principalArn": principal,
                                                                      "associatedAccessPolicies": policies},
                                  {"clusterName": "trn-rehearsal", "principalArn": principal})


ADMIN_AT_CLUSTER = [{"policyArn": ADMIN_POLICY, "accessScope": {"type": "cluster", "namespaces": []}}]
WANTED_API = dict(WANTED, authentication_mode="API")


def test_a_no_op_with_an_administrator_reads_one_policy_list_and_nothing_else(capsys, aws):
    """The no-op budget of site.yml: one extra call per listed principal, none without principals."""
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster(ALICE)}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster(ALICE)}, {"name": "trn-rehearsal"})
    policies_of(aws, ALICE, ADMIN_AT_CLUSTER)
    oidc_present(aws)
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[ALICE]))
    assert result["changed"] is False and result["updates"] == []
    assert result["cluster"]["admin_principal_arns"] == [ALICE] and result["access_entries_pending"] is False

    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster()}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster()}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[]))
    assert result["changed"] is False and result["cluster"]["admin_principal_arns"] == []


def test_check_mode_reports_a_new_administrator_and_writes_nothing(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster()}, {"name": "trn-rehearsal"})
    policies_of(aws, ALICE, None)
    oidc_present(aws)
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[ALICE]), check_mode=True, diff=True)
    assert result["changed"] is True and result["updates"] == ["access_entries"]
    assert result["diff"]["before"]["admin_principal_arns"] == [] and result["diff"]["after"]["admin_principal_arns"] == [ALICE]
    assert result["cluster"]["tags"][eks.ADMIN_ENTRIES_TAG] == eks.principal_key(ALICE)


def test_a_new_administrator_gets_a_tagged_entry_and_the_policy(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster()}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster()}, {"name": "trn-rehearsal"})
    policies_of(aws, ALICE, None)
    aws["eks"].add_response("tag_resource", {}, {"resourceArn": ARN, "tags": {eks.ADMIN_ENTRIES_TAG: eks.principal_key(ALICE)}})
    aws["eks"].add_response("create_access_entry", {"accessEntry": {"principalArn": ALICE}}, {
        "clusterName": "trn-rehearsal", "principalArn": ALICE, "type": "STANDARD",
        "tags": {"ManagedBy": "trainium.eks", "trainium.eks/access-entry": "admin", "trainium.eks/cluster": "trn-rehearsal"},
    })
    aws["eks"].add_response("associate_access_policy", {}, {"clusterName": "trn-rehearsal", "principalArn": ALICE, "policyArn": ADMIN_POLICY,
                                                            "accessScope": {"type": "cluster"}})
    oidc_present(aws)
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[ALICE]), diff=True)
    assert result["changed"] is True and result["updates"] == ["access_entries"]
    assert result["diff"]["before"]["admin_principal_arns"] == [] and result["diff"]["after"]["admin_principal_arns"] == [ALICE]


def test_an_unlisted_administrator_loses_the_entry_it_was_given_and_others_keep_theirs(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster(OLD, CREATOR)}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster(OLD, CREATOR)}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("list_access_entries", {"accessEntries": [CREATOR, OLD]}, {"clusterName": "trn-rehearsal"})
    aws["eks"].add_response("describe_access_entry", {"accessEntry": {"principalArn": CREATOR, "tags": {}}},
                            {"clusterName": "trn-rehearsal", "principalArn": CREATOR})
    aws["eks"].add_response("describe_access_entry", {"accessEntry": {"principalArn": OLD, "tags": {"trainium.eks/access-entry": "admin"}}},
                            {"clusterName": "trn-rehearsal", "principalArn": OLD})
    aws["eks"].add_response("delete_access_entry", {}, {"clusterName": "trn-rehearsal", "principalArn": OLD})
    aws["eks"].add_response("untag_resource", {}, {"resourceArn": ARN, "tagKeys": [eks.ADMIN_ENTRIES_TAG]})
    oidc_present(aws)
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[]), diff=True)
    assert result["changed"] is True and result["updates"] == ["access_entries"]
    assert result["diff"]["before"]["admin_principal_arns"] == [OLD] and result["diff"]["after"]["admin_principal_arns"] == []
    assert eks.ADMIN_ENTRIES_TAG not in result["cluster"]["tags"]


def test_entries_wait_for_a_cluster_that_is_not_active_yet(capsys, aws):
    aws["eks"].add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "trn-rehearsal"})
    aws["eks"].add_response("create_cluster", {"cluster": api_cluster(ALICE, status="CREATING")}, {
        "name": "trn-rehearsal", "roleArn": ROLE, "version": "1.34",
        "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"], "endpointPublicAccess": True, "endpointPrivateAccess": True},
        "logging": eks.logging_request(["api", "audit", "authenticator"]),
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False},
        "upgradePolicy": {"supportType": "STANDARD"},
        "tags": {"ManagedBy": "trainium.eks", eks.ADMIN_ENTRIES_TAG: eks.principal_key(ALICE)},
    })
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster(ALICE, status="CREATING")}, {"name": "trn-rehearsal"})
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[ALICE], bootstrap_cluster_creator_admin=False, oidc_provider=False))
    assert result["changed"] is True and result["updates"] == ["create"]
    assert result["access_entries_pending"] is True and "admin_principal_arns" not in result["cluster"]


def test_check_mode_of_a_new_cluster_says_it_would_make_the_entries(capsys, aws):
    aws["eks"].add_client_error("describe_cluster", "ResourceNotFoundException", expected_params={"name": "trn-rehearsal"})
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[ALICE]), check_mode=True, diff=True)
    assert result["updates"] == ["create", "access_entries"]
    assert result["diff"]["after"]["admin_principal_arns"] == [ALICE]
    assert result["cluster"]["authentication_mode"] == "API"


def test_administrators_on_a_config_map_cluster_are_refused_before_any_change(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(accessConfig={"authenticationMode": "CONFIG_MAP"})},
                            {"name": "trn-rehearsal"})
    result = run(capsys, dict(WANTED, admin_principal_arns=[ALICE]))
    assert result["failed"] is True
    assert result["msg"].startswith("admin_principal_arns: got 1 principal(s) for EKS cluster trn-rehearsal, whose authentication mode is CONFIG_MAP")


def test_moving_to_api_and_adding_an_administrator_in_check_mode_reads_no_entry(capsys, aws):
    """CONFIG_MAP has no access entries (EKS refuses to list them): check mode plans them without asking."""
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(accessConfig={"authenticationMode": "CONFIG_MAP"})},
                            {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, dict(WANTED_API, admin_principal_arns=[ALICE]), check_mode=True)
    assert result["updates"] == ["authentication_mode", "access_entries"]


def test_a_step_back_in_authentication_mode_is_refused(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": api_cluster()}, {"name": "trn-rehearsal"})
    result = run(capsys, dict(WANTED, authentication_mode="API_AND_CONFIG_MAP"))
    assert result["failed"] is True
    assert "authentication_mode: cluster has API, asked API_AND_CONFIG_MAP; EKS only goes CONFIG_MAP -> API_AND_CONFIG_MAP -> API" in result["msg"]


def test_unset_authentication_mode_leaves_the_cluster_s_mode_alone(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": cluster()}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, WANTED)
    assert result["changed"] is False and result["cluster"]["authentication_mode"] == "API_AND_CONFIG_MAP"


def test_a_cluster_eks_upgraded_itself_is_adopted_with_a_warning_and_no_call(capsys, aws):
    """upgradePolicy STANDARD: EKS moved the cluster from 1.34 to 1.35 when standard support ended; the run asks for 1.34."""
    upgraded = cluster(version="1.35", upgradePolicy={"supportType": "STANDARD"})
    aws["eks"].add_response("describe_cluster", {"cluster": upgraded}, {"name": "trn-rehearsal"})
    aws["eks"].add_response("describe_cluster", {"cluster": upgraded}, {"name": "trn-rehearsal"})
    oidc_present(aws)
    result = run(capsys, dict(WANTED, upgrade_policy="STANDARD"))
    assert result.get("failed") is not True, result
    assert result["changed"] is False and result["updates"] == [] and result["cluster"]["version"] == "1.35"
    (warning,) = [w["event"]["msg"] if isinstance(w, dict) else w for w in result["warnings"]]
    assert "runs Kubernetes 1.35, one minor version above the 1.34 asked for" in warning and "upgradePolicy STANDARD" in warning


def test_a_cluster_above_the_inventory_under_extended_support_is_still_refused(capsys, aws):
    aws["eks"].add_response("describe_cluster", {"cluster": cluster(version="1.35", upgradePolicy={"supportType": "EXTENDED"})},
                            {"name": "trn-rehearsal"})
    result = run(capsys, dict(WANTED, upgrade_policy="EXTENDED"))
    assert result["failed"] is True and "EKS cannot downgrade" in result["msg"]
