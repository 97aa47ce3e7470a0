# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator's IAM policies (docs/iam/) checked against the AWS calls the collection makes.

Two sources of calls, two tests:

- recorded: tests/integration/test_infrastructure.py runs the playbooks with
  ``record_calls`` (the botocore plugin trainium_iam_recorder.py and the
  callback callback/trainium_iam_stage.py) and ``problems_of_record`` says whether
  the policy of each stage allows every request of that stage - action,
  resource names and condition keys where the request names them - and that
  each policy action was requested or is in ``NOT_RECORDED`` with a reason;
- read from the code: tests/unit/tools/test_iam_policy_files.py asserts that
  every boto3 operation of the modules the playbooks and roles run
  (``static_actions``, paths the rehearsal does not take included) is allowed
  by one of the policies.

The policy files hold placeholders (``PLACEHOLDERS``) that the operator
replaces (docs/iam-policy.md); the checks replace them with the rehearsal's
values. The evaluation is IAM's for Allow statements: actions and resources
with ``*`` and ``?`` wildcards, the condition operators in ``OPERATORS``.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
POLICY_DIR = ROOT / "docs" / "iam"
STAGES = ("preflight", "infrastructure", "teardown")
# The first word of a play's name says its stage; the other plays (Validate, Summary) call no AWS API.
PLAY_STAGES = {"Preflight": "preflight", "Infrastructure": "infrastructure", "Teardown": "teardown"}
PLACEHOLDERS = ("ACCOUNT_ID", "REGION", "CLUSTER_NAME", "REPOSITORY_NAME")
# IAM's limit for a customer managed policy, whitespace not counted.
MANAGED_POLICY_MAX_CHARS = 6144
OPERATORS = ("StringEquals", "StringLike", "ArnEquals", "ArnLike", "Bool")
# Condition keys a recorded request carries (from its parameters) ...
REQUEST_CONDITION_KEYS = {"iam:PolicyARN": "PolicyArn", "iam:AWSServiceName": "AWSServiceName"}
# ... and keys AWS sets from what it does with the request, which the rehearsal cannot show.
UNSEEN_CONDITION_KEYS = {
    "iam:PassedToService": "EKS checks iam:PassRole itself when it takes the role in CreateCluster / CreateNodegroup",
    "kms:GrantIsForAWSResource": "EKS creates the grant on the secrets key with the caller's permissions",
}
# IAM actions that are no API operation of their service's model.
NON_API_ACTIONS = {"iam:PassRole"}
# IAM service prefixes of the botocore services the collection uses (signing names).
SERVICE_PREFIXES = {"ec2": "ec2", "ecr": "ecr", "eks": "eks", "fsx": "fsx", "iam": "iam", "kms": "kms", "logs": "logs",
                    "servicequotas": "servicequotas", "ssm": "ssm", "sts": "sts"}
BOTOCORE_NAMES = {"servicequotas": "service-quotas"}

NEEDS_NO_PERMISSION = {
    "sts:GetCallerIdentity": "STS answers it for every principal; no policy allows or denies it",
    "iam:ListAccountAliases": "amazon.aws.aws_caller_info (eks_cluster, check mode) goes on without the alias when refused",
}

_UPDATE = "changes an existing deployment; the recorded runs create it, rerun it unchanged and park a pool"
_TAG_ON_CREATE = "AWS authorizes the tags of a create call separately; the call itself is the create"
_ACCESS_ENTRIES = "eks_cluster's access entries (issue 9): recorded once the module manages them on the rehearsal"
# Policy actions that the recorded runs of test_infrastructure.py do not request, and why they stay.
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
        "ecr:PutImageScanningConfiguration": _UPDATE,
        "ecr:PutImageTagMutability": _UPDATE,
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
        "eks:UpdateNodegroupVersion": "a Kubernetes upgrade or a new launch template version",
        "fsx:CreateFileSystemFromBackup": "fsx_lustre_restore_backup: the file system made again from a backup",
        "fsx:DescribeBackups": "fsx_lustre_restore_backup: the backup to restore from",
        "fsx:TagResource": _TAG_ON_CREATE + "; and tag updates",
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
        "kms:CancelKeyDeletion": "a run within the deletion window after a teardown takes the key back",
        "kms:CreateGrant": "EKS grants itself the secrets key in CreateCluster (AWS only)",
        "kms:EnableKey": "a secrets key disabled by hand is enabled again (kms_key enabled: true)",
        "kms:TagResource": _TAG_ON_CREATE + "; and tag updates",
        "kms:UntagResource": _UPDATE,
        "kms:UpdateKeyDescription": _UPDATE,
        "logs:TagLogGroup": _UPDATE,
        "logs:TagResource": _TAG_ON_CREATE,
        "logs:UntagLogGroup": _UPDATE,
        "logs:UntagResource": _UPDATE,
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

def policy_path(stage):
    return POLICY_DIR / f"trainium-eks-{stage}.json"


def render(text, values):
    """The policy text with each placeholder replaced by values[placeholder]."""
    for name in PLACEHOLDERS:
        text = text.replace(name, values[name])
    return text


def load_policy(stage, values=None):
    text = policy_path(stage).read_text(encoding="utf-8")
    return json.loads(render(text, values) if values else text)


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


def _condition_holds(operator, key, wanted, context):
    if key not in context:
        return key in UNSEEN_CONDITION_KEYS
    given = context[key]
    wanted = [str(w) for w in _as_list(wanted)]
    if operator in ("StringEquals", "ArnEquals"):
        return given in wanted
    if operator in ("StringLike", "ArnLike"):
        return any(_matches(w, given) for w in wanted)
    if operator == "Bool":
        return str(given).lower() in [w.lower() for w in wanted]
    return False


def allows(policy, action, resources=(), context=None):
    """Whether an Allow statement of ``policy`` covers ``action`` on every one of ``resources``.

    ``resources`` are the ARNs the request names (none: only the action is
    checked); ``context`` the condition keys it carries. A condition on a
    key the request does not carry holds only for UNSEEN_CONDITION_KEYS.
    """
    context = context or {}

    def covered(resource):
        for statement in policy["Statement"]:
            if statement.get("Effect") != "Allow":
                continue
            if not any(_matches(pattern, action, case_sensitive=False) for pattern in _as_list(statement["Action"])):
                continue
            if resource is not None and not any(_matches(pattern, resource) for pattern in _as_list(statement["Resource"])):
                continue
            if all(_condition_holds(operator, key, wanted, context)
                   for operator, keys in statement.get("Condition", {}).items() for key, wanted in keys.items()):
                return True
        return False

    return all(covered(resource) for resource in (list(resources) or [None]))


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


def action_of(call):
    prefix = SERVICE_PREFIXES.get(call["signing_name"])
    assert prefix, f"no IAM prefix known for the AWS service {call['signing_name']} (tests/iam/iam_policy.py SERVICE_PREFIXES)"
    return f"{prefix}:{call['operation']}"


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


def resources_of(call, account, region):
    """The ARNs a recorded request names, as far as its parameters tell (see trainium_iam_recorder.NAMED_PARAMETERS)."""
    params, service = call["params"], call["signing_name"]

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
            if value.startswith("arn:"):
                found.append(value)
            elif re.fullmatch(r"[0-9a-f-]{36}|mrk-[0-9a-f]{32}", value):
                found.append(arn(f"key/{value}"))
    elif service == "fsx" and "FileSystemId" in params:
        found.append(arn(f"file-system/{params['FileSystemId']}"))
    elif service == "servicequotas" and "QuotaCode" in params:
        found.append(arn(f"{params['ServiceCode']}/{params['QuotaCode']}"))
    return found


def context_of(call):
    return {key: call["params"][param] for key, param in REQUEST_CONDITION_KEYS.items() if param in call["params"]}


def read_record(path, account, region):
    """The recorded requests in order: dicts with stage (or None), play, task, action, resources, context."""
    calls = []
    play = task = None
    if not pathlib.Path(path).exists():
        return calls
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "play" in entry:
            play, task = entry["play"], None
        elif "task" in entry:
            task = entry["task"]
        else:
            first_word = (play or "").split(" ", 1)[0]
            calls.append({
                "stage": PLAY_STAGES.get(first_word), "play": play, "task": task, "action": action_of(entry),
                "resources": resources_of(entry, account, region), "context": context_of(entry),
            })
    return calls


def problems_of_record(path, values, unused=False):
    """What the record at ``path`` says is wrong with the policies (empty: nothing), and a report of it.

    Every request must belong to a stage play and be allowed by that stage's
    policy (``values`` replace the placeholders); with ``unused``, each policy
    action must have been requested in its stage or be in NOT_RECORDED.
    """
    calls = read_record(path, values["ACCOUNT_ID"], values["REGION"])
    policies = {stage: load_policy(stage, values) for stage in STAGES}
    problems, seen = [], {stage: set() for stage in STAGES}
    if not calls:
        problems.append(f"no AWS request recorded in {path}: the botocore plugin trainium_iam_recorder did not load")
    for call in calls:
        where = f"{call['action']} in play {call['play']!r}, task {call['task']!r}"
        if call["action"] in NEEDS_NO_PERMISSION:
            continue
        if call["stage"] is None:
            problems.append(f"{where}: a play that is no stage ({', '.join(PLAY_STAGES)}) called AWS")
            continue
        seen[call["stage"]].add(call["action"])
        if not allows(policies[call["stage"]], call["action"], call["resources"], call["context"]):
            named = f" on {', '.join(call['resources'])}" if call["resources"] else ""
            context = f" with {call['context']}" if call["context"] else ""
            problems.append(f"{where}{named}{context}: not allowed by {policy_path(call['stage']).name}")
    report = []
    for stage in STAGES:
        if not unused:
            break
        allowed = NOT_RECORDED[stage]
        for action in policy_actions(policies[stage]):
            requested = any(_matches(action, made, case_sensitive=False) for made in seen[stage])
            if not requested and action not in allowed:
                problems.append(f"{policy_path(stage).name} allows {action}, which no {stage} run requested: "
                                "remove it, or add it to NOT_RECORDED in tests/iam/iam_policy.py with the reason")
            elif requested and action in allowed:
                report.append(f"{stage}: {action} is now requested; its NOT_RECORDED entry can go")
    return sorted(set(problems)), report


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
