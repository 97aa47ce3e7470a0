# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module labelled_objects_absent run in-process on a stand-in cluster: its options, check and diff mode, its failure."""

from __future__ import annotations

import pytest

from ansible_collections.trainium.eks.plugins.modules import labelled_objects_absent as module
from ansible_collections.trainium.eks.plugins.module_utils import trainium_labelled_absent as absent

ARGS = {"kinds": [{"api_version": "apps/v1", "kind": "DaemonSet"},
                  {"api_version": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "namespaced": False}],
        "labels": {"app.kubernetes.io/name": "neuron-monitor"}, "namespace": "kube-system", "propagation": "Foreground",
        "timeout": 0, "kubeconfig": "/nowhere/kubeconfig"}


class Cluster:
    """Every kind served; objects by collection path; a deleted object is gone at once unless ``stuck``."""

    def __init__(self, stuck=False):
        self.objects = {"/apis/apps/v1/namespaces/kube-system/daemonsets": [{"name": "neuron-monitor", "namespace": "kube-system", "uid": "1"}],
                        "/apis/rbac.authorization.k8s.io/v1/clusterroles": [{"name": "neuron-monitor", "uid": "2"}]}
        self.stuck, self.deleted, self.selectors = stuck, [], set()
        self.calls = {"discover": 0, "list": 0, "delete": 0}

    def resource(self, api_version, kind):
        return {"name": kind.lower() + "s", "namespaced": kind != "ClusterRole"}

    def list(self, path, label_selector):
        self.selectors.add(label_selector)
        return [{"metadata": meta} for meta in self.objects.get(path, [])]

    def delete(self, path, uid, propagation):
        self.deleted.append((path, propagation))
        if not self.stuck:
            self.objects[path.rsplit("/", 1)[0]] = []
        return True


@pytest.fixture
def cluster(monkeypatch):
    found = Cluster()
    monkeypatch.setattr(module.kube, "HAS_KUBERNETES", True)
    monkeypatch.setattr(module.kube, "api_client", lambda kubeconfig, context: ("client of", kubeconfig, context))
    monkeypatch.setattr(module.absent, "KubeObjects", lambda api: found)
    return found


def test_check_mode_with_diff_names_the_objects_and_deletes_nothing(run_main, cluster):
    code, result = run_main(module.main, ARGS, check=True, diff=True)
    assert code == 0 and result["changed"] is True and cluster.deleted == []
    assert result["diff"] == {"before": "DaemonSet kube-system/neuron-monitor\nClusterRole neuron-monitor\n", "after": ""}
    assert cluster.selectors == {"app.kubernetes.io/name=neuron-monitor"}


def test_deletes_then_a_second_run_changes_nothing(run_main, cluster):
    code, result = run_main(module.main, ARGS)
    assert code == 0 and result["changed"] is True
    assert cluster.deleted == [
        ("/apis/apps/v1/namespaces/kube-system/daemonsets/neuron-monitor", "Foreground"),
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles/neuron-monitor", "Foreground"),
    ]
    assert result["deleted"][1] == {"api_version": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "neuron-monitor"}
    code, again = run_main(module.main, ARGS)
    assert code == 0 and again["changed"] is False and again["deleted"] == [] and len(cluster.deleted) == 2


def test_timeout_fails_with_what_is_left_and_what_was_deleted(run_main, cluster):
    cluster.stuck = True
    code, result = run_main(module.main, ARGS)
    assert code == 1
    assert result["msg"] == ("timed out waiting for the deletion of 1 object(s): DaemonSet kube-system/neuron-monitor; "
                             "not deleted yet (after them in the order): ClusterRole (rbac.authorization.k8s.io/v1)")
    assert result["changed"] is True and [item["kind"] for item in result["deleted"]] == ["DaemonSet"]


def test_bad_options_fail_before_any_call(run_main, cluster):
    code, result = run_main(module.main, dict(ARGS, labels={}, poll_interval=0))
    assert code == 1 and cluster.selectors == set()
    assert result["msg"].splitlines() == [absent.label_problems({})[0], "poll_interval: got 0.0 (float); allowed: more than 0 seconds"]
    code, result = run_main(module.main, dict(ARGS, kinds=[{"api_version": "v1", "kind": "Pod", "namespaced": True, "extra": 1}]))
    assert code == 1 and "extra" in result["msg"]
