# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""How the collection's own Kubernetes modules reach the cluster: one client
from a kubeconfig, one JSON call with one error wrapper, one paged list.

The playbooks use kubernetes.core for objects; the modules that read, watch
or delete many objects in one task (``neuron_job``, ``neuron_node_check``,
``labelled_objects_absent``) call the API through these functions, so that
the kubeconfig fallback, the error text and the paging are written once.
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


# Query parameters by their Python names, as the kubernetes client's typed methods take them.
QUERY_NAMES = {"_continue": "continue", "label_selector": "labelSelector", "field_selector": "fieldSelector"}


def path_call(api, method, path, body=None):
    """A client method for any API ``path`` (kinds with no typed method), for ``call_json`` and ``list_pages``.

    Its keyword arguments are query parameters (``label_selector`` sent as
    labelSelector, ``_continue`` as continue; None left out); ``body`` is the
    JSON it sends. An answer outside 2xx raises the client's ApiException.
    """
    # The answer is always the raw one: _preload_content is taken as the typed methods take it, and not read.
    def call(_preload_content=False, **query):  # pylint: disable=unused-argument
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel

        params = [(QUERY_NAMES.get(key, key), value) for key, value in query.items() if value is not None]
        request = api.param_serialize(method, path, query_params=params, body=body, auth_settings=["BearerToken"],
                                      header_params={"Accept": "application/json", "Content-Type": "application/json"})
        answer = api.call_api(*request)
        answer.read()
        if not 200 <= answer.status <= 299:
            raise ApiException(http_resp=answer)
        return answer
    return call


def list_pages(what, call, page_size, error=KubeError, **kwargs):
    """Every item of a list call, ``page_size`` at a time (limit and continue); yields each page's items."""
    token = None
    while True:
        data = call_json(what, call, limit=page_size, _continue=token, error=error, **kwargs) or {}
        yield data.get("items") or []
        token = (data.get("metadata") or {}).get("continue")
        if not token:
            return
