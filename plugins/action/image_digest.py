# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of trainium.eks.image_digest: the cluster's digest record read once per run.

The platform roles each pin their images (the device plugins, neuron-monitor,
etcd, the FSx CSI driver): five module runs that each start a process, read
the same ConfigMap and, on a rerun, find every image there. This plugin keeps
what a run of the module found in the record (the fact
``_trainium_image_digest_records``, keyed by this ansible-playbook run, the
kubeconfig and the record's namespace and name) and answers a later task of
the same run from it when every image it asks for is there: no module run,
no API call, the same references. Anything else (an image not recorded, a
record read in another run, another cluster's kubeconfig) runs the module.
What the module would only record in check mode is not kept.
"""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from ansible_collections.trainium.eks.plugins.module_utils import trainium_image_digest as tid

FACT = "_trainium_image_digest_records"


def run_id():
    """This ansible-playbook run: its process ID and start time (a fact cache from another run never matches); None
    where /proc does not tell the start time (then nothing is kept: every task runs the module)."""
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/stat", encoding="utf-8") as stat:
            return f"{parent}:{stat.read().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        return None


def record_key(args):
    """Where the record lives, as this run asked for it; None when the run cannot be told from another."""
    run = run_id()
    if run is None:
        return None
    return "|".join((run, str(args.get("kubeconfig") or ""), str(args.get("record_namespace") or "kube-system"),
                     str(args.get("record_name") or "trainium-eks-image-digests")))


def from_record(references, recorded):
    """{reference: pinned reference} when the record holds every reference without a digest, else None."""
    images = {}
    for reference in references:
        try:
            digest = tid.parse_reference(reference)[3]
        except tid.DigestError:
            return None  # the module says what is wrong with it
        if digest:
            images[reference] = reference
        elif tid.DIGEST_RE.match(str(recorded.get(reference) or "")):
            images[reference] = tid.pinned(reference, recorded[reference])
        else:
            return None
    return images


class ActionModule(ActionBase):
    """Answer from the record this run already read, else run the module and keep what it found."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        key = record_key(args)
        kept = task_vars.get(FACT)
        kept = kept if isinstance(kept, dict) else {}  # anything else under the name is not a record of this plugin
        recorded = kept.get(key) if key else None
        references = list(dict.fromkeys(args.get("images") or []))
        images = from_record(references, recorded) if references and isinstance(recorded, dict) else None
        if images is not None:
            result.update(changed=False, images=images, resolved=[],
                          msg=f"{len(images)} image(s) pinned by their recorded digests (the record as this run read it)")
            return result
        result.update(self._execute_module(module_name="trainium.eks.image_digest", module_args=args, task_vars=task_vars))
        if key and not result.get("failed") and isinstance(result.get("recorded"), dict):
            result["ansible_facts"] = {FACT: {**{k: v for k, v in kept.items() if k.split("|", 1)[0] == key.split("|", 1)[0]},
                                              key: result["recorded"]}}
        return result
