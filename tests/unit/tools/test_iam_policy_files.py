# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator's IAM policies (docs/iam/*.json, docs/iam-policy.md) as files, and against the code.

The recorded calls of real runs are checked by
tests/integration/test_infrastructure.py; here: the files are policies IAM
takes, and every boto3 operation of the modules the playbooks and roles run -
the paths the rehearsal does not take too - is allowed by one of them.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "iam" / "iam_policy.py"
_SPEC = importlib.util.spec_from_file_location("iam_policy", _PATH)
iam_policy = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(iam_policy)

VALUES = {"ACCOUNT_ID": "111122223333", "REGION": "eu-north-1", "CLUSTER_NAME": "trn-prod", "REPOSITORY_NAME": "bert"}


@pytest.mark.parametrize("stage", iam_policy.STAGES)
def test_policy_file_is_an_iam_policy_that_fits_one_managed_policy(stage):
    text = iam_policy.policy_path(stage).read_text(encoding="utf-8")
    assert len("".join(text.split())) <= iam_policy.MANAGED_POLICY_MAX_CHARS
    policy = json.loads(text)
    assert set(policy) == {"Version", "Statement"} and policy["Version"] == "2012-10-17"
    sids = [statement["Sid"] for statement in policy["Statement"]]
    assert len(sids) == len(set(sids)) and all(re.fullmatch(r"[A-Za-z0-9]+", sid) for sid in sids)
    for statement in policy["Statement"]:
        assert set(statement) <= {"Sid", "Effect", "Action", "Resource", "Condition"}, statement["Sid"]
        assert statement["Effect"] == "Allow", statement["Sid"]
        actions = statement["Action"]
        assert isinstance(actions, list) and actions == sorted(set(actions)), f"{statement['Sid']}: sort the actions, once each"
        assert len({action.split(":")[0] for action in actions}) == 1, f"{statement['Sid']}: one service per statement"
        for action in actions:
            assert action in iam_policy.NON_API_ACTIONS or iam_policy.model_has_operation(action), f"{action}: no such operation"
        for operator, keys in statement.get("Condition", {}).items():
            assert operator in iam_policy.OPERATORS, f"{statement['Sid']}: the checks do not evaluate {operator}"
            for key in keys:
                assert key in iam_policy.REQUEST_CONDITION_KEYS or key in iam_policy.UNSEEN_CONDITION_KEYS, key


@pytest.mark.parametrize("stage", iam_policy.STAGES)
def test_placeholders_are_the_documented_ones_and_render_to_valid_arns(stage):
    text = iam_policy.policy_path(stage).read_text(encoding="utf-8")
    assert set(re.findall(r"\b[A-Z]{2,}(?:_[A-Z]+)*\b", text)) <= set(iam_policy.PLACEHOLDERS)
    rendered = iam_policy.load_policy(stage, VALUES)
    for statement in rendered["Statement"]:
        for arn in iam_policy._as_list(statement["Resource"]):  # pylint: disable=protected-access
            assert arn == "*" or re.fullmatch(r"arn:aws:[a-z0-9-]+:(eu-north-1)?:(111122223333)?:\S+", arn), arn
    assert ("arn:aws:iam::111122223333:role/trn-prod-cluster" in json.dumps(rendered)) is (stage != "preflight")
    doc = (iam_policy.ROOT / "docs" / "iam-policy.md").read_text(encoding="utf-8")
    assert iam_policy.policy_path(stage).name in doc
    for name in iam_policy.PLACEHOLDERS:
        assert name in doc


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
               if action not in iam_policy.NEEDS_NO_PERMISSION and not any(iam_policy.allows(p, action) for p in policies)}
    assert not missing, f"boto3 calls no policy of docs/iam/ allows: {missing}"


def test_not_recorded_entries_name_actions_of_their_stage_with_a_reason():
    for stage, entries in iam_policy.NOT_RECORDED.items():
        actions = iam_policy.policy_actions(iam_policy.load_policy(stage))
        for action, reason in entries.items():
            assert action in actions, f"{stage}: {action} is not in {iam_policy.policy_path(stage).name}; drop its entry"
            assert len(reason) > 20


POLICY = {"Version": "2012-10-17", "Statement": [
    {"Sid": "Read", "Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
    {"Sid": "Roles", "Effect": "Allow", "Action": ["iam:GetRole"], "Resource": ["arn:aws:iam::1:role/c-cluster", "arn:aws:iam::1:role/c-n?de"]},
    {"Sid": "Attach", "Effect": "Allow", "Action": ["iam:AttachRolePolicy"], "Resource": "arn:aws:iam::1:role/*",
     "Condition": {"ArnEquals": {"iam:PolicyARN": ["arn:aws:iam::aws:policy/A"]}}},
    {"Sid": "Pass", "Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "*",
     "Condition": {"StringEquals": {"iam:PassedToService": "eks.amazonaws.com"}}},
    {"Sid": "Odd", "Effect": "Allow", "Action": ["iam:DeleteRole"], "Resource": "*", "Condition": {"StringEquals": {"aws:SourceIp": "x"}}},
]}


@pytest.mark.parametrize("action, resources, context, allowed", [
    ("ec2:DescribeVpcs", [], {}, True),
    ("EC2:describevpcs", [], {}, True),  # actions are case-insensitive
    ("ec2:CreateVpc", [], {}, False),
    ("iam:GetRole", ["arn:aws:iam::1:role/c-cluster"], {}, True),
    ("iam:GetRole", ["arn:aws:iam::1:role/c-node"], {}, True),
    ("iam:GetRole", ["arn:aws:iam::1:role/c-cluster", "arn:aws:iam::1:role/admin"], {}, False),  # every resource counts
    ("iam:GetRole", ["arn:aws:iam::1:role/C-CLUSTER"], {}, False),  # resources are not
    ("iam:AttachRolePolicy", ["arn:aws:iam::1:role/c-node"], {"iam:PolicyARN": "arn:aws:iam::aws:policy/A"}, True),
    ("iam:AttachRolePolicy", ["arn:aws:iam::1:role/c-node"], {"iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess"}, False),
    ("iam:PassRole", [], {}, True),  # a key only AWS sees holds
    ("iam:DeleteRole", [], {}, False),  # any other missing key does not
])
def test_allows_evaluates_actions_resources_and_conditions_like_iam(action, resources, context, allowed):
    assert iam_policy.allows(POLICY, action, resources, context) is allowed


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
