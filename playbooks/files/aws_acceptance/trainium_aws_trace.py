# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A botocore client plugin that appends every AWS call of a run to a trace file (one JSON line per call).

The acceptance run (playbooks/aws_acceptance.yml) enables it for every
ansible-playbook it starts, and through them for every module: botocore
loads the plugins the environment names for each client it creates:

    PYTHONPATH=<this directory>
    BOTOCORE_EXPERIMENTAL__PLUGINS=trainium_aws_trace=trainium_aws_trace
    TRAINIUM_AWS_TRACE=/path/of/trace.jsonl

Each line: the service (its signing name), the operation, the request's
parameters with secrets and bulky values replaced (``redact``), the error
code AWS answered (null for a success), the time and the process. botocore
retries inside one call: a line is the call's final outcome.
tools/compare-trace.py compares two such traces. botocore marks its plugin
hook private; botocore is pinned in requirements.txt, and the acceptance
test fails when a run records nothing.
"""

from __future__ import annotations

import datetime
import json
import os
import re

TRACE_VARIABLE = "TRAINIUM_AWS_TRACE"
# Parameter names whose values are never written: credentials, tokens, keys, and what may carry one (the user
# data script, an add-on's configuration values, a plaintext or a body). Matched case-insensitively against every
# key at every depth. (Not "private" alone: endpointPrivateAccess is a setting the comparison must see.)
SECRET_KEY = re.compile(r"secret|password|passphrase|token|credential|privatekey|authorization|userdata|plaintext|"
                        r"configurationvalues|^body$|^(ssm)?parametervalue$", re.IGNORECASE)
_KEY = "trainium_aws_trace_params"


def redact(value, key=""):
    """``value`` with what must not reach a file replaced: secrets by ``<redacted>``, bytes by their length."""
    if key and SECRET_KEY.search(key):
        return "<redacted>"
    if isinstance(value, dict):
        return {name: redact(item, str(name)) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _remember(params, model=None, context=None, **_kwargs):
    """before-parameter-build: what the call is and what it asks, kept in the call's own context (never raises)."""
    try:
        if context is not None and model is not None:
            context[_KEY] = {"service": model.service_model.signing_name, "operation": model.name, "params": redact(params or {})}
    except Exception:  # pylint: disable=broad-exception-caught
        pass


def _write(context, error):
    path = os.environ.get(TRACE_VARIABLE)
    call = (context or {}).get(_KEY)
    if not path or not call:
        return
    line = {
        **call,
        "error": error,
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
        "pid": os.getpid(),
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, sort_keys=True, default=str) + "\n")


def _after_call(http_response=None, parsed=None, context=None, **_kwargs):
    """after-call: the answer's error code (null for a success). botocore hands a handler's exception to the caller,
    so nothing here may raise: a full disk must not turn AWS's success into a failure of the run."""
    try:
        error = None
        if getattr(http_response, "status_code", 200) >= 300:
            error = ((parsed or {}).get("Error") or {}).get("Code") or f"HTTP{http_response.status_code}"
        _write(context, error)
    except Exception:  # pylint: disable=broad-exception-caught
        pass


def _after_call_error(exception=None, context=None, **_kwargs):
    """after-call-error: no answer at all (a connection that failed): the exception's class."""
    try:
        _write(context, type(exception).__name__ if exception is not None else "Error")
    except Exception:  # pylint: disable=broad-exception-caught
        pass


def initialize_client_plugin(client):
    """botocore's hook: called once for every client created while the plugin is enabled."""
    client.meta.events.register("before-parameter-build", _remember, unique_id="trainium-aws-trace-params")
    client.meta.events.register("after-call", _after_call, unique_id="trainium-aws-trace-call")
    client.meta.events.register("after-call-error", _after_call_error, unique_id="trainium-aws-trace-error")
