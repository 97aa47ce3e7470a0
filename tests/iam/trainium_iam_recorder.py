# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A botocore client plugin that appends every AWS request a process sends to a file.

It sees the requests of every Python process of a playbook run that uses
botocore: ansible-playbook itself (lookups such as amazon.aws.ssm_parameter),
its workers and every module (the collection's and amazon.aws's). Enabled by
the environment alone, which the module processes inherit from
ansible-playbook (``record_calls`` in tests/iam/iam_policy.py sets it):

    PYTHONPATH=tests/iam
    BOTOCORE_EXPERIMENTAL__PLUGINS=trainium_iam=trainium_iam_recorder
    TRAINIUM_IAM_RECORD=/path/of/the/record.jsonl

botocore calls ``initialize_client_plugin`` for every client it creates. One
JSON line per HTTP request sent (retries included): the service's signing
name and endpoint prefix, the operation, and the request parameters that
name an IAM resource or carry a condition key (``NAMED_PARAMETERS``), so that
the test can check the policies' resource scoping too. And one ``response``
line per successful answer that shows what conditions on a resource read
(``answer_facts``: the aliases of KMS keys, the tags of FSx file systems and
backups, of EC2 resources and of IAM OIDC providers, and the caller's ARN).
Nothing is recorded without ``TRAINIUM_IAM_RECORD``; nothing is ever changed
in a request or an answer.

botocore marks its plugin hook (``botocore/plugin.py``) private and may
change it; botocore is pinned in requirements.txt, and the IAM test fails
when a run records nothing, so a change shows at the next version bump.
"""

from __future__ import annotations

import json
import os
import threading

RECORD_VARIABLE = "TRAINIUM_IAM_RECORD"
# Parameters whose values the policies scope resources by.
NAMED_PARAMETERS = (
    "AWSServiceName", "AliasName", "BackupId", "FileSystemId", "InstanceProfileName", "KeyId", "Name",
    "OpenIDConnectProviderArn", "PolicyArn", "QuotaCode", "ResourceARN", "ResourceArn", "RoleName", "ServiceCode",
    # KMS: the key policy of CreateKey and PutKeyPolicy (what the key's lifecycle actions are allowed by).
    "Policy",
    "TagKeys", "Tags", "TargetKeyId", "clusterName", "logGroupName", "name", "nodegroupName", "principalArn",
    "repositoryName", "repositoryNames", "resourceArn",
    # EKS's and ECR's request tags (aws:RequestTag/<key>, e.g. on eks:CreateCluster).
    "tags",
    # EC2: the resources a request acts on (tests/iam/iam_policy.py EC2_RESOURCES) and the tags of a create.
    "AllocationId", "AssociationId", "GroupId", "GroupName", "InternetGatewayId", "LaunchTemplateId", "LaunchTemplateName",
    "NatGatewayId", "Resources", "RouteTableId", "SubnetId", "TagSpecifications", "VpcId",
)
# EC2 answers that show resources and their tags: (the list or object key, the ID key); see answer_facts.
EC2_ANSWER_KEYS = (
    ("Vpc", "VpcId"), ("Vpcs", "VpcId"), ("Subnet", "SubnetId"), ("Subnets", "SubnetId"),
    ("SecurityGroups", "GroupId"), ("RouteTable", "RouteTableId"), ("RouteTables", "RouteTableId"),
    ("InternetGateway", "InternetGatewayId"), ("InternetGateways", "InternetGatewayId"),
    ("NatGateway", "NatGatewayId"), ("NatGateways", "NatGatewayId"), ("Addresses", "AllocationId"),
    ("LaunchTemplate", "LaunchTemplateId"), ("LaunchTemplates", "LaunchTemplateId"),
    ("PlacementGroup", "GroupName"), ("PlacementGroups", "GroupName"),
)

_LOCAL = threading.local()


def _remember_parameters(params, **_kwargs):
    _LOCAL.params = {key: params[key] for key in NAMED_PARAMETERS if key in (params or {})}


def _record(client):
    model = client.meta.service_model

    def record(request, event_name, **_kwargs):
        path = os.environ.get(RECORD_VARIABLE)
        if not path:
            return
        line = {
            "signing_name": model.signing_name,
            "endpoint_prefix": model.endpoint_prefix,
            "operation": event_name.rsplit(".", 1)[-1],
            "params": getattr(_LOCAL, "params", {}),
            "method": request.method,
            "pid": os.getpid(),
            # aws:RequestedRegion
            "region": client.meta.region_name,
        }
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, sort_keys=True, default=str) + "\n")

    return record


def _tags(item):
    return {tag.get("Key"): tag.get("Value") for tag in item.get("Tags") or []}


def answer_facts(service, operation, parsed):
    """What an answer shows of the resources whose attributes the policies' conditions read; None: nothing."""
    if service == "kms" and operation in ("CreateKey", "DescribeKey"):
        return {"KeyId": (parsed.get("KeyMetadata") or {}).get("KeyId")}
    if service == "sts" and operation == "GetCallerIdentity":
        # The principal a key policy must name (tests/iam/iam_policy.py KEY_POLICY_ACTIONS).
        return {"Arn": parsed.get("Arn")}
    if service == "kms" and operation == "ListAliases":
        return {"Aliases": [[alias["AliasName"], alias["TargetKeyId"]] for alias in parsed.get("Aliases") or [] if alias.get("TargetKeyId")]}
    if service == "ec2":
        return _ec2_facts(operation, parsed)
    if service == "iam" and operation in ("CreateOpenIDConnectProvider", "GetOpenIDConnectProvider"):
        # Create answers with the ARN (and the tags); Get with the tags, the ARN is the request's (the line's params).
        return {"OidcTags": _tags(parsed), "Arn": parsed.get("OpenIDConnectProviderArn")}
    if service == "fsx" and operation in ("CreateFileSystem", "CreateFileSystemFromBackup"):
        found = [parsed.get("FileSystem") or {}]
    elif service == "fsx" and operation == "DescribeFileSystems":
        found = parsed.get("FileSystems") or []
    elif service == "fsx" and operation == "DescribeBackups":
        return {"Tags": {backup["BackupId"]: _tags(backup) for backup in parsed.get("Backups") or [] if backup.get("BackupId")}}
    else:
        return None
    return {"Tags": {fs["FileSystemId"]: _tags(fs) for fs in found if fs.get("FileSystemId")}}


def _ec2_facts(operation, parsed):
    """EC2: {"Tags": {resource ID: tags}} of the resources an answer shows (EC2_ANSWER_KEYS; a create's answer too: the
    ID AWS chose), {"LaunchTemplates": {name: ID}}, {"Associations": {association ID: [route table ID, subnet ID]}},
    and {"TagsSeen": {resource ID: tags}} from DescribeTags (only the tags its filters asked for); None: nothing."""
    facts = {"Tags": {}, "LaunchTemplates": {}, "Associations": {}, "TagsSeen": {}}
    for key, id_key in EC2_ANSWER_KEYS:
        found = parsed.get(key)
        for item in found if isinstance(found, list) else [found] if isinstance(found, dict) else []:
            if item.get(id_key):
                facts["Tags"][item[id_key]] = _tags(item)
            if key.startswith("LaunchTemplate") and item.get("LaunchTemplateName") and item.get("LaunchTemplateId"):
                facts["LaunchTemplates"][item["LaunchTemplateName"]] = item["LaunchTemplateId"]
            for association in item.get("Associations") or [] if key.startswith("RouteTable") else []:
                if association.get("RouteTableAssociationId") and association.get("SubnetId"):
                    facts["Associations"][association["RouteTableAssociationId"]] = [item[id_key], association["SubnetId"]]
    # CreateSecurityGroup and AllocateAddress answer with the ID alone (and the tags of the request, if any).
    for id_key in ("GroupId", "AllocationId"):
        if isinstance(parsed.get(id_key), str):
            facts["Tags"][parsed[id_key]] = _tags(parsed)
    # AssociateRouteTable: the association's route table and subnet are the request's (the line carries its params).
    if operation == "AssociateRouteTable" and isinstance(parsed.get("AssociationId"), str):
        facts["Associations"][parsed["AssociationId"]] = []
    for tag in parsed.get("Tags") or [] if operation == "DescribeTags" else []:
        facts["TagsSeen"].setdefault(tag.get("ResourceId"), {})[tag.get("Key")] = tag.get("Value")
    facts = {key: value for key, value in facts.items() if value}
    return facts or None


def _record_answer(http_response, parsed, model=None, **_kwargs):
    """after-call: a ``response`` line for an answer that shows what conditions read (answer_facts)."""
    path = os.environ.get(RECORD_VARIABLE)
    if not path or model is None or getattr(http_response, "status_code", 500) >= 300:
        return
    try:
        facts = answer_facts(model.service_model.signing_name, model.name, parsed or {})
    except (AttributeError, KeyError, TypeError):
        return
    if facts is None:
        return
    line = {"signing_name": model.service_model.signing_name, "operation": model.name, "response": facts,
            "params": getattr(_LOCAL, "params", {}), "pid": os.getpid()}
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, sort_keys=True, default=str) + "\n")


def initialize_client_plugin(client):
    """botocore's hook: called once for every client created while the plugin is enabled."""
    client.meta.events.register("before-parameter-build", _remember_parameters, unique_id="trainium-iam-params")
    client.meta.events.register("before-send", _record(client), unique_id="trainium-iam-record")
    client.meta.events.register("after-call", _record_answer, unique_id="trainium-iam-answer")
