# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The image_digest action plugin: a later task of the run is answered from the record an earlier task read."""

from __future__ import annotations

from action_stub import stub_action
from ansible_collections.trainium.eks.plugins.action import image_digest as plugin

ETCD = "quay.io/coreos/etcd:v3.5.34"
PLUGIN = "public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0"
DIGEST = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64
ARGS = {"images": [ETCD], "kubeconfig": "/tmp/kube.yaml"}


def _action(args, answers):
    return stub_action(plugin, args, answers=answers)


def _module_answer(recorded, asked=()):
    return {"changed": bool(asked), "images": {ref: f"{ref}@{digest}" for ref, digest in recorded.items()}, "resolved": list(asked),
            "recorded": recorded, "msg": "from the module"}


def test_a_first_task_runs_the_module_and_keeps_what_the_record_holds():
    action = _action(dict(ARGS), [_module_answer({ETCD: DIGEST, PLUGIN: OTHER}, asked=[ETCD])])
    result = action.run(task_vars={})
    assert action._execute_module.call_count == 1
    assert result["changed"] is True and result["images"][ETCD] == f"{ETCD}@{DIGEST}"
    kept = result["ansible_facts"][plugin.FACT]
    assert list(kept.values()) == [{ETCD: DIGEST, PLUGIN: OTHER}]
    assert list(kept)[0].endswith("|/tmp/kube.yaml|kube-system|trainium-eks-image-digests")


def test_a_later_task_of_the_run_is_answered_from_the_record_without_the_module():
    key = plugin.record_key(ARGS)
    action = _action({"images": [PLUGIN, ETCD + "@" + OTHER], "kubeconfig": "/tmp/kube.yaml"}, [])
    result = action.run(task_vars={plugin.FACT: {key: {ETCD: DIGEST, PLUGIN: OTHER}}})
    action._execute_module.assert_not_called()
    # A reference given with its digest stays as given; a recorded one gets the recorded digest.
    assert result["images"] == {PLUGIN: f"{PLUGIN}@{OTHER}", ETCD + "@" + OTHER: ETCD + "@" + OTHER}
    assert result["changed"] is False and result["resolved"] == [] and "ansible_facts" not in result


def test_an_image_not_recorded_another_cluster_or_another_run_runs_the_module():
    key = plugin.record_key(ARGS)
    kept = {key: {ETCD: DIGEST}}
    missing = _action({"images": [ETCD, PLUGIN], "kubeconfig": "/tmp/kube.yaml"}, [_module_answer({ETCD: DIGEST, PLUGIN: OTHER}, [PLUGIN])])
    result = missing.run(task_vars={plugin.FACT: kept})
    assert missing._execute_module.call_count == 1
    assert result["ansible_facts"][plugin.FACT] == {key: {ETCD: DIGEST, PLUGIN: OTHER}}
    other_cluster = _action({"images": [ETCD], "kubeconfig": "/tmp/other.yaml"}, [_module_answer({ETCD: OTHER})])
    assert other_cluster.run(task_vars={plugin.FACT: kept})["images"][ETCD] == f"{ETCD}@{OTHER}"
    # What a fact cache kept from another ansible-playbook run is not used, and is dropped.
    stale = "1:1|/tmp/kube.yaml|kube-system|trainium-eks-image-digests"
    rerun = _action(dict(ARGS), [_module_answer({ETCD: OTHER})])
    result = rerun.run(task_vars={plugin.FACT: {stale: {ETCD: DIGEST}}})
    assert rerun._execute_module.call_count == 1 and result["images"][ETCD] == f"{ETCD}@{OTHER}"
    assert stale not in result["ansible_facts"][plugin.FACT]


def test_a_failed_module_run_keeps_nothing():
    action = _action(dict(ARGS), [{"failed": True, "msg": "could not pin an image by digest: ..."}])
    result = action.run(task_vars={})
    assert result["failed"] is True and "ansible_facts" not in result


def test_where_the_run_cannot_be_told_nothing_is_kept_or_used(monkeypatch):
    monkeypatch.setattr(plugin, "run_id", lambda: None)
    action = _action(dict(ARGS), [_module_answer({ETCD: OTHER})])
    result = action.run(task_vars={plugin.FACT: {"None|/tmp/kube.yaml|kube-system|trainium-eks-image-digests": {ETCD: DIGEST}}})
    assert action._execute_module.call_count == 1 and result["images"][ETCD] == f"{ETCD}@{OTHER}"
    assert "ansible_facts" not in result


def test_something_else_under_the_fact_name_is_not_read_as_a_record():
    key = plugin.record_key(ARGS)
    for other in ("a string", {key: "not a mapping"}, ["a", "list"]):
        action = _action(dict(ARGS), [_module_answer({ETCD: OTHER})])
        result = action.run(task_vars={plugin.FACT: other})
        assert action._execute_module.call_count == 1 and result["images"][ETCD] == f"{ETCD}@{OTHER}"
        assert result["ansible_facts"][plugin.FACT][key] == {ETCD: OTHER}
