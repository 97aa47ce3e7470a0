# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator's IAM policies (docs/iam/) checked against the AWS calls the collection makes.

Two sources of calls, two tests:

- recorded: tests/integration/test_site_end_to_end.py (and test_infrastructure.py) run the playbooks with
  ``record_calls`` (the botocore plugin trainium_iam_recorder.py and the
  callback callback/trainium_iam_stage.py) and ``problems_of_record`` says whether
  the policy of each stage allows every request of that stage - action,
  resource names and condition keys where the request names them - and that
  each policy action was requested or is in ``NOT_RECORDED`` with a reason;
- read from the code: tests/unit/tools/test_iam_policy_files.py asserts that
  every boto3 operation of the modules the playbooks and roles run
  (``static_actions``, paths the rehearsal does not take included) is allowed
  by one of the policies.

A stage's policy is a set of files, ``docs/iam/trainium-eks-<stage>.json``
or ``trainium-eks-<stage>-<part>.json`` (each one customer managed policy,
attached together); the checks merge them. The files hold placeholders
(``PLACEHOLDERS``) that the operator replaces (docs/iam-policy.md); the
checks replace them with the rehearsal's values, and the size check with the
longest values the collection accepts (``worst_case_renderings``).

The evaluation is IAM's for Allow statements: actions and resources with
``*`` and ``?`` wildcards, the condition operators in ``OPERATORS``. Condition
keys come in three kinds (``key_kind``):

- request keys, from the request's parameters (``REQUEST_CONDITION_KEYS``,
  ``aws:RequestTag/<key>`` from its ``Tags``);
- resource keys, from what the record saw of the resource the request acts
  on (``kms:ResourceAliases``, ``aws:ResourceTag/<key>``; see ``_State``).
  When the record cannot tell (a resource made before the record began and
  never described in it), the condition is left to AWS (``AWS_ONLY``) and
  the report of ``problems_of_record`` names the request;
- keys AWS sets only when a service acts for the principal
  (``AWS_SET_CONDITION_KEYS``: ``iam:PassedToService``, ``kms:ViaService``,
  ``kms:GrantIsForAWSResource``). No request the collection sends carries
  them, so a statement that needs them allows none of its requests; those
  statements serve what AWS does in its name (``NOT_RECORDED``, "AWS only").
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import json
import pathlib
import re
import warnings

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
POLICY_DIR = ROOT / "docs" / "iam"
STAGES = ("preflight", "infrastructure", "training", "status", "teardown")
# trainium-eks-<stage>.json, or trainium-eks-<stage>-<part>.json when a stage needs more than one managed policy.
POLICY_FILE_RE = re.compile(r"^trainium-eks-(?P<stage>[a-z]+)(?:-(?P<part>[a-z]+))?\.json$")
# The first word of a play's name says its stage; the other plays (Validate, Summary) call no AWS API.
# The platform stage's only AWS calls read the file system of the infrastructure
# stage (platform.yml run alone): it runs under the infrastructure policies, and so do
# playbooks/scale.yml's own plays (they read the node group its infrastructure play resizes).
PLAY_STAGES = {"Preflight": "preflight", "Infrastructure": "infrastructure", "Platform": "infrastructure", "Training": "training",
               "Status": "status", "Teardown": "teardown", "Scale": "infrastructure"}
PLACEHOLDERS = ("ACCOUNT_ID", "REGION", "CLUSTER_NAME", "REPOSITORY_NAME", "ADDON_REGISTRY_ACCOUNT")
# IAM's limit for a customer managed policy, whitespace not counted ...
MANAGED_POLICY_MAX_CHARS = 6144
# ... and what each file may take, rendered with the longest values (worst_case_renderings): 10% stays free.
SIZE_MARGIN = 0.10
MAX_RENDERED_CHARS = int(MANAGED_POLICY_MAX_CHARS * (1 - SIZE_MARGIN))
# The longest values the collection accepts (unit-tested against the code that enforces them):
# trainium_cluster_name: CLUSTER_NAME_RE of plugins/module_utils/trainium_deployment.py (2-40 characters);
# the repository: ecr_problems of plugins/module_utils/trainium_validation.py (ecr_repository_name, 2-256).
MAX_CLUSTER_NAME_CHARS = 40
MAX_REPOSITORY_NAME_CHARS = 256
# The partitions docs/iam-policy.md covers (arn:aws: replaced by arn:<partition>:).
PARTITIONS = ("aws", "aws-cn", "aws-us-gov")
OPERATORS = ("StringEquals", "StringLike", "ArnEquals", "ArnLike", "Bool",
             "ForAnyValue:StringEquals", "ForAnyValue:StringLike", "ForAllValues:StringEquals", "ForAllValues:StringLike",
             "ForAllValues:StringNotEquals", "ForAllValues:StringNotEqualsIgnoreCase")
# Condition keys a recorded request carries, from its parameters (and aws:RequestTag/<key> from its Tags) ...
REQUEST_CONDITION_KEYS = {"iam:PolicyARN": "PolicyArn", "iam:AWSServiceName": "AWSServiceName"}
# ... (aws:RequestedRegion: the region the recorder saw the client use; ec2:CreateAction: the create whose
# TagSpecifications AWS authorizes as ec2:CreateTags, see EC2_RESOURCES; aws:TagKeys: the keys of the request's
# tags, or of an UntagResource's TagKeys) ...
REQUEST_SET_KEYS = ("aws:RequestedRegion", "ec2:CreateAction", "aws:TagKeys")
REQUEST_TAG = "aws:RequestTag/"
# ... keys of the resource it acts on, known from what the record saw of the resource (_State) ...
RESOURCE_TAG = "aws:ResourceTag/"
EC2_RESOURCE_TAG = "ec2:ResourceTag/"
RESOURCE_CONDITION_KEYS = {
    "kms:ResourceAliases": "the aliases of the KMS key: CreateKey, CreateAlias, ListAliases and DescribeKey by alias in the record",
}
# ... and keys AWS sets only when a service acts in the principal's name: a request the collection sends never has them.
AWS_SET_CONDITION_KEYS = {
    "iam:PassedToService": "EKS checks iam:PassRole itself when it takes the role in CreateCluster / CreateNodegroup / CreateAddon",
    "kms:ViaService": "EKS calls CreateGrant on the secrets key in CreateCluster, in the caller's name",
    "kms:GrantIsForAWSResource": "EKS creates the grant on the secrets key with the caller's permissions",
}
# KMS key policies. The IAM policies of docs/iam/ no longer grant these actions on key/* (an alias, which anyone
# with kms:CreateAlias can put on any key, was all that told the cluster's key from another): the secrets key's
# own policy grants them, the one the eks_cluster role sets in CreateKey (and PutKeyPolicy) for the principal
# that runs it and eks_cluster_kms_key_admins (plugins/module_utils/trainium_eks.py secrets_key_policy;
# tests/unit/tools/test_iam_policy_files.py checks that the two lists agree). Modelled narrowly: only these
# actions, only on a key whose policy the record saw the collection set, only through an Allow statement
# without conditions that names the caller itself (the principal the record saw sts:GetCallerIdentity answer,
# an assumed-role session as its role). The account-root statement only hands the decision to the IAM
# policies, which ``allows`` evaluates; it never counts here. Another key (AWS's default key policy) gets
# nothing from this, whatever alias it carries.
KEY_POLICY_ACTIONS = ("kms:CancelKeyDeletion", "kms:EnableKey", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion",
                      "kms:UntagResource", "kms:UpdateKeyDescription")
# A resource key whose value the record cannot tell: the condition is AWS's to check (reported, never a problem).
AWS_ONLY = "(checked by AWS only)"
# A resource a create request makes: its ID is AWS's choice; it has no tags and no aliases yet.
NEW_RESOURCE_ID = "(new)"
# Tags on a create call: AWS authorizes them as the tag action too (KMS: "kms:TagResource permission in an IAM policy";
# FSx: "additional authorization on the fsx:TagResource action"), on the new resource, with the request's tags.
TAG_ON_CREATE = {"kms:CreateKey": "kms:TagResource", "fsx:CreateFileSystem": "fsx:TagResource",
                 "fsx:CreateFileSystemFromBackup": "fsx:TagResource"}
# EC2 writes: the resources IAM authorizes for each (Service Authorization Reference, Amazon EC2, "Actions defined by
# Amazon EC2": the action's resource types, those the collection's requests name), as (the type of the resource a
# create makes, or None; the request parameters that name the others). A create that carries TagSpecifications is
# authorized as ec2:CreateTags too, on the new resource, with ec2:CreateAction (EC2 User Guide, "Grant permission to
# tag Amazon EC2 resources during creation"). An EC2 action missing here names no resource: Describe* only
# (tests/unit/tools/test_iam_policy_files.py checks that every other EC2 action of the policies is here).
EC2_RESOURCES = {
    "AllocateAddress": ("elastic-ip", ()),
    "AssociateRouteTable": (None, ("RouteTableId", "SubnetId")),
    "AttachInternetGateway": (None, ("InternetGatewayId", "VpcId")),
    "AuthorizeSecurityGroupEgress": (None, ("GroupId",)),
    "AuthorizeSecurityGroupIngress": (None, ("GroupId",)),
    "CreateInternetGateway": ("internet-gateway", ()),
    "CreateLaunchTemplate": ("launch-template", ()),
    "CreateLaunchTemplateVersion": (None, ("LaunchTemplateId", "LaunchTemplateName")),
    "CreateNatGateway": ("natgateway", ("SubnetId", "AllocationId")),
    "CreatePlacementGroup": ("placement-group", ()),
    "CreateRoute": (None, ("RouteTableId",)),
    "CreateRouteTable": ("route-table", ("VpcId",)),
    "CreateSecurityGroup": ("security-group", ("VpcId",)),
    "CreateSubnet": ("subnet", ("VpcId",)),
    "CreateTags": (None, ("Resources",)),
    "CreateVpc": ("vpc", ()),
    "DeleteInternetGateway": (None, ("InternetGatewayId",)),
    "DeleteLaunchTemplate": (None, ("LaunchTemplateId", "LaunchTemplateName")),
    "DeleteNatGateway": (None, ("NatGatewayId",)),
    "DeletePlacementGroup": (None, ("GroupName",)),
    "DeleteRoute": (None, ("RouteTableId",)),
    "DeleteRouteTable": (None, ("RouteTableId",)),
    "DeleteSecurityGroup": (None, ("GroupId",)),
    "DeleteSubnet": (None, ("SubnetId",)),
    "DeleteTags": (None, ("Resources",)),
    "DeleteVpc": (None, ("VpcId",)),
    "DescribeVpcAttribute": (None, ("VpcId",)),
    "DetachInternetGateway": (None, ("InternetGatewayId", "VpcId")),
    "DisassociateRouteTable": (None, ("AssociationId",)),
    "ModifyLaunchTemplate": (None, ("LaunchTemplateId", "LaunchTemplateName")),
    "ModifySubnetAttribute": (None, ("SubnetId",)),
    "ModifyVpcAttribute": (None, ("VpcId",)),
    "ReleaseAddress": (None, ("AllocationId",)),
    "ReplaceRoute": (None, ("RouteTableId",)),
    "RevokeSecurityGroupEgress": (None, ("GroupId",)),
    "RevokeSecurityGroupIngress": (None, ("GroupId",)),
    "UpdateSecurityGroupRuleDescriptionsEgress": (None, ("GroupId",)),
    "UpdateSecurityGroupRuleDescriptionsIngress": (None, ("GroupId",)),
}
# The resource type of an EC2 ID parameter, and of an ID by its prefix (CreateTags' Resources).
EC2_PARAMETER_TYPES = {"AllocationId": "elastic-ip", "GroupId": "security-group", "InternetGatewayId": "internet-gateway",
                       "LaunchTemplateId": "launch-template", "NatGatewayId": "natgateway", "RouteTableId": "route-table",
                       "SubnetId": "subnet", "VpcId": "vpc"}
EC2_ID_RE = re.compile(r"(?P<prefix>vpc|subnet|sg|rtb|igw|nat|eipalloc|lt)-[0-9a-f]{8,17}")
EC2_ID_PREFIXES = {"vpc": "vpc", "subnet": "subnet", "sg": "security-group", "rtb": "route-table", "igw": "internet-gateway",
                   "nat": "natgateway", "eipalloc": "elastic-ip", "lt": "launch-template"}
# IAM actions that are no API operation of their service's model.
NON_API_ACTIONS = {"iam:PassRole"}
# IAM service prefixes of the botocore services the collection uses (signing names).
SERVICE_PREFIXES = {"ec2": "ec2", "ecr": "ecr", "eks": "eks", "fsx": "fsx", "iam": "iam", "kms": "kms", "logs": "logs",
                    "monitoring": "cloudwatch", "servicequotas": "servicequotas", "ssm": "ssm", "sts": "sts"}
BOTOCORE_NAMES = {"servicequotas": "service-quotas"}

NEEDS_NO_PERMISSION = {
    "sts:GetCallerIdentity": "STS answers it for every principal; no policy allows or denies it",
    "iam:ListAccountAliases": "amazon.aws.aws_caller_info (eks_cluster, check mode) goes on without the alias when refused",
}

_UPDATE = "changes an existing deployment; the recorded runs create it, rerun it unchanged and park a pool"
_TAG_ON_CREATE = "AWS authorizes the tags of a create call separately; the call itself is the create"
_REGISTRY = ("the image builder's pushes and pulls go to the registry API with the GetAuthorizationToken token, "
             "which AWS authorizes as these actions (no botocore request to record)")
_IMAGE_IN_INFRASTRUCTURE = ("site.yml builds the image in a background job of the infrastructure stage (its policy allows the "
                            "push); playbooks/training.yml alone builds it in the training stage")
_TRAINING_ALONE = "playbooks/training.yml alone: the training image role reads the repository the infrastructure stage made"
_ACCESS_ENTRIES = "eks_cluster's access entries (issue 9): recorded once the module manages them on the rehearsal"
# Policy actions that the recorded runs of test_site_end_to_end.py do not request, and why they stay.
NOT_RECORDED = {
    "preflight": {
        "ec2:DescribeCapacityReservations": "node pools with a capacity reservation or block (not in the local inventory)",
        "ec2:DescribeRegions": "a Trainium type the region does not offer: preflight names the regions that do",
        "servicequotas:GetServiceQuota": "the on-demand Trn quota when ListServiceQuotas does not list it",
    },
    "infrastructure": {
        "ec2:AuthorizeSecurityGroupEgress": "a security group whose egress rule was removed by hand",
        "ec2:CreateLaunchTemplateVersion": _UPDATE,
        "ec2:DeleteRoute": _UPDATE,
        "ec2:DeleteTags": _UPDATE,
        "ec2:DisassociateRouteTable": _UPDATE,
        "ec2:ModifyLaunchTemplate": _UPDATE,
        "ec2:ModifySubnetAttribute": _UPDATE,
        "ec2:ReplaceRoute": _UPDATE,
        "ec2:RevokeSecurityGroupEgress": _UPDATE,
        "ec2:RevokeSecurityGroupIngress": _UPDATE,
        "ec2:UpdateSecurityGroupRuleDescriptionsIngress": _UPDATE,
        "ecr:BatchCheckLayerAvailability": _REGISTRY,
        "ecr:BatchGetImage": _REGISTRY,
        "ecr:CompleteLayerUpload": _REGISTRY,
        "ecr:GetDownloadUrlForLayer": _REGISTRY,
        "ecr:InitiateLayerUpload": _REGISTRY,
        "ecr:PutImage": _REGISTRY,
        "ecr:PutImageScanningConfiguration": _UPDATE,
        "ecr:PutImageTagMutability": _UPDATE,
        "ecr:UploadLayerPart": _REGISTRY,
        "ecr:TagResource": _TAG_ON_CREATE + "; and tag updates",
        "ecr:UntagResource": _UPDATE,
        "eks:AssociateAccessPolicy": _ACCESS_ENTRIES,
        "eks:AssociateEncryptionConfig": "a cluster made without secrets encryption gets it",
        "eks:CreateAccessEntry": _ACCESS_ENTRIES,
        "eks:DeleteAccessEntry": _ACCESS_ENTRIES,
        "eks:DescribeAccessEntry": _ACCESS_ENTRIES,
        "eks:DescribeUpdate": _UPDATE,
        "eks:DisassociateAccessPolicy": _ACCESS_ENTRIES,
        "eks:ListAccessEntries": _ACCESS_ENTRIES,
        "eks:ListAssociatedAccessPolicies": _ACCESS_ENTRIES,
        "eks:ListNodegroups": "node groups of pools removed from the inventory",
        "eks:TagResource": _UPDATE,
        "eks:UntagResource": _UPDATE,
        "eks:UpdateClusterConfig": _UPDATE,
        "eks:UpdateAddon": "a vpc-cni add-on whose version, role or configuration changed",
        "eks:UpdateClusterVersion": "a one-minor Kubernetes upgrade",
        "eks:DescribeClusterVersions": "a cluster on upgrade policy EXTENDED asked to move to STANDARD",
        "eks:UpdateNodegroupVersion": "a Kubernetes upgrade or a new launch template version",
        "fsx:CreateFileSystemFromBackup": "fsx_lustre_restore_backup: the file system made again from a backup",
        "fsx:DescribeBackups": "fsx_lustre_restore_backup: the backup to restore from",
        "fsx:UntagResource": _UPDATE,
        "fsx:UpdateFileSystem": _UPDATE,
        "iam:AddClientIDToOpenIDConnectProvider": "an OIDC provider of the issuer made without the sts.amazonaws.com audience",
        "iam:CreateServiceLinkedRole": "EKS and FSx create their service-linked roles on first use in an account (AWS only)",
        "iam:DetachRolePolicy": "purge_policies: a policy attached to the cluster or node role by hand",
        "iam:PassRole": "EKS checks it for the cluster and node roles (AWS only; no API call of its own)",
        "iam:TagOpenIDConnectProvider": _TAG_ON_CREATE,
        "iam:TagRole": _TAG_ON_CREATE + "; and tag updates",
        "iam:UntagRole": _UPDATE,
        "iam:UpdateAssumeRolePolicy": _UPDATE,
        "iam:UpdateRole": _UPDATE,
        "kms:CreateGrant": "EKS grants itself the secrets key in CreateCluster (AWS only: kms:ViaService)",
        "logs:TagLogGroup": _UPDATE,
        "logs:TagResource": _TAG_ON_CREATE,
        "logs:UntagLogGroup": _UPDATE,
        "logs:UntagResource": _UPDATE,
    },
    # playbooks/status.yml reads only; the acceptance test runs it on the converged deployment, every action requested.
    "status": {},
    "training": {
        "ecr:GetAuthorizationToken": _IMAGE_IN_INFRASTRUCTURE,
        "ecr:BatchCheckLayerAvailability": _REGISTRY,
        "ecr:BatchGetImage": _REGISTRY,
        "ecr:CompleteLayerUpload": _REGISTRY,
        "ecr:DescribeRepositories": _TRAINING_ALONE,
        "ecr:GetDownloadUrlForLayer": _REGISTRY,
        "ecr:GetLifecyclePolicy": _TRAINING_ALONE,
        "ecr:InitiateLayerUpload": _REGISTRY,
        "ecr:ListTagsForResource": _TRAINING_ALONE,
        "ecr:PutImage": _REGISTRY,
        "ecr:UploadLayerPart": _REGISTRY,
    },
    "teardown": {
        "eks:DeleteAccessEntry": _ACCESS_ENTRIES,
        "eks:DeleteAddon": "trainium.eks.eks_addon state=absent, which no role runs (the vpc-cni add-on goes with the cluster)",
        "eks:DescribeAccessEntry": _ACCESS_ENTRIES,
        "eks:DisassociateAccessPolicy": _ACCESS_ENTRIES,
        "eks:ListAccessEntries": _ACCESS_ENTRIES,
        "eks:ListAssociatedAccessPolicies": _ACCESS_ENTRIES,
        "fsx:CreateBackup": "the final backup is made by FSx, authorized as the caller's CreateBackup (AWS only)",
        "fsx:TagResource": "the final backup gets the file system's tags (AWS only)",
        "iam:DeleteRolePolicy": "an inline policy put on the cluster or node role by hand",
        "iam:GetOpenIDConnectProvider": "OIDC providers of other issuers are read for the cluster's tag",
        "iam:RemoveRoleFromInstanceProfile": "the node role's instance profile when EKS left it behind",
    },
}


# ------------------------------------------------------------------ policies

def stage_of(name):
    """The stage a file name of docs/iam/ belongs to (POLICY_FILE_RE), or None."""
    match = POLICY_FILE_RE.match(name)
    return match["stage"] if match and match["stage"] in STAGES else None


def policy_paths(stage, directory=POLICY_DIR):
    """The files of ``stage``'s policy in name order: each is one customer managed policy; the operator attaches them all."""
    return [path for path in sorted(pathlib.Path(directory).glob("*.json")) if stage_of(path.name) == stage]


def policy_names(stage):
    return " + ".join(path.name for path in policy_paths(stage)) or f"(no trainium-eks-{stage}*.json in docs/iam/)"


def render(text, values):
    """The policy text with each placeholder replaced by values[placeholder]."""
    for name in PLACEHOLDERS:
        text = text.replace(name, values[name])
    return text


def load_policy_file(path, values=None):
    text = pathlib.Path(path).read_text(encoding="utf-8")
    return json.loads(render(text, values) if values else text)


def load_policy(stage, values=None):
    """The policy of ``stage``: the statements of all its files together (IAM allows what any attached policy allows)."""
    return {"Version": "2012-10-17",
            "Statement": [statement for path in policy_paths(stage) for statement in load_policy_file(path, values)["Statement"]]}


def policy_chars(text):
    """The size IAM counts against a managed policy's limit: the characters that are not whitespace."""
    return len("".join(text.split()))


@functools.lru_cache(maxsize=None)
def longest_regions():
    """{partition: its longest region name} of PARTITIONS, from botocore's endpoint data (the regions with EC2)."""
    session, _xform = _service_models()
    return {partition: max(sorted(session.get_available_regions("ec2", partition_name=partition)), key=len)
            for partition in PARTITIONS}


def worst_case_renderings(text):
    """(partition, region, rendered text) for each partition: ``text`` with the longest values the collection accepts.

    A 12-digit account, the partition's longest region, a cluster name of MAX_CLUSTER_NAME_CHARS, a repository
    name of MAX_REPOSITORY_NAME_CHARS, and ``arn:aws:`` replaced by the partition's ARN prefix (docs/iam-policy.md).
    """
    for partition, region in longest_regions().items():
        values = {"ACCOUNT_ID": "1" * 12, "REGION": region, "CLUSTER_NAME": "c" * MAX_CLUSTER_NAME_CHARS,
                  "REPOSITORY_NAME": "r" * MAX_REPOSITORY_NAME_CHARS, "ADDON_REGISTRY_ACCOUNT": "2" * 12}
        yield partition, region, render(text, values).replace("arn:aws:", f"arn:{partition}:")


def _as_list(value):
    return value if isinstance(value, list) else [value]


def policy_actions(policy):
    return sorted({action for statement in policy["Statement"] for action in _as_list(statement["Action"])})


def _matches(pattern, value, case_sensitive=True):
    # IAM wildcards: * and ?; nothing else is special.
    pattern = pattern.replace("[", "[[]")
    if case_sensitive:
        return fnmatch.fnmatchcase(value, pattern)
    return fnmatch.fnmatchcase(value.lower(), pattern.lower())


def key_kind(key):
    """"request", "resource" or "aws" (see the module's docstring); None for a key the checks do not know."""
    if key in REQUEST_CONDITION_KEYS or key in REQUEST_SET_KEYS or key.startswith(REQUEST_TAG):
        return "request"
    if key in RESOURCE_CONDITION_KEYS or key.startswith((RESOURCE_TAG, EC2_RESOURCE_TAG)):
        return "resource"
    if key in AWS_SET_CONDITION_KEYS:
        return "aws"
    return None


def _compare(operator, given, wanted):
    if operator in ("StringEquals", "ArnEquals"):
        return given in wanted
    if operator == "StringNotEquals":
        return given not in wanted
    if operator == "StringNotEqualsIgnoreCase":
        return given.lower() not in [w.lower() for w in wanted]
    if operator in ("StringLike", "ArnLike"):
        return any(_matches(w, given) for w in wanted)
    if operator == "Bool":
        return given.lower() in [w.lower() for w in wanted]
    return False


def _condition_holds(operator, key, wanted, context):
    """IAM's answer for one key of a condition; ``context`` holds the request's keys and its resource's."""
    given = context.get(key)
    if given is None and context.get(AWS_ONLY) and key_kind(key) == "resource":
        return True
    wanted = [str(w) for w in _as_list(wanted)]
    if ":" in operator:
        # Set operators on a multivalued key: ForAnyValue needs one value to match (none there: false),
        # ForAllValues every value (none there: true).
        qualifier, test = operator.split(":", 1)
        hits = [_compare(test, str(value), wanted) for value in ([] if given is None else _as_list(given))]
        return all(hits) if qualifier == "ForAllValues" else any(hits)
    if given is None or isinstance(given, list):
        return False
    return _compare(operator, str(given), wanted)


def allows(policy, action, resources=(), context=None, resource_context=None):
    """Whether an Allow statement of ``policy`` covers ``action`` on every one of ``resources``.

    ``resources`` are the ARNs the request names (none: the action and the
    request's conditions are checked); ``context`` the request's condition
    keys; ``resource_context`` {ARN: the keys of that resource}, with
    ``AWS_ONLY: True`` where the record cannot tell them. A condition on a key
    that is not there does not hold (ForAllValues aside), as in IAM.
    """
    context = context or {}
    resource_context = resource_context or {}

    def covered(resource):
        keys = {**context, **resource_context.get(resource, {})}
        for statement in policy["Statement"]:
            if statement.get("Effect") != "Allow":
                continue
            if not any(_matches(pattern, action, case_sensitive=False) for pattern in _as_list(statement["Action"])):
                continue
            if resource is not None and not any(_matches(pattern, resource) for pattern in _as_list(statement["Resource"])):
                continue
            if all(_condition_holds(operator, key, wanted, keys)
                   for operator, conditions in statement.get("Condition", {}).items() for key, wanted in conditions.items()):
                return True
        return False

    return all(covered(resource) for resource in (list(resources) or [None]))


def allows_action(policy, action):
    """Whether a statement of ``policy`` allows ``action`` to some request a module may send.

    For the static check (tests/unit/tools/test_iam_policy_files.py), which
    knows neither the resources nor the parameters of a call: conditions on
    request and resource keys count as met; one on a key AWS sets only for
    itself (AWS_SET_CONDITION_KEYS) does not, since no module request has it.
    """
    return any(statement.get("Effect") == "Allow"
               and any(_matches(pattern, action, case_sensitive=False) for pattern in _as_list(statement["Action"]))
               and not any(key_kind(key) == "aws" for conditions in statement.get("Condition", {}).values() for key in conditions)
               for statement in policy["Statement"])


# ---------------------------------------------------------------- recording

def record_calls(env, path):
    """Make the playbook runs of ``env`` (a dict: the environment of ansible-playbook) record their AWS calls in ``path``."""
    env.update(
        PYTHONPATH=str(HERE) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        BOTOCORE_EXPERIMENTAL__PLUGINS="trainium_iam=trainium_iam_recorder",
        TRAINIUM_IAM_RECORD=str(path),
        ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback"),
        ANSIBLE_CALLBACKS_ENABLED="trainium_iam_stage",
    )
    return pathlib.Path(path)


def addon_registry_account(region):
    """The account of the EKS add-on registry of ``region`` (the efa_device_plugin role's table)."""
    defaults = yaml.safe_load((ROOT / "roles" / "efa_device_plugin" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    return defaults["efa_device_plugin_ecr_accounts"][region]


def assert_record_allowed(path, account, local_vars, cluster, unused=False):
    """Fail unless docs/iam/ allows every request recorded at ``path`` (``problems_of_record``); the report's lines
    become warnings. ``account`` is the rehearsal account (tests/conftest.py AwsAccount), ``local_vars`` the local
    inventory's deployment variables."""
    values = {"ACCOUNT_ID": account.client("sts").get_caller_identity()["Account"], "REGION": local_vars["trainium_region"],
              "CLUSTER_NAME": cluster, "REPOSITORY_NAME": local_vars["trainium_image"]["repository"],
              "ADDON_REGISTRY_ACCOUNT": addon_registry_account(local_vars["trainium_region"])}
    problems, report = problems_of_record(path, values, unused=unused)
    for line in report:
        warnings.warn(line)
    assert not problems, "the IAM policies in docs/iam/ and the recorded AWS requests disagree:\n" + "\n".join(problems)


def action_of(call):
    prefix = SERVICE_PREFIXES.get(call["signing_name"])
    assert prefix, f"no IAM prefix known for the AWS service {call['signing_name']} (tests/iam/iam_policy.py SERVICE_PREFIXES)"
    return f"{prefix}:{call['operation']}"


KMS_KEY_ID_RE = re.compile(r"[0-9a-f-]{36}|mrk-[0-9a-f]{32}")


def _tags_of(tags):
    """{key: value} of a Tags parameter or answer (Key/Value; KMS: TagKey/TagValue)."""
    if isinstance(tags, dict):
        return {str(key): str(value) for key, value in tags.items()}
    return {str(tag.get("Key", tag.get("TagKey"))): str(tag.get("Value", tag.get("TagValue", ""))) for tag in tags or []}


ASSUMED_ROLE_RE = re.compile(r"arn:(?P<partition>[a-z-]+):sts::(?P<account>[0-9]{12}):assumed-role/(?P<role>[^/]+)/[^/]+")


def _names_caller(principal, caller):
    """Whether a key policy's AWS principal is the caller: its own ARN, or for an assumed-role session its role's
    ARN (with any path: role names are unique in an account)."""
    if principal == caller:
        return True
    session = ASSUMED_ROLE_RE.fullmatch(str(caller))
    if not session:
        return False
    prefix = f"arn:{session['partition']}:iam::{session['account']}:role/"
    return str(principal).startswith(prefix) and str(principal).rsplit("/", 1)[1] == session["role"]


class _State:
    """What the record shows, as it goes, of the resource attributes that the policies' conditions read.

    KMS keys: their aliases (kms:ResourceAliases). A key made in the record
    (the CreateKey answer) starts with none. An alias the record sees created
    (CreateAlias) counts from the next task on: AWS says an alias change takes
    up to five minutes to affect authorization, so the module run that makes
    the alias does not have it. An alias seen in a ListAliases answer, or as
    the KeyId of a DescribeKey answered with the key, was there before.
    FSx file systems and backups: their tags (aws:ResourceTag/<key>), from the
    CreateFileSystem and Describe* answers, changed by TagResource/UntagResource.
    IAM OIDC providers: their tags, from CreateOpenIDConnectProvider (with the
    request's tags) and GetOpenIDConnectProvider.
    KMS key policies: the Policy of CreateKey (with the key ID of its answer)
    and of PutKeyPolicy; and the caller, from sts:GetCallerIdentity's answer
    (see KEY_POLICY_ACTIONS).
    EC2 resources: their tags (ec2:ResourceTag/<key>, aws:ResourceTag/<key>),
    from the answers of creates (with the request's TagSpecifications, which
    AWS applies in the create) and of Describe* and DescribeTags, changed by
    CreateTags/DeleteTags; launch templates by name, and route table
    associations (their route table and subnet).
    What the record never shows (a resource made before it began and never
    read in it) is AWS_ONLY.
    """

    def __init__(self):
        self.step = 0  # one per play or task marker
        self.aliases = {}  # KMS key ID: {alias: step from which it counts}
        self.alias_keys = {}  # alias name: KMS key ID
        self.tags = {}  # FSx file system or backup ID: {key: value}
        self.ec2 = {}  # EC2 "type/ID" (placement groups: "placement-group/NAME"): {key: value}
        self.launch_templates = {}  # launch template name: ID
        self.associations = {}  # route table association ID: [route table ID, subnet ID]
        self.oidc = {}  # IAM OIDC provider ARN: {key: value}
        self.key_policies = {}  # KMS key ID: the key policy the record saw set (CreateKey, PutKeyPolicy)
        self.caller = None  # the Arn sts:GetCallerIdentity last answered

    @staticmethod
    def ec2_key(resource_id):
        """"type/ID" of an EC2 resource ID (EC2_ID_RE); anything else is a placement group's name."""
        match = EC2_ID_RE.fullmatch(str(resource_id))
        return f"{EC2_ID_PREFIXES[match['prefix']]}/{resource_id}" if match else f"placement-group/{resource_id}"

    def key_id(self, value):
        """The key ID that a KeyId-like parameter names (ID, key ARN, alias name or alias ARN), when the record tells."""
        value = str(value or "")
        if value.startswith("arn:") and ":key/" in value:
            return value.rsplit("/", 1)[1]
        if value.startswith("arn:") and ":alias/" in value:
            value = value.split(":", 5)[5]
        if value.startswith("alias/"):
            return self.alias_keys.get(value)
        return value if KMS_KEY_ID_RE.fullmatch(value) else None

    def _add_alias(self, key_id, alias, since):
        self.aliases.setdefault(key_id, {}).setdefault(alias, since)
        self.alias_keys[alias] = key_id

    def context(self, arn):
        """The resource keys of ``arn`` now: {} for a resource whose keys the policies do not read."""
        if ":kms:" in arn and ":key/" in arn:
            key_id = arn.rsplit("/", 1)[1]
            if key_id in ("*", NEW_RESOURCE_ID):
                return {"kms:ResourceAliases": []}
            if key_id not in self.aliases:
                return {AWS_ONLY: True}
            return {"kms:ResourceAliases": sorted(alias for alias, since in self.aliases[key_id].items() if since <= self.step)}
        if ":fsx:" in arn and arn.rsplit(":", 1)[1].startswith(("file-system/", "backup/")):
            resource_id = arn.rsplit("/", 1)[1]
            if resource_id == NEW_RESOURCE_ID:
                return {}
            if resource_id not in self.tags:
                return {AWS_ONLY: True}
            return {RESOURCE_TAG + key: value for key, value in self.tags[resource_id].items()}
        if ":iam::" in arn and ":oidc-provider/" in arn:
            if arn not in self.oidc:
                return {AWS_ONLY: True}
            return {RESOURCE_TAG + key: value for key, value in self.oidc[arn].items()}
        if ":ec2:" in arn and "/" in arn:
            tail = arn.split(":", 5)[5]
            if tail.endswith("/" + NEW_RESOURCE_ID):
                return {}
            if tail not in self.ec2:
                return {AWS_ONLY: True}
            return {prefix + key: value for key, value in self.ec2[tail].items() for prefix in (EC2_RESOURCE_TAG, RESOURCE_TAG)}
        return {}

    def key_policy_allows(self, action, arn):
        """Whether the key policy the record saw set on the key ``arn`` gives ``action`` to the caller (KEY_POLICY_ACTIONS):
        True, False, or AWS_ONLY when the record cannot tell (a key whose policy it never saw, an unknown caller)."""
        key_id = arn.rsplit("/", 1)[1] if ":kms:" in arn and ":key/" in arn else None
        if action not in KEY_POLICY_ACTIONS or key_id is None:
            return False
        if key_id not in self.key_policies or not self.caller:
            return AWS_ONLY
        for statement in _as_list(self.key_policies[key_id].get("Statement") or []):
            if statement.get("Effect") != "Allow" or "Condition" in statement or statement.get("Resource") != "*":
                continue
            if action not in _as_list(statement.get("Action") or []):
                continue
            principals = _as_list((statement.get("Principal") or {}).get("AWS") or []) if isinstance(statement.get("Principal"), dict) else []
            if any(_names_caller(principal, self.caller) for principal in principals):
                return True
        return False

    def sent(self, entry):
        """What a request changes, once it is checked."""
        service, operation, params = entry["signing_name"], entry["operation"], entry.get("params", {})
        if service == "kms" and operation == "PutKeyPolicy" and self.key_id(params.get("KeyId")) and params.get("Policy"):
            self.key_policies[self.key_id(params["KeyId"])] = json.loads(params["Policy"])
        if service == "kms" and operation == "CreateAlias" and self.key_id(params.get("TargetKeyId")):
            self._add_alias(self.key_id(params["TargetKeyId"]), params.get("AliasName"), self.step + 1)
        elif service == "fsx" and operation in ("TagResource", "UntagResource"):
            tags = self.tags.get(str(params.get("ResourceARN", "")).rsplit("/", 1)[-1])
            if tags is not None and operation == "TagResource":
                tags.update(_tags_of(params.get("Tags")))
            elif tags is not None:
                for key in params.get("TagKeys") or []:
                    tags.pop(key, None)
        elif service == "ec2" and operation in ("CreateTags", "DeleteTags"):
            for resource_id in params.get("Resources") or []:
                tags = self.ec2.setdefault(self.ec2_key(resource_id), {}) if operation == "CreateTags" else self.ec2.get(self.ec2_key(resource_id))
                if operation == "CreateTags":
                    tags.update(_tags_of(params.get("Tags")))
                elif tags is not None:
                    for key in _tags_of(params.get("Tags")):
                        tags.pop(key, None)

    def answered(self, entry):
        """What an answer (a ``response`` line of the recorder) shows."""
        service, operation, facts = entry["signing_name"], entry["operation"], entry["response"]
        named = str((entry.get("params") or {}).get("KeyId") or "")
        if service == "kms" and operation == "CreateKey" and facts.get("KeyId"):
            self.aliases.setdefault(facts["KeyId"], {})
            # Without a Policy, AWS's default key policy: the account-root statement alone, which names no caller.
            self.key_policies[facts["KeyId"]] = json.loads((entry.get("params") or {}).get("Policy") or '{"Statement": []}')
        elif service == "sts" and operation == "GetCallerIdentity" and facts.get("Arn"):
            self.caller = facts["Arn"]
        elif service == "kms" and operation == "DescribeKey" and facts.get("KeyId") and named.startswith("alias/"):
            self._add_alias(facts["KeyId"], named, self.step)
        elif service == "kms" and operation == "ListAliases":
            for alias, key_id in facts.get("Aliases") or []:
                self._add_alias(key_id, alias, self.step)
        elif service == "fsx":
            for resource_id, tags in (facts.get("Tags") or {}).items():
                self.tags[resource_id] = dict(tags)
        elif service == "iam" and "OidcTags" in facts:
            params = entry.get("params") or {}
            arn = facts.get("Arn") or params.get("OpenIDConnectProviderArn")
            if arn:
                # CreateOpenIDConnectProvider's answer may leave out the tags the request gave it.
                self.oidc[arn] = {**_tags_of(params.get("Tags")), **_tags_of(facts["OidcTags"])}
        elif service == "ec2":
            params = entry.get("params") or {}
            created = EC2_RESOURCES.get(operation, (None, ()))[0]
            for resource_id, tags in (facts.get("Tags") or {}).items():
                key = self.ec2_key(resource_id)
                # A create's answer may leave out the tags the request gave it; AWS applied them.
                self.ec2[key] = {**(_spec_tags(params, created) if created else {}), **_tags_of(tags)}
            for resource_id, tags in (facts.get("TagsSeen") or {}).items():
                self.ec2.setdefault(self.ec2_key(resource_id), {}).update(_tags_of(tags))
            self.launch_templates.update(facts.get("LaunchTemplates") or {})
            for association, parts in (facts.get("Associations") or {}).items():
                self.associations[association] = parts or [params.get("RouteTableId"), params.get("SubnetId")]


def _spec_tags(params, resource_type=None):
    """The tags of an EC2 request's TagSpecifications (those of ``resource_type`` only, when given)."""
    tags = {}
    for spec in params.get("TagSpecifications") or []:
        if resource_type is None or spec.get("ResourceType") == resource_type:
            tags.update(_tags_of(spec.get("Tags")))
    return tags


def _ec2_resources(call, arn, state):
    """The ARNs an EC2 write names (EC2_RESOURCES); a create's new resource is ``TYPE/(new)``."""
    params = call["params"]
    created, names = EC2_RESOURCES.get(call["operation"], (None, ()))
    found = [arn(f"{created}/{NEW_RESOURCE_ID}")] if created else []
    for name in names:
        value = params.get(name)
        if not value:
            continue
        if name == "Resources":
            found += [arn(state.ec2_key(resource_id)) for resource_id in value]
        elif name == "LaunchTemplateName":
            # A name the record never resolved stays a name: AWS_ONLY.
            found.append(arn(f"launch-template/{state.launch_templates.get(value, value)}"))
        elif name == "GroupName":
            found.append(arn(f"placement-group/{value}"))
        elif name == "AssociationId":
            route_table, subnet = state.associations.get(value) or [f"(association {value})", None]
            found += [arn(f"route-table/{route_table}")] + ([arn(f"subnet/{subnet}")] if subnet else [])
        else:
            found.append(arn(f"{EC2_PARAMETER_TYPES[name]}/{value}"))
    return found


def _eks_resources(call, arn):
    params = call["params"]
    cluster = params.get("name") or params.get("clusterName")
    if not cluster:
        return []
    if params.get("nodegroupName") and call["operation"] != "CreateNodegroup":
        return [arn(f"nodegroup/{cluster}/{params['nodegroupName']}/recorded")]
    if params.get("principalArn") and call["operation"] != "CreateAccessEntry":
        return [arn(f"access-entry/{cluster}/recorded")]
    return [arn(f"cluster/{cluster}")]


def resources_of(call, account, region, state=None):
    """The ARNs a recorded request names, as far as its parameters tell (see trainium_iam_recorder.NAMED_PARAMETERS).

    ``state`` (a _State) resolves a KMS alias to its key. A create call of FSx
    names the new file system as ``file-system/(new)`` (NEW_RESOURCE_ID).
    """
    params, service = call["params"], call["signing_name"]
    state = state or _State()

    def arn(rest, svc=service, reg=region, acct=account):
        return f"arn:aws:{svc}:{reg}:{acct}:{rest}"

    found = [params[key] for key in ("resourceArn", "ResourceARN", "ResourceArn", "OpenIDConnectProviderArn") if key in params]
    if service == "iam":
        found += [arn(f"role/{params['RoleName']}", reg="")] if "RoleName" in params else []
        found += [arn(f"instance-profile/{params['InstanceProfileName']}", reg="")] if "InstanceProfileName" in params else []
    elif service == "logs" and "logGroupName" in params:
        found.append(arn(f"log-group:{params['logGroupName']}"))
    elif service == "ecr":
        names = ([params["repositoryName"]] if "repositoryName" in params else []) + list(params.get("repositoryNames", []))
        found += [arn(f"repository/{name}") for name in names]
    elif service == "ssm" and "Name" in params:
        public = params["Name"].startswith("/aws/service/")
        found.append(arn(f"parameter/{params['Name'].lstrip('/')}", acct="" if public else account))
    elif service == "eks":
        found += _eks_resources(call, arn)
    elif service == "kms":
        found += [arn(params["AliasName"])] if "AliasName" in params else []
        for key in ("KeyId", "TargetKeyId"):
            value = params.get(key, "")
            if value.startswith("arn:") and ":key/" in value:
                found.append(value)
            elif state.key_id(value):
                found.append(arn(f"key/{state.key_id(value)}"))
    elif service == "fsx":
        if call["operation"] in ("CreateFileSystem", "CreateFileSystemFromBackup"):
            found.append(arn(f"file-system/{NEW_RESOURCE_ID}"))
        found += [arn(f"file-system/{params['FileSystemId']}")] if "FileSystemId" in params else []
        found += [arn(f"backup/{params['BackupId']}")] if "BackupId" in params else []
    elif service == "ec2":
        found += _ec2_resources(call, arn, state)
    elif service == "servicequotas" and "QuotaCode" in params:
        found.append(arn(f"{params['ServiceCode']}/{params['QuotaCode']}"))
    return found


def context_of(call):
    """The request's condition keys: REQUEST_CONDITION_KEYS from its parameters, aws:RequestTag/<key> from its Tags
    (``tags`` in the EKS and ECR APIs, TagSpecifications in EC2's creates) and aws:RequestedRegion from the region
    the recorder saw (none for a record made before it recorded regions)."""
    params = call["params"]
    context = {key: params[param] for key, param in REQUEST_CONDITION_KEYS.items() if param in params}
    tags = _spec_tags(params) if call.get("signing_name") == "ec2" and "TagSpecifications" in params else _tags_of(params.get("Tags") or params.get("tags"))
    context.update({REQUEST_TAG + key: value for key, value in tags.items()})
    tag_keys = list(tags) or [str(key) for key in params.get("TagKeys") or []]
    if tag_keys:
        context["aws:TagKeys"] = tag_keys
    if call.get("region"):
        context["aws:RequestedRegion"] = call["region"]
    return context


def read_record(path, account, region):
    """The recorded requests in order: dicts with stage (or None), play, task, action, resources, context,
    resource_context ({ARN: its keys when the request was sent}) and implied_by (TAG_ON_CREATE: the create
    request whose tags AWS authorizes as this action)."""
    calls, state = [], _State()
    play = task = None
    if not pathlib.Path(path).exists():
        return calls
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "play" in entry:
            play, task = entry["play"], None
            state.step += 1
        elif "task" in entry:
            task = entry["task"]
            state.step += 1
        elif "response" in entry:
            state.answered(entry)
        else:
            first_word = (play or "").split(" ", 1)[0]
            call = {
                "stage": PLAY_STAGES.get(first_word), "play": play, "task": task, "action": action_of(entry),
                "resources": resources_of(entry, account, region, state), "context": context_of(entry), "implied_by": None,
            }
            call["resource_context"] = {arn: state.context(arn) for arn in call["resources"]}
            call["key_policy"] = {arn: state.key_policy_allows(call["action"], arn) for arn in call["resources"]}
            calls.append(call)
            if call["action"] in TAG_ON_CREATE and _tags_of(entry["params"].get("Tags")):
                service = entry["signing_name"]
                new = (f"arn:aws:kms:{region}:{account}:key/*" if service == "kms"
                       else f"arn:aws:{service}:{region}:{account}:file-system/{NEW_RESOURCE_ID}")
                calls.append({**call, "action": TAG_ON_CREATE[call["action"]], "resources": [new],
                              "resource_context": {new: state.context(new)}, "key_policy": {}, "implied_by": call["action"]})
            created = EC2_RESOURCES.get(entry["operation"], (None, ()))[0] if entry["signing_name"] == "ec2" else None
            if created and entry["params"].get("TagSpecifications"):
                new = f"arn:aws:ec2:{region}:{account}:{created}/{NEW_RESOURCE_ID}"
                calls.append({**call, "action": "ec2:CreateTags", "resources": [new], "resource_context": {new: {}}, "key_policy": {},
                              "context": {**call["context"], "ec2:CreateAction": entry["operation"]}, "implied_by": call["action"]})
            state.sent(entry)
    return calls


def _without_aws_only(resource_context):
    return {arn: {key: value for key, value in keys.items() if key != AWS_ONLY} for arn, keys in resource_context.items()}


def problems_of_record(path, values, unused=False):
    """What the record at ``path`` says is wrong with the policies (empty: nothing), and a report of it.

    Every request must belong to a stage play and be allowed by that stage's
    policy (``values`` replace the placeholders); with ``unused``, each policy
    action must have been requested in its stage or be in NOT_RECORDED. The
    report names what was left to AWS (AWS_ONLY) and NOT_RECORDED entries that
    can go.
    """
    calls = read_record(path, values["ACCOUNT_ID"], values["REGION"])
    policies = {stage: load_policy(stage, values) for stage in STAGES}
    problems, report, seen = [], [], {stage: set() for stage in STAGES}
    if not calls:
        problems.append(f"no AWS request recorded in {path}: the botocore plugin trainium_iam_recorder did not load")
    for call in calls:
        action = call["action"] + (f" (the tags of {call['implied_by']})" if call["implied_by"] else "")
        where = f"{action} in play {call['play']!r}, task {call['task']!r}"
        if call["action"] in NEEDS_NO_PERMISSION:
            continue
        if call["stage"] is None:
            problems.append(f"{where}: a play that is no stage ({', '.join(PLAY_STAGES)}) called AWS")
            continue
        seen[call["stage"]].add(call["action"])
        named = f" on {', '.join(call['resources'])}" if call["resources"] else ""
        policy = policies[call["stage"]]
        by_key_policy = call.get("key_policy") or {}
        if call["resources"] and all(by_key_policy.get(arn) for arn in call["resources"]):
            # KEY_POLICY_ACTIONS on the secrets key: its own key policy allows them (not the IAM policies).
            if any(by_key_policy[arn] == AWS_ONLY for arn in call["resources"]):
                report.append(f"{call['stage']}: {where}{named}: allowed if the key's policy names the caller, "
                              "which the record does not show (AWS checks it)")
            continue
        if not allows(policy, call["action"], call["resources"], call["context"], call["resource_context"]):
            context = f" with {call['context']}" if call["context"] else ""
            state = {arn: keys for arn, keys in call["resource_context"].items() if keys}
            context += f" (resources: {state})" if state else ""
            problems.append(f"{where}{named}{context}: not allowed by {policy_names(call['stage'])}")
        elif not allows(policy, call["action"], call["resources"], call["context"], _without_aws_only(call["resource_context"])):
            report.append(f"{call['stage']}: {where}{named}: allowed if the resource meets its condition, "
                          "which the record does not show (AWS checks it)")
    for stage in STAGES:
        if not unused:
            break
        allowed = NOT_RECORDED[stage]
        for action in policy_actions(policies[stage]):
            requested = any(_matches(action, made, case_sensitive=False) for made in seen[stage])
            if not requested and action not in allowed:
                problems.append(f"{policy_names(stage)} allows {action}, which no {stage} run requested: "
                                "remove it, or add it to NOT_RECORDED in tests/iam/iam_policy.py with the reason")
            elif requested and action in allowed:
                report.append(f"{stage}: {action} is now requested; its NOT_RECORDED entry can go")
    return sorted(set(problems)), sorted(set(report))


# ---------------------------------------------------------- reading plugins/

@functools.lru_cache(maxsize=None)
def _service_models():
    import botocore.session  # pylint: disable=import-outside-toplevel
    from botocore import xform_name  # pylint: disable=import-outside-toplevel

    return botocore.session.get_session(), xform_name


@functools.lru_cache(maxsize=None)
def _operations(service):
    """{snake_case name: OperationName} of a botocore service, and its IAM prefix."""
    session, xform_name = _service_models()
    model = session.get_service_model(service)
    return {xform_name(op): op for op in model.operation_names}, SERVICE_PREFIXES.get(model.signing_name, model.signing_name)


def used_plugins(root=ROOT):
    """The names ``trainium.eks.<name>`` that the playbooks and roles use (modules, lookups, filters, roles)."""
    text = "".join(path.read_text(encoding="utf-8") for pattern in ("site.yml", "playbooks/**/*.yml", "roles/**/*.yml")
                   for path in sorted(root.glob(pattern)))
    return set(re.findall(r"trainium\.eks\.([a-z_0-9]+)", text))


def static_actions(plugins=ROOT / "plugins", used=None):
    """{IAM action: [files]} of every boto3 operation that the plugins the stages run can call.

    The files read are the modules and lookups named in ``used`` (default:
    ``used_plugins()``; a module no playbook or role runs belongs to no stage
    yet) and the module_utils they import. An operation is a method called
    on, or a string passed around for, a client of the services the modules
    create (``module.client("ec2")``, ``session.create_client("sts")``): the
    file's own clients and, for module_utils, those of every file that
    imports it. A string in a dict entry keyed by a service name (the tag
    calls of trainium_common) belongs to that service only.
    """
    session, _xform = _service_models()
    available = set(session.get_available_services())
    used = used_plugins(plugins.parent) if used is None else used
    files = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(plugins.rglob("*.py"))}
    created, imports = {}, {}
    for path, tree in files.items():
        created[path], imports[path] = set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in ("client", "create_client") and node.args[0].value in available:
                    created[path].add(node.args[0].value)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ansible_collections.trainium.eks.plugins.module_utils"):
                tail = node.module.rsplit(".", 1)[-1]
                targets = [alias.name for alias in node.names] if tail == "module_utils" else [tail]
                imports[path].update(plugins / "module_utils" / f"{target}.py" for target in targets)
    reachable = {path for path in files if path.parent.name in ("modules", "lookup") and path.stem in used}
    while True:
        more = {target for path in reachable for target in imports[path] if target in files} - reachable
        if not more:
            break
        reachable |= more
    files = {path: tree for path, tree in files.items() if path in reachable}
    created = {path: found for path, found in created.items() if path in reachable}
    services = {path: set(found) for path, found in created.items()}
    changed = True
    while changed:
        changed = False
        for path in services:
            for target in imports[path] & set(services):
                if not services[path] <= services[target]:
                    services[target] |= services[path]
                    changed = True
    found = {}
    for path, tree in files.items():
        keyed = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value in available:
                        for inner in ast.walk(value):
                            if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                                keyed[id(inner)] = key.value
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                names = [(node.func.attr, services[path])]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", node.value):
                names = [(node.value, {keyed[id(node)]} if id(node) in keyed else services[path])]
            else:
                continue
            for name, candidates in names:
                for service in candidates:
                    operations, prefix = _operations(service)
                    if name in operations:
                        found.setdefault(f"{prefix}:{operations[name]}", set()).add(str(path.relative_to(plugins.parent)))
    return {action: sorted(paths) for action, paths in sorted(found.items())}


def model_has_operation(action):
    """Whether ``action`` (prefix:Operation) is an operation of its service's botocore model."""
    prefix, operation = action.split(":", 1)
    return operation in _operations(BOTOCORE_NAMES.get(prefix, prefix))[0].values()
