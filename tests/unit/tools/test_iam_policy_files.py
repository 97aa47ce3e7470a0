# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator's IAM policies (docs/iam/*.json, docs/iam-policy.md) as files, and against the code.

The recorded calls of real runs are checked by
tests/integration/test_site_end_to_end.py; here: the files are policies IAM
takes, and every boto3 operation of the modules the playbooks and roles run -
the paths the rehearsal does not take too - is allowed by one of them.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import pathlib
import re

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "iam" / "iam_policy.py"
_SPEC = importlib.util.spec_from_file_location("iam_policy", _PATH)
iam_policy = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(iam_policy)

VALUES = {"ACCOUNT_ID": "111122223333", "REGION": "eu-north-1", "CLUSTER_NAME": "trn-prod", "REPOSITORY_NAME": "bert",
          "ADDON_REGISTRY_ACCOUNT": "602401143452"}
FILES = sorted(path for stage in iam_policy.STAGES for path in iam_policy.policy_paths(stage))
# Keys with a set of values (a KMS key's aliases, a request's tag keys): only they take ForAnyValue / ForAllValues.
MULTIVALUED_KEYS = {"kms:ResourceAliases", "aws:TagKeys"}


def test_every_file_of_docs_iam_belongs_to_a_stage_and_every_stage_has_one():
    names = sorted(path.name for path in iam_policy.POLICY_DIR.iterdir())
    assert all(iam_policy.stage_of(name) for name in names), names
    assert all(iam_policy.policy_paths(stage) for stage in iam_policy.STAGES)
    assert [path.name for path in iam_policy.policy_paths("infrastructure")] == [
        "trainium-eks-infrastructure-cluster.json", "trainium-eks-infrastructure-network.json",
        "trainium-eks-infrastructure-resources.json"]


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_policy_file_is_an_iam_policy_that_fits_one_managed_policy_when_filled_in(path):
    text = path.read_text(encoding="utf-8")
    assert iam_policy.policy_chars(text) <= iam_policy.MAX_RENDERED_CHARS
    for partition, region, rendered in iam_policy.worst_case_renderings(text):
        size = iam_policy.policy_chars(rendered)
        assert size <= iam_policy.MAX_RENDERED_CHARS, (
            f"{path.name} filled in for {partition} / {region} with a {iam_policy.MAX_CLUSTER_NAME_CHARS}-character cluster name "
            f"and a {iam_policy.MAX_REPOSITORY_NAME_CHARS}-character repository name: {size} characters, over "
            f"{iam_policy.MAX_RENDERED_CHARS} (IAM's {iam_policy.MANAGED_POLICY_MAX_CHARS} less {iam_policy.SIZE_MARGIN:.0%}); "
            "move statements to another file of the stage")
    policy = json.loads(text)
    assert set(policy) == {"Version", "Statement"} and policy["Version"] == "2012-10-17"
    for statement in policy["Statement"]:
        assert set(statement) <= {"Sid", "Effect", "Action", "Resource", "Condition"}, statement["Sid"]
        assert re.fullmatch(r"[A-Za-z0-9]+", statement["Sid"]) and statement["Effect"] == "Allow", statement["Sid"]
        actions = statement["Action"]
        assert isinstance(actions, list) and actions == sorted(set(actions)), f"{statement['Sid']}: sort the actions, once each"
        assert len({action.split(":")[0] for action in actions}) == 1, f"{statement['Sid']}: one service per statement"
        for action in actions:
            assert action in iam_policy.NON_API_ACTIONS or iam_policy.model_has_operation(action), f"{action}: no such operation"
        for operator, keys in statement.get("Condition", {}).items():
            assert operator in iam_policy.OPERATORS, f"{statement['Sid']}: the checks do not evaluate {operator}"
            for key in keys:
                assert iam_policy.key_kind(key), f"{statement['Sid']}: the checks do not know the condition key {key}"
                assert (":" in operator) is (key in MULTIVALUED_KEYS), f"{statement['Sid']}: {operator} on {key}"


@pytest.mark.parametrize("stage", iam_policy.STAGES)
def test_the_files_of_a_stage_have_distinct_sids(stage):
    sids = [statement["Sid"] for statement in iam_policy.load_policy(stage)["Statement"]]
    assert len(sids) == len(set(sids)), sids


def test_the_worst_case_values_are_the_longest_the_collection_accepts():
    from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td  # pylint: disable=import-outside-toplevel
    from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv  # pylint: disable=import-outside-toplevel

    longest = iam_policy.MAX_CLUSTER_NAME_CHARS
    assert td.CLUSTER_NAME_RE.match("t" * longest) and not td.CLUSTER_NAME_RE.match("t" * (longest + 1))
    longest = iam_policy.MAX_REPOSITORY_NAME_CHARS
    assert not list(tv.ecr_problems({"ecr_repository_name": "r" * longest, "ecr_encryption_type": "AES256",
                                     "ecr_untagged_expire_days": 1, "ecr_keep_images": 1}))
    assert list(tv.ecr_problems({"ecr_repository_name": "r" * (longest + 1), "ecr_encryption_type": "AES256",
                                 "ecr_untagged_expire_days": 1, "ecr_keep_images": 1}))
    regions = iam_policy.longest_regions()
    assert set(regions) == set(iam_policy.PARTITIONS) and len(regions["aws"]) >= len("ap-southeast-4")


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_placeholders_are_the_documented_ones_and_render_to_valid_arns(path):
    text = path.read_text(encoding="utf-8")
    assert set(re.findall(r"\b[A-Z]{2,}(?:_[A-Z]+)*\b", text)) <= set(iam_policy.PLACEHOLDERS)
    rendered = iam_policy.load_policy_file(path, VALUES)
    for statement in rendered["Statement"]:
        for arn in iam_policy._as_list(statement["Resource"]):  # pylint: disable=protected-access
            assert arn == "*" or re.fullmatch(r"arn:aws:[a-z0-9-]+:(eu-north-1)?:(111122223333|602401143452)?:\S+", arn), arn
    doc = (iam_policy.ROOT / "docs" / "iam-policy.md").read_text(encoding="utf-8")
    assert path.name in doc
    for name in iam_policy.PLACEHOLDERS:
        assert name in doc


@pytest.mark.parametrize("stage", iam_policy.STAGES)
def test_the_roles_of_the_cluster_are_named_by_the_stages_that_make_or_remove_them(stage):
    rendered = json.dumps(iam_policy.load_policy(stage, VALUES))
    assert ("arn:aws:iam::111122223333:role/trn-prod-cluster" in rendered) is (stage not in ("preflight", "training", "status"))


def test_every_aws_operation_in_plugins_is_allowed_by_a_policy():
    policies = [iam_policy.load_policy(stage, VALUES) for stage in iam_policy.STAGES]
    found = iam_policy.static_actions()
    # The reader finds the calls it should: one of each kind of spelling.
    assert "eks:CreateCluster" in found  # client.create_cluster(...)
    assert "eks:UpdateClusterConfig" in found  # getattr(client, "update_cluster_config")
    assert "ec2:DescribeVpcs" in found  # a paginator of vpc_network_info
    assert "ecr:TagResource" in found and "ec2:CreateTags" in found  # the tag calls of trainium_common
    assert "servicequotas:GetServiceQuota" in found
    assert "logs:TagResource" not in found and "servicequotas:TagResource" not in found
    missing = {action: files for action, files in found.items()
               if action not in iam_policy.NEEDS_NO_PERMISSION and not any(iam_policy.allows_action(p, action) for p in policies)}
    assert not missing, f"boto3 calls no policy of docs/iam/ allows: {missing}"


def test_not_recorded_entries_name_actions_of_their_stage_with_a_reason():
    for stage, entries in iam_policy.NOT_RECORDED.items():
        actions = iam_policy.policy_actions(iam_policy.load_policy(stage))
        for action, reason in entries.items():
            assert action in actions, f"{stage}: {action} is not in {iam_policy.policy_names(stage)}; drop its entry"
            assert len(reason) > 20


KEY = "arn:aws:kms:r:1:key/"
FS = "arn:aws:fsx:r:1:file-system/"
POLICY = {"Version": "2012-10-17", "Statement": [
    {"Sid": "Read", "Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
    {"Sid": "Roles", "Effect": "Allow", "Action": ["iam:GetRole"], "Resource": ["arn:aws:iam::1:role/c-cluster", "arn:aws:iam::1:role/c-n?de"]},
    {"Sid": "Attach", "Effect": "Allow", "Action": ["iam:AttachRolePolicy"], "Resource": "arn:aws:iam::1:role/*",
     "Condition": {"ArnEquals": {"iam:PolicyARN": ["arn:aws:iam::aws:policy/A"]}}},
    {"Sid": "Pass", "Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "*",
     "Condition": {"StringEquals": {"iam:PassedToService": "eks.amazonaws.com"}}},
    {"Sid": "Odd", "Effect": "Allow", "Action": ["iam:DeleteRole"], "Resource": "*", "Condition": {"StringEquals": {"aws:SourceIp": "x"}}},
    {"Sid": "Key", "Effect": "Allow", "Action": ["kms:ScheduleKeyDeletion"], "Resource": KEY + "*",
     "Condition": {"ForAnyValue:StringEquals": {"kms:ResourceAliases": "alias/c-eks-secrets"}}},
    {"Sid": "OnlyAliases", "Effect": "Allow", "Action": ["kms:EnableKey"], "Resource": KEY + "*",
     "Condition": {"ForAllValues:StringLike": {"kms:ResourceAliases": "alias/c-*"}}},
    {"Sid": "Grant", "Effect": "Allow", "Action": ["kms:CreateGrant"], "Resource": KEY + "*",
     "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}, "StringEquals": {"kms:ViaService": "eks.r.amazonaws.com"}}},
    {"Sid": "Own", "Effect": "Allow", "Action": ["fsx:DeleteFileSystem", "fsx:TagResource"], "Resource": FS + "*",
     "Condition": {"StringEquals": {"aws:ResourceTag/trainium.eks/cluster": "c"}}},
    {"Sid": "Create", "Effect": "Allow", "Action": ["fsx:CreateFileSystem", "fsx:TagResource"], "Resource": FS + "*",
     "Condition": {"StringEquals": {"aws:RequestTag/trainium.eks/cluster": "c"}}},
]}
OURS = {"kms:ResourceAliases": ["alias/c-eks-secrets", "alias/other"]}


@pytest.mark.parametrize("action, resources, context, resource_context, allowed", [
    ("ec2:DescribeVpcs", [], {}, {}, True),
    ("EC2:describevpcs", [], {}, {}, True),  # actions are case-insensitive
    ("ec2:CreateVpc", [], {}, {}, False),
    ("iam:GetRole", ["arn:aws:iam::1:role/c-cluster"], {}, {}, True),
    ("iam:GetRole", ["arn:aws:iam::1:role/c-node"], {}, {}, True),
    ("iam:GetRole", ["arn:aws:iam::1:role/c-cluster", "arn:aws:iam::1:role/admin"], {}, {}, False),  # every resource counts
    ("iam:GetRole", ["arn:aws:iam::1:role/C-CLUSTER"], {}, {}, False),  # resources are not
    ("iam:AttachRolePolicy", ["arn:aws:iam::1:role/c-node"], {"iam:PolicyARN": "arn:aws:iam::aws:policy/A"}, {}, True),
    ("iam:AttachRolePolicy", ["arn:aws:iam::1:role/c-node"], {"iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess"}, {}, False),
    # A key AWS sets only when a service acts in the principal's name: what EKS does holds, a request of the collection never.
    ("iam:PassRole", [], {"iam:PassedToService": "eks.amazonaws.com"}, {}, True),
    ("iam:PassRole", [], {}, {}, False),
    ("kms:CreateGrant", [KEY + "k"], {"kms:GrantIsForAWSResource": True, "kms:ViaService": "eks.r.amazonaws.com"}, {}, True),
    ("kms:CreateGrant", [KEY + "k"], {"kms:GrantIsForAWSResource": True, "kms:ViaService": "ec2.r.amazonaws.com"}, {}, False),
    ("kms:CreateGrant", [KEY + "k"], {"kms:GrantIsForAWSResource": True}, {}, False),
    ("iam:DeleteRole", [], {}, {}, False),  # any other missing key does not hold either
    # kms:ResourceAliases: ForAnyValue wants one alias of the policy's; none, or no alias at all, is no.
    ("kms:ScheduleKeyDeletion", [KEY + "k"], {}, {KEY + "k": OURS}, True),
    ("kms:ScheduleKeyDeletion", [KEY + "k"], {}, {KEY + "k": {"kms:ResourceAliases": ["alias/other"]}}, False),
    ("kms:ScheduleKeyDeletion", [KEY + "k"], {}, {KEY + "k": {"kms:ResourceAliases": []}}, False),
    ("kms:ScheduleKeyDeletion", [KEY + "k"], {}, {}, False),
    ("kms:ScheduleKeyDeletion", [KEY + "k"], {}, {KEY + "k": {iam_policy.AWS_ONLY: True}}, True),  # the record cannot tell
    ("kms:ScheduleKeyDeletion", [KEY + "k"], {"kms:ResourceAliases": ["alias/c-eks-secrets"]}, {KEY + "k": {}}, True),
    # ForAllValues: every alias must match, and a key without aliases passes.
    ("kms:EnableKey", [KEY + "k"], {}, {KEY + "k": {"kms:ResourceAliases": ["alias/c-1", "alias/c-2"]}}, True),
    ("kms:EnableKey", [KEY + "k"], {}, {KEY + "k": OURS}, False),
    ("kms:EnableKey", [KEY + "k"], {}, {KEY + "k": {"kms:ResourceAliases": []}}, True),
    # aws:ResourceTag from the resource, aws:RequestTag from the request.
    ("fsx:DeleteFileSystem", [FS + "fs-1"], {}, {FS + "fs-1": {"aws:ResourceTag/trainium.eks/cluster": "c"}}, True),
    ("fsx:DeleteFileSystem", [FS + "fs-1"], {}, {FS + "fs-1": {"aws:ResourceTag/trainium.eks/cluster": "other"}}, False),
    ("fsx:DeleteFileSystem", [FS + "fs-1"], {"aws:RequestTag/trainium.eks/cluster": "c"}, {FS + "fs-1": {}}, False),
    ("fsx:CreateFileSystem", [FS + "(new)"], {"aws:RequestTag/trainium.eks/cluster": "c"}, {FS + "(new)": {}}, True),
    ("fsx:CreateFileSystem", [FS + "(new)"], {"aws:RequestTag/Name": "c"}, {FS + "(new)": {}}, False),
    ("fsx:TagResource", [FS + "fs-1"], {"aws:RequestTag/team": "a"}, {FS + "fs-1": {"aws:ResourceTag/trainium.eks/cluster": "c"}}, True),
    ("fsx:TagResource", [FS + "fs-1"], {"aws:RequestTag/team": "a"}, {FS + "fs-1": {"aws:ResourceTag/team": "c"}}, False),
])
def test_allows_evaluates_actions_resources_and_conditions_like_iam(action, resources, context, resource_context, allowed):
    assert iam_policy.allows(POLICY, action, resources, context, resource_context) is allowed


def test_the_static_check_counts_request_and_resource_conditions_as_met_but_not_aws_set_keys():
    assert iam_policy.allows_action(POLICY, "kms:ScheduleKeyDeletion") and iam_policy.allows_action(POLICY, "fsx:CreateFileSystem")
    assert not iam_policy.allows_action(POLICY, "kms:CreateGrant") and not iam_policy.allows_action(POLICY, "iam:PassRole")
    assert not iam_policy.allows_action(POLICY, "kms:DisableKey")


def test_a_record_is_split_into_stages_by_play_and_checked(tmp_path):
    record = tmp_path / "record.jsonl"
    lines = [
        {"play": "Validate - every variable"},
        {"play": "Preflight - zones"}, {"task": "capacity"},
        {"signing_name": "ec2", "endpoint_prefix": "ec2", "operation": "DescribeInstanceTypes", "params": {}},
        {"signing_name": "sts", "endpoint_prefix": "sts", "operation": "GetCallerIdentity", "params": {}},
        {"play": "Infrastructure - network"}, {"task": "role"},
        {"signing_name": "iam", "endpoint_prefix": "iam", "operation": "GetRole", "params": {"RoleName": "trn-prod-admin"}},
        {"signing_name": "iam", "endpoint_prefix": "iam", "operation": "AttachRolePolicy",
         "params": {"RoleName": "trn-prod-node", "PolicyArn": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"}},
        {"play": "Summary - costs"},
        {"signing_name": "ec2", "endpoint_prefix": "ec2", "operation": "DescribeVpcs", "params": {}},
        {"play": "Teardown - all"},
        {"signing_name": "eks", "endpoint_prefix": "eks", "operation": "CreateCluster", "params": {"name": "trn-prod"}},
    ]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    problems, _report = iam_policy.problems_of_record(record, VALUES)
    assert len(problems) == 3, problems
    assert any("iam:GetRole" in p and "role/trn-prod-admin" in p for p in problems)
    assert any("ec2:DescribeVpcs in play 'Summary - costs'" in p for p in problems)
    assert any("eks:CreateCluster" in p and "teardown" in p for p in problems)
    problems, _report = iam_policy.problems_of_record(record, VALUES, unused=True)
    assert any("allows ec2:DescribeAvailabilityZones, which no preflight run requested" in p for p in problems)
    assert not any("ec2:DescribeRegions" in p for p in problems)  # NOT_RECORDED


def _kms(operation, params=None, response=None):
    line = {"signing_name": "kms", "endpoint_prefix": "kms", "operation": operation, "params": params or {}}
    return {**line, "response": response} if response is not None else line


def _fsx(operation, params=None, response=None):
    line = {"signing_name": "fsx", "endpoint_prefix": "fsx", "operation": operation, "params": params or {}}
    return {**line, "response": response} if response is not None else line


KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_KEY_ID = "0000abcd-12ab-34cd-56ef-1234567890ab"
KEY_ARN = f"arn:aws:kms:eu-north-1:111122223333:key/{KEY_ID}"
OTHER_KEY_ARN = f"arn:aws:kms:eu-north-1:111122223333:key/{OTHER_KEY_ID}"
CLUSTER_TAG = {"Key": "trainium.eks/cluster", "Value": "trn-prod"}


CALLER = "arn:aws:sts::111122223333:assumed-role/deployer/ci-run"


def _sts_caller(arn=CALLER):
    return {"signing_name": "sts", "endpoint_prefix": "sts", "operation": "GetCallerIdentity", "params": {}, "response": {"Arn": arn}}


def _key_policy(*principals):
    """The policy the eks_cluster role gives the secrets key (trainium_eks.secrets_key_policy), naming ``principals``."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "AccountIamPolicies", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "kms:*",
         "Resource": "*"},
        {"Sid": "TrainiumEksKeyAdministrators", "Effect": "Allow", "Principal": {"AWS": list(principals)},
         "Action": list(iam_policy.KEY_POLICY_ACTIONS), "Resource": "*"}]})


def test_a_record_tells_the_aliases_of_keys_and_the_tags_of_file_systems(tmp_path):
    record = tmp_path / "record.jsonl"
    policy = _key_policy("arn:aws:iam::111122223333:role/ci/deployer")  # the caller's role, with its path
    ours = {"trainium.eks/cluster": "trn-prod"}
    lines = [
        {"play": "Infrastructure - cluster"}, {"task": "Read the principal and the account the cluster goes to"},
        _sts_caller(),
        {"task": "Create the KMS key that encrypts Kubernetes secrets"},
        _kms("CreateKey", {"Tags": [{"TagKey": "trainium.eks/cluster", "TagValue": "trn-prod"}], "Policy": policy}),
        _kms("CreateKey", {"Policy": policy}, response={"KeyId": KEY_ID}),
        _kms("CreateAlias", {"AliasName": "alias/trn-prod-eks-secrets", "TargetKeyId": KEY_ARN}),
        # the key policy set in CreateKey allows it at once; no alias needed
        _kms("UpdateKeyDescription", {"KeyId": KEY_ARN}),
        # another team's key (AWS's default key policy), given the cluster's alias: nothing of its lifecycle follows
        _kms("CreateKey", response={"KeyId": OTHER_KEY_ID}),
        {"task": "Create the FSx for Lustre file system"},
        _fsx("CreateFileSystem", {"Tags": [CLUSTER_TAG, {"Key": "Name", "Value": "trn-prod-data"}]}),
        _fsx("CreateFileSystem", response={"Tags": {"fs-1": dict(ours, Name="trn-prod-data"), "fs-2": dict(ours)}}),
        _fsx("CreateFileSystem", {"Tags": [{"Key": "Name", "Value": "not-tagged-for-the-cluster"}]}),
        _fsx("UpdateFileSystem", {"FileSystemId": "fs-1"}),
        _fsx("TagResource", {"ResourceARN": "arn:aws:fsx:eu-north-1:111122223333:file-system/fs-1", "Tags": [{"Key": "team", "Value": "a"}]}),
        _fsx("UntagResource", {"ResourceARN": "arn:aws:fsx:eu-north-1:111122223333:file-system/fs-1", "TagKeys": ["team"]}),
        # the ownership tag of an own file system is neither handed to another deployment nor removed
        _fsx("TagResource", {"ResourceARN": "arn:aws:fsx:eu-north-1:111122223333:file-system/fs-2",
                             "Tags": [{"Key": "trainium.eks/cluster", "Value": "someone-else"}]}),
        _fsx("UntagResource", {"ResourceARN": "arn:aws:fsx:eu-north-1:111122223333:file-system/fs-2", "TagKeys": ["trainium.eks/cluster"]}),
        _fsx("UpdateFileSystem", {"FileSystemId": "fs-0"}),  # made before the record: AWS checks its tag
        {"play": "Teardown - all"}, {"task": "Schedule the deletion of the secrets encryption key"},
        _kms("DescribeKey", {"KeyId": "alias/trn-prod-eks-secrets"}),
        _kms("ScheduleKeyDeletion", {"KeyId": KEY_ARN}),
        _kms("ListAliases", response={"Aliases": [["alias/trn-prod-eks-secrets", OTHER_KEY_ID]]}),
        _kms("ScheduleKeyDeletion", {"KeyId": OTHER_KEY_ARN}),
        _kms("ScheduleKeyDeletion", {"KeyId": "5555abcd-12ab-34cd-56ef-1234567890ab"}),  # never seen: AWS checks its key policy
        {"task": "Delete the FSx for Lustre file system"},
        _fsx("DescribeFileSystems", response={"Tags": {"fs-9": {"trainium.eks/cluster": "someone-else"}}}),
        _fsx("DeleteFileSystem", {"FileSystemId": "fs-1"}),
        _fsx("DeleteFileSystem", {"FileSystemId": "fs-9"}),
    ]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    calls = iam_policy.read_record(record, "111122223333", "eu-north-1")
    implied = [call for call in calls if call["implied_by"]]
    assert [(call["action"], call["implied_by"]) for call in implied] == [
        ("kms:TagResource", "kms:CreateKey"), ("fsx:TagResource", "fsx:CreateFileSystem"), ("fsx:TagResource", "fsx:CreateFileSystem")]
    assert [call["resources"] for call in calls if call["action"] == "kms:DescribeKey"] == [[KEY_ARN]]  # the alias names the key
    problems, report = iam_policy.problems_of_record(record, VALUES)
    assert sorted(p.split(" in play")[0] + (" " + p.split(" on ")[1].split(" ")[0] if " on " in p else "") for p in problems) == [
        "fsx:CreateFileSystem arn:aws:fsx:eu-north-1:111122223333:file-system/(new)",  # without the cluster's tag
        "fsx:DeleteFileSystem arn:aws:fsx:eu-north-1:111122223333:file-system/fs-9",  # another cluster's
        "fsx:TagResource (the tags of fsx:CreateFileSystem) arn:aws:fsx:eu-north-1:111122223333:file-system/(new)",
        "fsx:TagResource arn:aws:fsx:eu-north-1:111122223333:file-system/fs-2",  # the ownership tag, changed
        "fsx:UntagResource arn:aws:fsx:eu-north-1:111122223333:file-system/fs-2",  # the ownership tag, removed
        f"kms:ScheduleKeyDeletion {OTHER_KEY_ARN}",  # its key policy is AWS's default, whatever alias it carries
    ], problems
    assert len(report) == 2, report
    assert any("fsx:UpdateFileSystem" in line and "fs-0" in line for line in report)
    assert any("kms:ScheduleKeyDeletion" in line and "5555abcd" in line for line in report)


@pytest.mark.parametrize("caller, principals, allowed", [
    (CALLER, ["arn:aws:iam::111122223333:role/deployer"], True),  # a session stands for its role
    (CALLER, ["arn:aws:iam::111122223333:role/ci/deployer"], True),  # ... with any path
    (CALLER, ["arn:aws:iam::111122223333:role/deployer-2", "arn:aws:iam::444455556666:role/deployer"], False),
    ("arn:aws:iam::111122223333:user/alice", ["arn:aws:iam::111122223333:user/alice"], True),
    ("arn:aws:iam::111122223333:user/alice", ["arn:aws:iam::111122223333:user/bob"], False),
    # the account-root statement alone hands the decision to IAM, whose policies no longer grant it
    ("arn:aws:iam::111122223333:user/alice", [], False),
])
def test_the_key_lifecycle_is_allowed_by_the_key_policy_for_the_principals_it_names(tmp_path, caller, principals, allowed):
    record = tmp_path / "record.jsonl"
    lines = [
        {"play": "Infrastructure - cluster"}, {"task": "caller"}, _sts_caller(caller), {"task": "key"},
        _kms("CreateKey", {"Policy": _key_policy(*principals)}, response={"KeyId": KEY_ID}),
        {"task": "later"}, _kms("CancelKeyDeletion", {"KeyId": KEY_ARN}), _kms("EnableKey", {"KeyId": KEY_ARN}),
        _kms("PutKeyPolicy", {"KeyId": KEY_ARN, "Policy": _key_policy(*principals)}),
        {"play": "Teardown - all"}, {"task": "key"}, _kms("ScheduleKeyDeletion", {"KeyId": KEY_ARN}),
    ]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    problems, report = iam_policy.problems_of_record(record, VALUES)
    assert (problems == []) is allowed, problems
    assert len(problems) == (0 if allowed else 4) and report == []


def test_without_the_caller_in_the_record_the_key_policy_is_left_to_aws(tmp_path):
    record = tmp_path / "record.jsonl"
    lines = [{"play": "Teardown - all"}, {"task": "key"},
             _kms("CreateKey", {"Policy": _key_policy("arn:aws:iam::111122223333:role/deployer")}, response={"KeyId": KEY_ID}),
             _kms("ScheduleKeyDeletion", {"KeyId": KEY_ARN})]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    problems, report = iam_policy.problems_of_record(record, VALUES)
    assert not [p for p in problems if "ScheduleKeyDeletion" in p], problems
    assert len(report) == 1 and "kms:ScheduleKeyDeletion" in report[0] and "key's policy" in report[0], report


def test_no_iam_policy_grants_a_key_lifecycle_action_and_the_key_policy_gives_exactly_those():
    """An alias can be put on any key (kms:CreateAlias on key/*), so no IAM statement may grant what deletes, disables
    or re-policies a key: those come from the key policy of the secrets key alone (issue 27)."""
    from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks  # pylint: disable=import-outside-toplevel

    assert sorted(iam_policy.KEY_POLICY_ACTIONS) == sorted(trainium_eks.SECRETS_KEY_ADMIN_ACTIONS)
    dangerous = set(iam_policy.KEY_POLICY_ACTIONS) | {"kms:DisableKey", "kms:DeleteAlias", "kms:UpdateAlias", "kms:*"}
    for stage in iam_policy.STAGES:
        policy = iam_policy.load_policy(stage, VALUES)
        assert not dangerous & set(iam_policy.policy_actions(policy)), stage
        assert not any(iam_policy.allows(policy, action, [KEY_ARN], {}, {KEY_ARN: {"kms:ResourceAliases": ["alias/trn-prod-eks-secrets"]}})
                       for action in dangerous), stage


def test_create_cluster_is_allowed_on_any_resource_and_only_with_the_deployment_tag():
    """eks:CreateCluster has no resource type (Service Authorization Reference, Amazon EKS): a statement naming the
    cluster's ARN never allows it on AWS. The request carries the deployment's tag (EKS's lower-case ``tags``)."""
    policy = iam_policy.load_policy("infrastructure", VALUES)
    call = {"operation": "CreateCluster", "params": {"name": "trn-prod", "tags": {"trainium.eks/cluster": "trn-prod"}}}
    assert iam_policy.allows(policy, "eks:CreateCluster", ["*"], iam_policy.context_of(call))
    other = {"operation": "CreateCluster", "params": {"name": "trn-prod", "tags": {"trainium.eks/cluster": "another"}}}
    assert not iam_policy.allows(policy, "eks:CreateCluster", ["*"], iam_policy.context_of(other))
    assert not iam_policy.allows(policy, "eks:CreateCluster", ["*"], iam_policy.context_of({"operation": "CreateCluster", "params": {}}))


def _ec2(operation, params=None, response=None, region="eu-north-1"):
    line = {"signing_name": "ec2", "endpoint_prefix": "ec2", "operation": operation, "params": params or {}, "region": region}
    return {**line, "response": response} if response is not None else line


def _spec(resource_type, *tags):
    return [{"ResourceType": resource_type, "Tags": list(tags)}]


def test_ec2_creates_need_the_deployment_tag_and_changes_a_resource_that_has_it(tmp_path):
    """The review's high finding on EC2 writes on "*": creates carry the tag, changes and deletes need it on the
    resource, CreateTags goes only with a create (or on a tagged resource), and reads stay in the region."""
    other = {"Key": "trainium.eks/cluster", "Value": "someone-else"}
    record = tmp_path / "record.jsonl"
    lines = [
        {"play": "Infrastructure - network"}, {"task": "VPC"},
        _ec2("DescribeVpcs", response={"Tags": {"vpc-0aaa0000": {"trainium.eks/cluster": "someone-else"}}}),
        _ec2("CreateVpc", {"TagSpecifications": _spec("vpc", CLUSTER_TAG)}),
        # moto's answer leaves the tags out; AWS applied those of the request
        _ec2("CreateVpc", {"TagSpecifications": _spec("vpc", CLUSTER_TAG)}, response={"Tags": {"vpc-0bbb1111": {}}}),
        _ec2("CreateVpc", {"TagSpecifications": _spec("vpc", other)}),  # another deployment's tag
        _ec2("ModifyVpcAttribute", {"VpcId": "vpc-0bbb1111"}),
        _ec2("ModifyVpcAttribute", {"VpcId": "vpc-0aaa0000"}),  # not ours
        # in the user's VPC (no tag of ours): a security group may be made, the VPC not changed
        _ec2("CreateSecurityGroup", {"VpcId": "vpc-0aaa0000", "GroupName": "trn-prod-nodes",
                                     "TagSpecifications": _spec("security-group", CLUSTER_TAG)}),
        _ec2("CreateSecurityGroup", {"VpcId": "vpc-0aaa0000", "GroupName": "trn-prod-nodes"},
             response={"Tags": {"sg-0ccc2222": {"trainium.eks/cluster": "trn-prod"}}}),
        _ec2("AuthorizeSecurityGroupIngress", {"GroupId": "sg-0ccc2222"}),
        _ec2("CreateTags", {"Resources": ["vpc-0aaa0000"], "Tags": [CLUSTER_TAG]}),  # claiming the user's VPC
        _ec2("CreateTags", {"Resources": ["sg-0ccc2222"], "Tags": [{"Key": "team", "Value": "a"}]}),
        _ec2("DescribeSubnets", region="us-east-1"),  # another region
        {"task": "Route tables"},
        _ec2("CreateRouteTable", {"VpcId": "vpc-0bbb1111", "TagSpecifications": _spec("route-table", CLUSTER_TAG)}),
        _ec2("CreateRouteTable", {"VpcId": "vpc-0bbb1111", "TagSpecifications": _spec("route-table", CLUSTER_TAG)},
             response={"Tags": {"rtb-0ddd3333": {}}}),
        _ec2("AssociateRouteTable", {"RouteTableId": "rtb-0ddd3333", "SubnetId": "subnet-0eee4444"}),  # AWS checks the subnet
        _ec2("AssociateRouteTable", {"RouteTableId": "rtb-0ddd3333", "SubnetId": "subnet-0eee4444"},
             response={"Associations": {"rtbassoc-0fff5555": []}}),
        {"play": "Teardown - all"}, {"task": "network"},
        _ec2("DescribeSubnets", response={"Tags": {"subnet-0eee4444": {"trainium.eks/cluster": "trn-prod"}}}),
        _ec2("DisassociateRouteTable", {"AssociationId": "rtbassoc-0fff5555"}),
        _ec2("DeleteSecurityGroup", {"GroupId": "sg-0ccc2222"}),
        _ec2("DescribeVpcs", response={"Tags": {"vpc-0aaa0000": {"trainium.eks/cluster": "someone-else"}}}),
        _ec2("DeleteVpc", {"VpcId": "vpc-0aaa0000"}),  # not ours
        _ec2("DeleteLaunchTemplate", {"LaunchTemplateName": "trn-prod-pool"}),  # never seen: AWS checks its tag
    ]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    calls = iam_policy.read_record(record, "111122223333", "eu-north-1")
    assert [(call["action"], call["context"]["ec2:CreateAction"]) for call in calls if call["implied_by"]] == [
        ("ec2:CreateTags", "CreateVpc"), ("ec2:CreateTags", "CreateVpc"), ("ec2:CreateTags", "CreateSecurityGroup"),
        ("ec2:CreateTags", "CreateRouteTable")]
    assert [call["resources"] for call in calls if call["action"] == "ec2:DisassociateRouteTable"] == [
        ["arn:aws:ec2:eu-north-1:111122223333:route-table/rtb-0ddd3333", "arn:aws:ec2:eu-north-1:111122223333:subnet/subnet-0eee4444"]]
    problems, report = iam_policy.problems_of_record(record, VALUES)
    assert sorted(p.split(" in play")[0] + (" " + p.split(" on ")[1].split(" ")[0] if " on " in p else "") for p in problems) == [
        "ec2:CreateTags arn:aws:ec2:eu-north-1:111122223333:vpc/vpc-0aaa0000",
        "ec2:CreateVpc arn:aws:ec2:eu-north-1:111122223333:vpc/(new)",
        "ec2:DeleteVpc arn:aws:ec2:eu-north-1:111122223333:vpc/vpc-0aaa0000",
        "ec2:DescribeSubnets",
        "ec2:ModifyVpcAttribute arn:aws:ec2:eu-north-1:111122223333:vpc/vpc-0aaa0000",
    ], problems
    assert any("ec2:DescribeSubnets" in p and "us-east-1" in p for p in problems)
    assert len(report) == 2, report
    assert any("ec2:DeleteLaunchTemplate" in line and "launch-template/trn-prod-pool" in line for line in report)
    assert any("ec2:AssociateRouteTable" in line and "subnet/subnet-0eee4444" in line for line in report)


@functools.lru_cache(maxsize=1)
def _parliament_ec2():
    database = json.loads((pathlib.Path(importlib.util.find_spec("parliament").origin).parent / "iam_definition.json").read_text())
    return next(entry for entry in database if entry["prefix"] == "ec2")


def _parliament_resource_types(action):
    """{type: required} of an EC2 action in parliament's copy of the Service Authorization Reference."""
    service = _parliament_ec2()
    privilege = next(entry for entry in service["privileges"] if entry["privilege"] == action)
    return {item["resource_type"].rstrip("*"): item["resource_type"].endswith("*") for item in privilege["resource_types"] if item["resource_type"]}


def test_ec2_resources_of_each_write_are_the_types_aws_authorizes():
    """Every EC2 action of the policies but the reads names its resources in EC2_RESOURCES, of types AWS authorizes
    for it (parliament's copy of the Service Authorization Reference), the required ones all there."""
    named = {"Resources": None, "LaunchTemplateName": "launch-template", "GroupName": "placement-group"}
    for action in sorted({a for stage in iam_policy.STAGES for a in iam_policy.policy_actions(iam_policy.load_policy(stage))}):
        prefix, operation = action.split(":", 1)
        if prefix != "ec2" or operation.startswith("Describe") and operation != "DescribeVpcAttribute":
            continue
        assert operation in iam_policy.EC2_RESOURCES, f"{action}: add it to EC2_RESOURCES in tests/iam/iam_policy.py"
        created, parameters = iam_policy.EC2_RESOURCES[operation]
        types = {created} - {None}
        for parameter in parameters:
            if parameter == "AssociationId":
                types |= {"route-table", "subnet"}
            elif named.get(parameter, iam_policy.EC2_PARAMETER_TYPES.get(parameter)):
                types.add(named.get(parameter) or iam_policy.EC2_PARAMETER_TYPES[parameter])
        known = _parliament_resource_types(operation)
        if "Resources" in parameters:
            continue  # CreateTags / DeleteTags: any taggable type
        assert types <= set(known), (action, types - set(known))
        assert {t for t, required in known.items() if required} <= types, (action, known)


def test_teardown_deletes_only_oidc_providers_tagged_with_the_cluster(tmp_path):
    def iam(operation, params=None, response=None):
        line = {"signing_name": "iam", "endpoint_prefix": "iam", "operation": operation, "params": params or {}}
        return {**line, "response": response} if response is not None else line

    ours = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-north-1.amazonaws.com/id/AAAA"
    other = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-north-1.amazonaws.com/id/BBBB"
    unseen = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-north-1.amazonaws.com/id/CCCC"
    record = tmp_path / "record.jsonl"
    lines = [
        {"play": "Infrastructure - cluster"}, {"task": "cluster"},
        iam("CreateOpenIDConnectProvider", {"Tags": [CLUSTER_TAG]}),
        iam("CreateOpenIDConnectProvider", {"Tags": [CLUSTER_TAG]}, response={"OidcTags": {}, "Arn": ours}),
        {"play": "Teardown - all"}, {"task": "cluster"},
        iam("GetOpenIDConnectProvider", {"OpenIDConnectProviderArn": other},
            response={"OidcTags": {"trainium.eks/cluster": "someone-else"}, "Arn": None}),
        iam("DeleteOpenIDConnectProvider", {"OpenIDConnectProviderArn": ours}),
        iam("DeleteOpenIDConnectProvider", {"OpenIDConnectProviderArn": other}),
        iam("DeleteOpenIDConnectProvider", {"OpenIDConnectProviderArn": unseen}),  # AWS checks its tag
    ]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    problems, report = iam_policy.problems_of_record(record, VALUES)
    assert [p.split(" in play")[0] + " " + p.split(" on ")[1].split(" ")[0] for p in problems] == [
        f"iam:DeleteOpenIDConnectProvider {other}"], problems
    assert len(report) == 1 and unseen in report[0], report
