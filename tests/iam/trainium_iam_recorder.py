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
backups). Nothing is recorded without ``TRAINIUM_IAM_RECORD``; nothing is
ever changed in a request or an answer.

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
    "TagKeys", "Tags", "TargetKeyId", "clusterName", "logGroupName", "name", "nodegroupName", "principalArn",
    "repositoryName", "repositoryNames", "resourceArn",
    # EKS's and ECR's request tags (aws:RequestTag/<key>, e.g. on eks:CreateCluster).
    "tags",
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
    if service == "kms" and operation == "ListAliases":
        return {"Aliases": [[alias["AliasName"], alias["TargetKeyId"]] for alias in parsed.get("Aliases") or [] if alias.get("TargetKeyId")]}
    if service == "fsx" and operation in ("CreateFileSystem", "CreateFileSystemFromBackup"):
        found = [parsed.get("FileSystem") or {}]
    elif service == "fsx" and operation == "DescribeFileSystems":
        found = parsed.get("FileSystems") or []
    elif service == "fsx" and operation == "DescribeBackups":
        return {"Tags": {backup["BackupId"]: _tags(backup) for backup in parsed.get("Backups") or [] if backup.get("BackupId")}}
    else:
        return None
    return {"Tags": {fs["FileSystemId"]: _tags(fs) for fs in found if fs.get("FileSystemId")}}


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
