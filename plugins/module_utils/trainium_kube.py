# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""How the collection's own Kubernetes modules reach the cluster: one client
from a kubeconfig, one JSON call with one error wrapper, one paged list.

The playbooks use kubernetes.core for objects; the modules that read or
watch many objects in one task (``neuron_job``, ``neuron_node_check``) call
the API through these functions, so that the kubeconfig fallback, the error
text and the paging are written once.
"""

from __future__ import annotations

import json
import os

try:
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException
except ImportError:
    kube_config = None
    ConfigException = OSError

HAS_KUBERNETES = kube_config is not None
# What a wrong kubeconfig or an unreachable cluster raises before any call.
CONNECTION_ERRORS = (ConfigException, OSError)


class KubeError(Exception):
    """A Kubernetes call that failed, with what was asked and the API's reason."""


def api_client(kubeconfig=None, context=None):
    """A kubernetes ApiClient from ``kubeconfig``, else K8S_AUTH_KUBECONFIG, KUBECONFIG or ~/.kube/config (as kubernetes.core)."""
    path = kubeconfig or os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG") or None
    return kube_config.new_client_from_config(config_file=path, context=context)


def reason(error):
    """A short reason of a kubernetes client error: the API's message when it gives one."""
    body = getattr(error, "body", None)
    if body:
        try:
            message = json.loads(body).get("message")
            if message:
                return f"{getattr(error, 'status', '')} {message}".strip()
        except (ValueError, AttributeError):
            pass
    status = getattr(error, "status", None)
    return f"{status} {getattr(error, 'reason', '')}".strip() if status else str(error)


def call_json(what, call, *args, missing_ok=False, error=KubeError, **kwargs):
    """``call`` (a kubernetes client method) answered as JSON; None for 404 with ``missing_ok``; ``error`` otherwise."""
    try:
        answer = call(*args, _preload_content=False, **kwargs)
    except Exception as e:  # ApiException, urllib3 and socket errors alike
        if missing_ok and getattr(e, "status", None) == 404:
            return None
        raise error(f"{what} failed: {reason(e)}") from e
    return json.loads(answer.data) if hasattr(answer, "data") else answer


def list_pages(what, call, page_size, error=KubeError, **kwargs):
    """Every item of a list call, ``page_size`` at a time (limit and continue); yields each page's items."""
    token = None
    while True:
        data = call_json(what, call, limit=page_size, _continue=token, error=error, **kwargs) or {}
        yield data.get("items") or []
        token = (data.get("metadata") or {}).get("continue")
        if not token:
            return
