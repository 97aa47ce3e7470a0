# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The secrets key's own policy (issue 27: alias-conditioned key deletion could be forged).

The key's lifecycle actions come from the key policy the eks_cluster role sets
at creation, for the principal that runs it and eks_cluster_kms_key_admins;
account_resources_info says the key is in place only when that policy is, as
amazon.aws.kms_key would judge it (a rerun stays changed=0).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_account as account
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks as eks
from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv

ACCOUNT = "111122223333"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
TEARDOWN = f"arn:aws:iam::{ACCOUNT}:role/trn-teardown"
LIFECYCLE = ["kms:CancelKeyDeletion", "kms:EnableKey", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:UntagResource",
             "kms:UpdateKeyDescription"]


@pytest.mark.parametrize("caller, admins, principals", [
    # An assumed-role session stands for its role (the session name goes).
    (f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/ci-run-42", [], [f"arn:aws:iam::{ACCOUNT}:role/deployer"]),
    # ... in its partition.
    (f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/deployer/s", [], [f"arn:aws-cn:iam::{ACCOUNT}:role/deployer"]),
    # A role with a path: the session ARN does not carry it; the listed ARN with the path is the caller's, once.
    (f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/s", [f"arn:aws:iam::{ACCOUNT}:role/ci/deploy/deployer", TEARDOWN],
     [f"arn:aws:iam::{ACCOUNT}:role/ci/deploy/deployer", TEARDOWN]),
    # Only a role of that name in that account: another account's role of the same name is an extra admin.
    (f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/s", ["arn:aws:iam::444455556666:role/deployer"],
     [f"arn:aws:iam::{ACCOUNT}:role/deployer", "arn:aws:iam::444455556666:role/deployer"]),
    # IAM users and roles as they are; sorted, each once.
    (f"arn:aws:iam::{ACCOUNT}:user/alice", [TEARDOWN, f"arn:aws:iam::{ACCOUNT}:user/alice"], [TEARDOWN, f"arn:aws:iam::{ACCOUNT}:user/alice"]),
])
def test_the_key_admins_are_the_caller_as_a_principal_and_the_listed_ones(caller, admins, principals):
    assert eks.key_admin_principals(caller, admins) == principals


def test_the_key_policy_keeps_iam_policies_working_and_gives_the_lifecycle_to_the_admins_only():
    policy = eks.secrets_key_policy(f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/s", [TEARDOWN])
    root, admins = policy["Statement"]
    # AWS's default key policy statement: the account's IAM policies decide (the reads, EnableKeyRotation, ...).
    assert root == {"Sid": "AccountIamPolicies", "Effect": "Allow", "Principal": {"AWS": ROOT}, "Action": "kms:*", "Resource": "*"}
    assert admins["Principal"] == {"AWS": [f"arn:aws:iam::{ACCOUNT}:role/deployer", TEARDOWN]}
    assert sorted(admins["Action"]) == LIFECYCLE and "Condition" not in admins
    # CreateKey's lockout safety check: the caller must be able to call PutKeyPolicy on the new key.
    assert "kms:PutKeyPolicy" in admins["Action"]
    # The same input, the same document: a rerun compares equal.
    assert json.dumps(policy) == json.dumps(eks.secrets_key_policy(f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/other", [TEARDOWN]))


@pytest.mark.parametrize("caller", ["", "deployer", "arn:aws:s3:::bucket", f"arn:aws:sts::{ACCOUNT}"])
def test_a_caller_arn_that_names_no_principal_is_refused(caller):
    with pytest.raises(ValueError, match=r"caller_arn: got .*; allowed: the Arn of sts:GetCallerIdentity"):
        eks.secrets_key_policy(caller)


@pytest.mark.parametrize("admins, line", [
    ([f"arn:aws:sts::{ACCOUNT}:assumed-role/trn-teardown/s"],
     f"eks_cluster_kms_key_admins[0]: got 'arn:aws:sts::{ACCOUNT}:assumed-role/trn-teardown/s' (str); allowed: the ARN of an IAM role or user"),
    ([ROOT], f"eks_cluster_kms_key_admins[0]: got '{ROOT}' (str); allowed: the ARN of an IAM role or user"),
    (["trn-teardown"], "eks_cluster_kms_key_admins[0]: got 'trn-teardown' (str); allowed: the ARN of an IAM role or user, such as "
                       "arn:aws:iam::111122223333:role/trn-teardown"),
    ([TEARDOWN, TEARDOWN], f"eks_cluster_kms_key_admins: got ['{TEARDOWN}', '{TEARDOWN}'] (list); allowed: each principal once"),
    ([f"arn:aws:iam::{ACCOUNT}:role/r{i}" for i in range(26)], "allowed: at most 25 principals"),
])
def test_bad_key_admins_are_refused_in_one_line_naming_the_variable(admins, line):
    found = [str(problem) for problem in tv.kms_key_admin_problems({"eks_cluster_kms_key_admins": admins})]
    assert len(found) == 1 and line in found[0] and "\n" not in found[0], found


def test_listed_key_admins_pass():
    assert list(tv.kms_key_admin_problems({"eks_cluster_kms_key_admins": [TEARDOWN, f"arn:aws:iam::{ACCOUNT}:role/ci/deployer"]})) == []


def _found(policy):
    return {"key": {"KeyState": "Enabled", "Description": "d"}, "rotation": True, "tags": {}, "policy": policy}


def test_the_key_is_in_place_only_with_its_key_policy():
    want = {"alias": "k", "description": "d", "enable_key_rotation": True, "tags": {},
            "policy": eks.secrets_key_policy(f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/s", [TEARDOWN])}
    # As KMS gives it back: another order of statements and principals, a lone principal as a string.
    stored = json.loads(json.dumps(want["policy"]))
    stored["Statement"].reverse()
    stored["Statement"][0]["Principal"]["AWS"].reverse()
    assert account.key_differences(_found(stored), want) == []
    # AWS's default key policy (a key made before 0.5.0), a missing admin, a policy that cannot be read: not in place.
    default = {"Version": "2012-10-17", "Statement": [want["policy"]["Statement"][0]]}
    assert account.key_differences(_found(default), want) == ["KMS key k: key policy differs"]
    fewer = eks.secrets_key_policy(f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/s")
    assert account.key_differences(_found(fewer), want) == ["KMS key k: key policy differs"]
    assert account.key_differences(_found(None), want) == ["KMS key k: key policy differs"]
    # Not asked: not compared (and not read).
    assert account.key_differences(_found(None), dict(want, policy=None)) == []
    # A key pending deletion is named by its state alone (its policy is read once it is enabled again).
    pending = dict(_found(None), key={"KeyState": "PendingDeletion", "Description": "d"}, rotation=None)
    assert account.key_differences(pending, want) == ["KMS key k is PendingDeletion, not Enabled"]


class _Kms:
    """A KMS client answering read_key's calls; get_key_policy raises ``refuse`` when given."""

    def __init__(self, state, policy, refuse=None):
        self.state, self.policy, self.refuse, self.calls = state, policy, refuse, []

    def can_paginate(self, operation):  # pylint: disable=unused-argument
        return False

    def list_aliases(self, **kwargs):
        return {"Aliases": [{"AliasName": "alias/k", "TargetKeyId": "key-1"}]}

    def describe_key(self, KeyId):  # pylint: disable=invalid-name
        return {"KeyMetadata": {"KeyId": KeyId, "Arn": "arn:aws:kms:r:1:key/key-1", "KeyState": self.state, "Description": "d"}}

    def get_key_rotation_status(self, KeyId):  # pylint: disable=invalid-name,unused-argument
        return {"KeyRotationEnabled": True}

    def list_resource_tags(self, **kwargs):
        return {"Tags": []}

    def get_key_policy(self, KeyId, PolicyName):  # pylint: disable=invalid-name
        self.calls.append((KeyId, PolicyName))
        if self.refuse:
            raise self.refuse
        return {"Policy": json.dumps(self.policy)}


def test_read_key_reads_the_default_policy_of_an_enabled_key_and_takes_a_refusal_as_unknown():
    import botocore.exceptions  # pylint: disable=import-outside-toplevel

    policy = eks.secrets_key_policy(f"arn:aws:iam::{ACCOUNT}:user/alice")
    kms = _Kms("Enabled", policy)
    assert account.read_key(kms, "k", policy=True)["policy"] == policy and kms.calls == [("key-1", "default")]
    assert account.read_key(_Kms("Enabled", policy), "k")["policy"] is None  # not asked
    pending = _Kms("PendingDeletion", policy)
    assert account.read_key(pending, "k", policy=True)["policy"] is None and pending.calls == []
    denied = botocore.exceptions.ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetKeyPolicy")
    assert account.read_key(_Kms("Enabled", policy, denied), "k", policy=True)["policy"] is None
