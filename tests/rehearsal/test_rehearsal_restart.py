# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's two halves start empty together: moto keeps nothing across a restart, so neither does the
cluster's side (an EKS cluster's objects cannot outlive an empty account).

A private stack of moto and the API server's etcd, in a directory and on ports of its own, so the shared stack
is never touched: the cluster's state survives a second ``up`` (moto still runs) and is gone after ``down`` and
``up``, with a line that says why; a directory whose service the stack does not run is left alone.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import socket
import subprocess
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
REHEARSAL = ROOT / "tools" / "rehearsal" / "rehearsal.sh"


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _etcd(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v3/kv/{path}", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def test_the_cluster_side_starts_empty_with_moto_and_only_then(tmp_path, shared_rehearsal):
    etcd_port, peer_port = _free_port(), _free_port()
    env = dict(os.environ, TRAINIUM_REHEARSAL_SERVICES="moto etcd", TRAINIUM_REHEARSAL_DIR=str(tmp_path),
               TRAINIUM_MOTO_PORT=str(_free_port()), TRAINIUM_KUBE_ETCD_PORT=str(etcd_port), TRAINIUM_KUBE_ETCD_PEER_PORT=str(peer_port))

    def rehearsal(command):
        done = subprocess.run([str(REHEARSAL), command], env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    key = {"key": _b64("/registry/namespaces/training")}
    try:
        rehearsal("up")
        _etcd(etcd_port, "put", dict(key, value=_b64("a namespace of the old cluster")))
        (tmp_path / "shared").mkdir()
        again = rehearsal("up")
        assert "starts empty" not in again and _etcd(etcd_port, "range", key).get("kvs"), again
        rehearsal("down")
        restarted = rehearsal("up")
        # etcd-kube is this stack's (its etcd runs here); the pods' volumes belong to a pod runner it does not run.
        assert "moto starts empty (it keeps no state across a restart), so the cluster's side starts empty too: removing etcd-kube under" \
            in restarted
        assert not _etcd(etcd_port, "range", key).get("kvs")
        assert (tmp_path / "shared").is_dir()
    finally:
        subprocess.run([str(REHEARSAL), "down"], env=env, capture_output=True, timeout=120, check=False)
