# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Kubernetes client helper of the collection's modules: JSON calls
with one error wrapper (the API's own message, 404 as missing when asked),
paged lists, the kubeconfig fallback, against the kubernetes client's own
ApiException and a real kubeconfig file."""

from __future__ import annotations

import json
import types

import pytest
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTResponse

from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube


class Answer:
    def __init__(self, body):
        self.data = json.dumps(body).encode()


def refused(status, message):
    error = ApiException(status=status, reason="Not Found" if status == 404 else "Forbidden")
    error.body = json.dumps({"kind": "Status", "message": message})
    return error


def test_call_json_decodes_the_answer_and_passes_preload_content_false():
    seen = {}

    def call(*args, **kwargs):
        seen.update(kwargs, args=args)
        return Answer({"kind": "Node"})

    assert kube.call_json("get node", call, "trn1-0") == {"kind": "Node"}
    assert seen == {"_preload_content": False, "args": ("trn1-0",)}


def test_missing_is_none_only_when_asked_and_errors_carry_the_api_message():
    def gone(*args, **kwargs):
        raise refused(404, 'nodes "trn1-9" not found')

    assert kube.call_json("get node trn1-9", gone, missing_ok=True) is None
    with pytest.raises(kube.KubeError, match='get node trn1-9 failed: 404 nodes "trn1-9" not found'):
        kube.call_json("get node trn1-9", gone)

    class Mine(Exception):
        pass

    def forbidden(*args, **kwargs):
        raise refused(403, "nodes is forbidden")

    with pytest.raises(Mine, match="list nodes failed: 403 nodes is forbidden"):
        kube.call_json("list nodes", forbidden, missing_ok=True, error=Mine)

    def unreachable(**kwargs):
        raise OSError("connection refused")

    with pytest.raises(kube.KubeError, match="list nodes failed: connection refused"):
        kube.call_json("list nodes", unreachable)


def test_list_pages_follows_continue_tokens():
    pages = {None: {"items": [1, 2], "metadata": {"continue": "a"}}, "a": {"items": [3], "metadata": {"continue": ""}}}
    asked = []

    def call(limit, _continue, **kwargs):
        asked.append((limit, _continue, kwargs["label_selector"]))
        return Answer(pages[_continue])

    assert list(kube.list_pages("list nodes", call, 2, label_selector="x=y")) == [[1, 2], [3]]
    assert asked == [(2, None, "x=y"), (2, "a", "x=y")]


def test_api_client_reads_the_kubeconfig_given_else_the_environment(tmp_path, monkeypatch):
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
              "clusters": [{"name": "a", "cluster": {"server": "https://127.0.0.1:6443"}},
                           {"name": "b", "cluster": {"server": "https://127.0.0.2:6443"}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "a", "context": {"cluster": "a", "user": "u"}}, {"name": "b", "context": {"cluster": "b", "user": "u"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    assert kube.api_client(str(path)).configuration.host == "https://127.0.0.1:6443"
    assert kube.api_client(str(path), "b").configuration.host == "https://127.0.0.2:6443"
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(path))
    assert kube.api_client(None, "b").configuration.host == "https://127.0.0.2:6443"
    with pytest.raises(kube.CONNECTION_ERRORS):
        kube.api_client(str(tmp_path / "missing"))
    assert isinstance(kube, types.ModuleType) and kube.HAS_KUBERNETES


class Transport:
    """The rest client of a real ApiClient: records each request, answers with the next (status, body)."""

    def __init__(self, *answers):
        self.answers, self.requests = list(answers), []

    def request(self, method, url, headers=None, body=None, post_params=None, _request_timeout=None):
        self.requests.append({"method": method, "url": url, "headers": headers, "body": body})
        status, answer = self.answers.pop(0)
        raw = types.SimpleNamespace(status=status, reason="OK" if status < 300 else "Not Found", headers={},
                                    data=json.dumps(answer).encode())
        return RESTResponse(raw)


def client(transport):
    configuration = Configuration(host="https://127.0.0.1:6443", api_key={"authorization": "t"}, api_key_prefix={"authorization": "Bearer"})
    api = ApiClient(configuration)
    api.rest_client = transport
    return api


def test_path_call_sends_query_body_and_token_and_pages_with_list_pages():
    transport = Transport((200, {"items": [1], "metadata": {"continue": "c1"}}), (200, {"items": [2], "metadata": {}}),
                          (200, {"kind": "Status"}))
    api = client(transport)
    pages = list(kube.list_pages("list daemonsets", kube.path_call(api, "GET", "/apis/apps/v1/namespaces/ns/daemonsets"), 1,
                                 label_selector="a=b,c=d"))
    assert pages == [[1], [2]]
    assert transport.requests[0]["url"] == "https://127.0.0.1:6443/apis/apps/v1/namespaces/ns/daemonsets?limit=1&labelSelector=a%3Db%2Cc%3Dd"
    assert transport.requests[1]["url"].endswith("?limit=1&continue=c1&labelSelector=a%3Db%2Cc%3Dd")
    assert transport.requests[0]["headers"]["authorization"] == "Bearer t"
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
    answer = kube.call_json("delete", kube.path_call(api, "DELETE", "/apis/apps/v1/namespaces/ns/daemonsets/x", body))
    assert answer == {"kind": "Status"}
    assert transport.requests[2]["method"] == "DELETE" and transport.requests[2]["body"] == body


def test_path_call_answers_outside_2xx_are_the_clients_errors():
    transport = Transport((404, {"kind": "Status", "message": 'the server could not find the requested resource'}),
                          (403, {"kind": "Status", "message": "daemonsets.apps is forbidden"}))
    api = client(transport)
    assert kube.call_json("discover", kube.path_call(api, "GET", "/apis/gone.example/v1"), missing_ok=True) is None
    with pytest.raises(kube.KubeError, match="list daemonsets failed: 403 daemonsets.apps is forbidden"):
        list(kube.list_pages("list daemonsets", kube.path_call(api, "GET", "/apis/apps/v1/daemonsets"), 10, missing_ok=True))
