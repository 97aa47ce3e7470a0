# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The comparisons behind account_resources_info that moto cannot show: add-ons, placeholders, odd states.

tests/integration/test_account_resources_info.py checks the IAM, KMS and log
group comparisons against the upstream modules on moto server.
"""

from __future__ import annotations

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_account as account

ROLE_ARN = "arn:aws:iam::123456789012:role/trn-vpc-cni"
ADDON = {"cluster_name": "trn", "name": "vpc-cni", "configuration_values": {"enableNetworkPolicy": "false"},
         "tags": {"trainium.eks/cluster": "trn"}}
ACTIVE = {"clusterName": "trn", "addonName": "vpc-cni", "addonArn": "arn:aws:eks:us-west-2:123456789012:addon/trn/vpc-cni/1",
          "status": "ACTIVE", "addonVersion": "v1.19.0-eksbuild.1", "serviceAccountRoleArn": ROLE_ARN,
          "configurationValues": '{"enableNetworkPolicy": "false"}', "tags": {"trainium.eks/cluster": "trn"}}


def test_an_addon_as_eks_addon_would_leave_it_is_in_place():
    assert not account.addon_differences(ACTIVE, ADDON, ROLE_ARN)


@pytest.mark.parametrize("found, want, role_arn, sentence", [
    (None, ADDON, ROLE_ARN, "EKS add-on vpc-cni of cluster trn does not exist"),
    (dict(ACTIVE, status="DEGRADED"), ADDON, ROLE_ARN, "EKS add-on vpc-cni of cluster trn is DEGRADED, not ACTIVE"),
    (dict(ACTIVE, status="UPDATING"), ADDON, ROLE_ARN, "EKS add-on vpc-cni of cluster trn is UPDATING, not ACTIVE"),
    (ACTIVE, ADDON, "arn:aws:iam::123456789012:role/other", "EKS add-on vpc-cni of cluster trn: service account role differs"),
    (ACTIVE, dict(ADDON, configuration_values={"enableNetworkPolicy": "true"}), ROLE_ARN,
     "EKS add-on vpc-cni of cluster trn: configuration differs"),
    (ACTIVE, dict(ADDON, addon_version="v1.20.0-eksbuild.1"), ROLE_ARN, "EKS add-on vpc-cni of cluster trn: version differs"),
    (dict(ACTIVE, tags={"trainium.eks/cluster": "trn", "by": "hand"}), ADDON, ROLE_ARN, "EKS add-on vpc-cni of cluster trn: tags by differ"),
    (ACTIVE, dict(ADDON, configuration_values="{not json: ["), ROLE_ARN,
     "EKS add-on vpc-cni of cluster trn: configuration_values cannot be read (text that is neither JSON nor YAML)"),
])
def test_an_addon_difference_is_one_sentence(found, want, role_arn, sentence):
    assert account.addon_differences(found, want, role_arn) == [sentence]


def test_a_change_the_planner_sees_is_a_difference_even_when_no_field_names_it(monkeypatch):
    monkeypatch.setattr(account, "ADDON_FIELDS", {})
    assert account.addon_differences(ACTIVE, dict(ADDON, addon_version="v1.20.0-eksbuild.1"), ROLE_ARN) == [
        "EKS add-on vpc-cni of cluster trn differs from what eks_addon would make of it"]


def test_placeholders_are_filled_in_or_the_document_is_unusable():
    plain = {"Statement": [{"Principal": {"Service": "eks.amazonaws.com"}}]}
    assert account.fill_oidc(plain, None, None) is plain
    irsa = {"Statement": [{"Principal": {"Federated": account.OIDC_PROVIDER_ARN},
                           "Condition": {"StringEquals": {account.OIDC_HOST + ":sub": "system:serviceaccount:kube-system:aws-node"}}}]}
    assert account.fill_oidc(irsa, None, None) is None
    filled = account.fill_oidc(irsa, "arn:aws:iam::1:oidc-provider/oidc.example/id/X", "oidc.example/id/X")
    assert filled == {"Statement": [{"Principal": {"Federated": "arn:aws:iam::1:oidc-provider/oidc.example/id/X"},
                                     "Condition": {"StringEquals": {"oidc.example/id/X:sub": "system:serviceaccount:kube-system:aws-node"}}}]}


def test_a_trust_policy_is_compared_strictly_but_not_by_key_order():
    found = {"role": {"AssumeRolePolicyDocument": {"Statement": [{"Effect": "Allow", "Action": ["a", "b"]}], "Version": "2012-10-17"},
                      "Tags": []}, "managed_policies": []}
    same = {"Version": "2012-10-17", "Statement": [{"Action": ["a", "b"], "Effect": "Allow"}]}
    reordered = {"Version": "2012-10-17", "Statement": [{"Action": ["b", "a"], "Effect": "Allow"}]}
    want = {"name": "r", "assume_role_policy_document": same}
    assert account.role_differences(found, want, same) == []
    # A reordered list may mean the same to IAM; reading it as a difference only costs the run an iam_role call.
    assert account.role_differences(found, want, reordered) == ["IAM role r: trust policy differs"]


def test_a_key_pending_deletion_is_named_by_its_state_alone():
    found = {"key": {"KeyState": "PendingDeletion", "Description": "d"}, "rotation": None, "tags": {}}
    assert account.key_differences(found, {"alias": "k", "enable_key_rotation": True, "tags": {}}) == ["KMS key k is PendingDeletion, not Enabled"]


class _Clients:
    """Fake boto3 clients: each service answers from a dict of operation -> answer."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, service):
        clients = self

        class Client:
            def __getattr__(self, operation):
                def call(**kwargs):
                    clients.calls.append((service, operation, kwargs))
                    return clients.answers[(service, operation)]
                return call

            @staticmethod
            def can_paginate(operation):  # pylint: disable=unused-argument
                return True

            def get_paginator(self, operation):
                answer = clients.answers[(service, operation)]

                class Pages:
                    def paginate(self, **kwargs):
                        clients.calls.append((service, operation, kwargs))
                        return type("Result", (), {"build_full_result": lambda self: answer})()
                return Pages()

        return Client()


def test_an_addon_waits_for_its_service_account_role():
    """While the role the add-on names is not in place, neither is the add-on (the role task runs first)."""
    role = {"name": "trn-vpc-cni", "assume_role_policy_document": {"Version": "2012-10-17"}, "tags": {"x": "1"}}
    clients = _Clients({
        ("iam", "get_role"): {"Role": {"Arn": ROLE_ARN, "AssumeRolePolicyDocument": {"Version": "2012-10-17"}, "Tags": []}},
        ("iam", "list_attached_role_policies"): {"AttachedPolicies": []},
        ("eks", "describe_addon"): {"addon": ACTIVE},
    })
    result = account.read_account_resources(clients, {"iam_roles": [role],
                                                      "eks_addons": [dict(ADDON, service_account_role="trn-vpc-cni")]})
    assert result["differences"] == ["IAM role trn-vpc-cni: tags x differ",
                                     "EKS add-on vpc-cni of cluster trn: its service account role trn-vpc-cni is not in place"]
    assert result["eks_addons"]["vpc-cni"] == {"arn": ACTIVE["addonArn"], "status": "ACTIVE", "in_place": False}
    assert result["iam_roles"]["trn-vpc-cni"] == {"arn": ROLE_ARN, "in_place": False}

    role["tags"] = {}
    result = account.read_account_resources(clients, {"iam_roles": [role],
                                                      "eks_addons": [dict(ADDON, service_account_role="trn-vpc-cni")]})
    assert (result["in_place"], result["differences"]) == (True, [])
    assert ("eks", "describe_addon", {"clusterName": "trn", "addonName": "vpc-cni"}) in clients.calls
