# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Objects of several kinds found by all their labels, deleted in order and
waited for (module_utils trainium_labelled_absent): against a stand-in
cluster with a clock, and the calls on the wire through a real ApiClient."""

from __future__ import annotations

import json
import types

import pytest
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.rest import RESTResponse

from ansible_collections.trainium.eks.plugins.module_utils import trainium_labelled_absent as absent

LABELS = {"app.kubernetes.io/name": "neuron-device-plugin", "trainium.eks/cluster": "c1"}
DS = {"api_version": "apps/v1", "kind": "DaemonSet", "namespaced": True}
SA = {"api_version": "v1", "kind": "ServiceAccount", "namespaced": True}
CR = {"api_version": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "namespaced": False}
QUEUE = {"api_version": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "namespaced": False}
SERVED = {"apps/v1": [{"name": "daemonsets", "kind": "DaemonSet", "namespaced": True},
                      {"name": "daemonsets/status", "kind": "DaemonSet", "namespaced": True}],
          "v1": [{"name": "serviceaccounts", "kind": "ServiceAccount", "namespaced": True}],
          "rbac.authorization.k8s.io/v1": [{"name": "clusterroles", "kind": "ClusterRole", "namespaced": False}]}
PATHS = {"DaemonSet": "/apis/apps/v1/namespaces/kube-system/daemonsets", "ServiceAccount": "/api/v1/namespaces/kube-system/serviceaccounts",
         "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles"}


class Clock:
    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class Cluster:
    """Objects by collection path; a deleted object stays for ``linger`` more lists of its path (finalizers)."""

    def __init__(self, clock, linger=0):
        self.clock, self.linger = clock, linger
        self.objects = {path: [] for path in PATHS.values()}
        self.log, self.calls = [], {"discover": 0, "list": 0, "delete": 0}

    def add(self, kind, name, labels=None, namespace="kube-system"):
        meta = {"name": name, "uid": f"uid-{kind}-{name}", "labels": dict(LABELS if labels is None else labels)}
        if PATHS[kind].startswith("/api/v1/namespaces") or "/namespaces/" in PATHS[kind]:
            meta["namespace"] = namespace
        self.objects[PATHS[kind]].append({"metadata": meta, "lists_left": None})

    def resource(self, api_version, kind):
        self.calls["discover"] += 1
        for resource in SERVED.get(api_version, []):
            if resource["kind"] == kind and "/" not in resource["name"]:
                return {"name": resource["name"], "namespaced": resource["namespaced"]}
        return None

    def list(self, path, label_selector):
        self.calls["list"] += 1
        wanted = dict(pair.split("=", 1) for pair in label_selector.split(","))
        self.log.append(("list", path, label_selector, self.clock()))
        kept = []
        for obj in self.objects.get(path, []):
            if obj["lists_left"] is not None:
                if obj["lists_left"] == 0:
                    continue
                obj["lists_left"] -= 1
            kept.append(obj)
        self.objects[path] = kept
        return [{"metadata": o["metadata"]} for o in kept if wanted.items() <= o["metadata"]["labels"].items()]

    def delete(self, path, uid, propagation):
        self.calls["delete"] += 1
        self.log.append(("delete", path, uid, propagation))
        collection, name = path.rsplit("/", 1)
        for obj in self.objects.get(collection, []):
            if obj["metadata"]["name"] == name and obj["metadata"]["uid"] == uid:
                if obj["lists_left"] is None:
                    obj["lists_left"] = self.linger
                    obj["metadata"]["finalizers"] = ["foregroundDeletion"] if propagation == "Foreground" else []
                return True
        return False


@pytest.fixture
def clock():
    return Clock()


def run(cluster, clock, kinds=(DS, SA, CR), namespace="kube-system", **kwargs):
    return absent.delete_labelled(cluster, list(kinds), LABELS, namespace=namespace, clock=clock, sleep=clock.sleep, **kwargs)


def test_deletes_only_objects_with_all_labels_in_the_order_of_the_kinds_with_the_propagation(clock):
    cluster = Cluster(clock)
    cluster.add("ClusterRole", "neuron-device-plugin")
    cluster.add("ServiceAccount", "neuron-device-plugin")
    cluster.add("DaemonSet", "neuron-device-plugin")
    cluster.add("DaemonSet", "other", labels={"app.kubernetes.io/name": "neuron-device-plugin"})  # one label of two
    result = run(cluster, clock, propagation="Foreground")
    deletes = [entry for entry in cluster.log if entry[0] == "delete"]
    assert [entry[1] for entry in deletes] == [PATHS["DaemonSet"] + "/neuron-device-plugin", PATHS["ServiceAccount"] + "/neuron-device-plugin",
                                               PATHS["ClusterRole"] + "/neuron-device-plugin"]
    assert {entry[3] for entry in deletes} == {"Foreground"}
    assert {entry[2] for entry in cluster.log if entry[0] == "list"} == {"app.kubernetes.io/name=neuron-device-plugin,trainium.eks/cluster=c1"}
    assert result["changed"] is True
    assert result["deleted"] == [
        {"api_version": "apps/v1", "kind": "DaemonSet", "namespace": "kube-system", "name": "neuron-device-plugin"},
        {"api_version": "v1", "kind": "ServiceAccount", "namespace": "kube-system", "name": "neuron-device-plugin"},
        {"api_version": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "neuron-device-plugin"}]
    assert [o["metadata"]["name"] for o in cluster.objects[PATHS["DaemonSet"]]] == ["other"]
    assert clock.sleeps == []  # gone at the first check: no pause


def test_sequential_deletes_a_kind_only_once_the_kinds_before_it_are_gone_polling_each_second(clock):
    cluster = Cluster(clock, linger=5)
    cluster.add("DaemonSet", "neuron-device-plugin")
    cluster.add("ServiceAccount", "neuron-device-plugin")
    run(cluster, clock, kinds=(DS, SA), propagation="Foreground")
    sa_delete = cluster.log.index(("delete", PATHS["ServiceAccount"] + "/neuron-device-plugin", "uid-ServiceAccount-neuron-device-plugin",
                                   "Foreground"))
    ds_lists = [entry for entry in cluster.log[:sa_delete] if entry[0] == "list" and entry[1] == PATHS["DaemonSet"]]
    assert len(ds_lists) == 7  # the first list, 5 while it lingers, the one that finds it gone
    assert clock.sleeps[:5] == [0.25, 0.5, 1.0, 1.0, 1.0]


def test_not_sequential_deletes_every_kind_first_and_lists_each_kind_once_per_check(clock):
    cluster = Cluster(clock, linger=3)
    cluster.add("DaemonSet", "neuron-device-plugin")
    cluster.add("ServiceAccount", "neuron-device-plugin")
    cluster.add("ClusterRole", "neuron-device-plugin")
    run(cluster, clock, sequential=False)
    assert [(entry[0], entry[1].split("/")[-1 if entry[0] == "list" else -2]) for entry in cluster.log[:6]] == [
        ("list", "daemonsets"), ("delete", "daemonsets"), ("list", "serviceaccounts"), ("delete", "serviceaccounts"),
        ("list", "clusterroles"), ("delete", "clusterroles")]
    checks = cluster.log[6:]
    assert len(checks) == 3 * 4 and all(entry[0] == "list" for entry in checks)
    assert [entry[1] for entry in checks[:3]] == list(PATHS.values())
    assert clock.sleeps == [0.25, 0.5, 1.0]


def test_timeout_names_what_is_left_and_the_kinds_not_deleted_yet(clock):
    cluster = Cluster(clock, linger=1000)
    cluster.add("DaemonSet", "neuron-device-plugin")
    cluster.add("ServiceAccount", "neuron-device-plugin")
    with pytest.raises(absent.DeleteError) as failed:
        run(cluster, clock, kinds=(DS, SA), propagation="Foreground", timeout=10)
    assert str(failed.value) == ("timed out waiting for the deletion of 1 object(s): DaemonSet kube-system/neuron-device-plugin "
                                 "(finalizers: foregroundDeletion); not deleted yet (after them in the order): ServiceAccount (v1)")
    assert 10 <= clock.now <= 11
    assert failed.value.result["deleted"] == [{"api_version": "apps/v1", "kind": "DaemonSet", "namespace": "kube-system",
                                               "name": "neuron-device-plugin"}]
    assert not any(entry[0] == "delete" and "serviceaccounts" in entry[1] for entry in cluster.log)


def test_check_mode_reports_and_deletes_nothing(clock):
    cluster = Cluster(clock)
    cluster.add("DaemonSet", "neuron-device-plugin")
    cluster.add("ClusterRole", "neuron-device-plugin")
    result = run(cluster, clock, check_mode=True, propagation="Foreground")
    assert cluster.calls["delete"] == 0
    assert result["changed"] is True
    assert [absent.name_of(item) for item in result["deleted"]] == ["DaemonSet kube-system/neuron-device-plugin", "ClusterRole neuron-device-plugin"]
    assert len(cluster.objects[PATHS["DaemonSet"]]) == 1 and clock.sleeps == []


def test_nothing_there_changes_nothing_and_an_unserved_kind_fails_before_any_delete(clock):
    cluster = Cluster(clock)
    assert run(cluster, clock, kinds=(DS, SA, CR)) == {"changed": False, "deleted": []}
    cluster.add("ServiceAccount", "neuron-device-plugin")
    with pytest.raises(absent.DeleteError, match=r"kinds\[0\]: got Queue \(scheduling.volcano.sh/v1beta1\); allowed: a kind the API server serves"):
        run(cluster, clock, kinds=(QUEUE, SA))
    assert cluster.calls["delete"] == 0 and len(cluster.objects[PATHS["ServiceAccount"]]) == 1


def test_bad_api_versions_namespaces_and_listed_names_are_not_followed(clock):
    cluster = Cluster(clock)
    with pytest.raises(absent.DeleteError, match=r"kinds\[0\].api_version: got 'apps/v1/../../api'"):
        run(cluster, clock, kinds=(dict(DS, api_version="apps/v1/../../api"),))
    with pytest.raises(absent.DeleteError, match=r"namespace: got 'kube-system/../x'"):
        run(cluster, clock, kinds=(SA,), namespace="kube-system/../x")
    cluster.add("ServiceAccount", "neuron-device-plugin")
    cluster.objects[PATHS["ServiceAccount"]][0]["metadata"]["name"] = "x?labelSelector="
    with pytest.raises(absent.DeleteError, match="named 'x\\?labelSelector=': not deleted"):
        run(cluster, clock, kinds=(SA,))
    assert cluster.calls["delete"] == 0


def test_an_object_gone_before_its_delete_is_not_counted(clock):
    cluster = Cluster(clock)
    cluster.add("ServiceAccount", "neuron-device-plugin")
    cluster.delete = lambda path, uid, propagation: False  # 404, or another object under its name (uid precondition)
    result = run(cluster, clock, kinds=(SA,))
    assert result["changed"] is False and result["deleted"] == []


def test_kind_list_and_label_problems_before_any_delete(clock):
    cluster = Cluster(clock)
    cluster.add("ClusterRole", "neuron-device-plugin")
    with pytest.raises(absent.DeleteError, match=r"kinds\[0\].namespaced: got True \(bool\) for ClusterRole "
                                                 r"\(rbac.authorization.k8s.io/v1\); allowed: False, as the API server serves it"):
        run(cluster, clock, kinds=(dict(CR, namespaced=True),))
    with pytest.raises(absent.DeleteError, match=r"namespace: got None; allowed: the namespace \(a DNS label\) of the namespaced kind DaemonSet"):
        absent.delete_labelled(cluster, [DS], LABELS, clock=clock, sleep=clock.sleep)
    assert cluster.calls["delete"] == 0
    assert absent.label_problems({}) == ["labels: got {}; allowed: at least one label (no selector would match every object of the kinds)"]
    assert absent.label_problems({"a": "b,c=d"}) and absent.label_problems({"a": 3}) and absent.label_problems({"bad key": "x"})
    assert absent.label_problems({"app.kubernetes.io/name": "x", "trainium.eks/cluster": "c-1"}) == []


class Transport:
    """The rest client of a real ApiClient: answers each request with the next (status, body)."""

    def __init__(self, *answers):
        self.answers, self.requests = list(answers), []

    def request(self, method, url, headers=None, body=None, post_params=None, _request_timeout=None):
        self.requests.append((method, url, body))
        status, answer = self.answers.pop(0)
        return RESTResponse(types.SimpleNamespace(status=status, reason=str(status), headers={}, data=json.dumps(answer).encode()))


def objects_client(*answers):
    api = ApiClient(Configuration(host="https://k8s"))
    api.rest_client = Transport(*answers)
    return absent.KubeObjects(api, page_size=50), api.rest_client


def test_kube_objects_on_the_wire():
    status_404 = (404, {"kind": "Status", "message": "not found"})
    objects, wire = objects_client(
        (200, {"resources": [{"name": "daemonsets/status", "kind": "DaemonSet", "namespaced": True},
                             {"name": "daemonsets", "kind": "DaemonSet", "namespaced": True}]}),
        status_404,  # the Volcano API is not served
        (200, {"items": [{"metadata": {"name": "a"}}], "metadata": {}}),
        (200, {"kind": "DaemonSet"}),
        status_404,  # deleted meanwhile
        (409, {"kind": "Status", "message": "Precondition failed: UID in precondition: u3"}),
        status_404,  # the kind went away: nothing to list
        (403, {"kind": "Status", "message": "daemonsets.apps is forbidden"}),
    )
    assert objects.resource("apps/v1", "DaemonSet") == {"name": "daemonsets", "namespaced": True}
    assert objects.resource("apps/v1", "Deployment") is None  # from the same discovery answer
    assert objects.resource("scheduling.volcano.sh/v1beta1", "Queue") is None
    assert objects.list("/apis/apps/v1/namespaces/ns/daemonsets", "a=b") == [{"metadata": {"name": "a"}}]
    assert objects.delete("/apis/apps/v1/namespaces/ns/daemonsets/a", "u1", "Foreground") is True
    assert objects.delete("/apis/apps/v1/namespaces/ns/daemonsets/a", "u2", None) is False
    assert objects.delete("/apis/apps/v1/namespaces/ns/daemonsets/a", "u3", None) is False
    assert objects.list("/apis/scheduling.volcano.sh/v1beta1/queues", "a=b") == []
    with pytest.raises(absent.DeleteError, match="delete /apis/apps/v1/namespaces/ns/daemonsets/a failed: 403 daemonsets.apps is forbidden"):
        objects.delete("/apis/apps/v1/namespaces/ns/daemonsets/a", "u4", None)
    urls = [(method, url) for method, url, _body in wire.requests]
    assert urls[:4] == [("GET", "https://k8s/apis/apps/v1"), ("GET", "https://k8s/apis/scheduling.volcano.sh/v1beta1"),
                        ("GET", "https://k8s/apis/apps/v1/namespaces/ns/daemonsets?limit=50&labelSelector=a%3Db"),
                        ("DELETE", "https://k8s/apis/apps/v1/namespaces/ns/daemonsets/a")]
    assert wire.requests[3][2] == {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "u1"}, "propagationPolicy": "Foreground"}
    assert wire.requests[4][2] == {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "u2"}}
    assert objects.calls == {"discover": 2, "list": 2, "delete": 4}
    assert absent.group_version_path("v1") == "/api/v1"
