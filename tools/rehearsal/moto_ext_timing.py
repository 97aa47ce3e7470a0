# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS's creation times, emulated at a scale factor (see moto_ext.py).

moto makes an EKS cluster or a managed node group ACTIVE the moment it is
asked for; AWS takes about 10 minutes for a cluster, about 5 for a node group
and about 8 for an FSx for Lustre file system. A run that starts its slow
resources early and joins them late (site.yml) only shows its overlap when
the rehearsal takes time too, so:

- The scale factor is a number in the file that
  ``TRAINIUM_REHEARSAL_AWS_TIME_SCALE_FILE`` names (services/moto.sh:
  ``$TRAINIUM_REHEARSAL_DIR/aws-time-scale``). No file, or 0, is the default:
  no emulation (what the tests run with). The file is read when a resource
  is created, so a benchmark switches it without restarting moto, e.g.
  ``echo 0.0333 > .rehearsal/aws-time-scale`` makes a cluster take 20 s and
  a file system 16 s (tools/bench/pipeline.py).
- With a factor, a new cluster and a new node group answer CREATING (in
  Describe and List calls) for ``AWS_SECONDS[kind] x factor`` seconds after
  their Create call, then whatever moto set (ACTIVE, or CREATE_FAILED for
  the fault of moto_ext_faults.py). A file system stays CREATING for
  ``AWS_SECONDS["file_system"] x factor`` seconds (moto_ext_fsx.py asks
  ``creating_seconds``; without a factor it keeps its own 3 s).

- The training image's build (not an AWS call, but on AWS the third slow
  step: about 10 minutes for a Neuron image) takes ``AWS_SECONDS["image"] x
  factor`` when the buildah stand-in ``timing/buildah`` comes first on PATH
  (tools/bench/pipeline.py puts it there); it reads the same file.

Deletions stay immediate: teardown is not what the overlap measures.
"""

from __future__ import annotations

import os
import time

# Typical creation times on AWS, in seconds (EKS and FSx user guides, and
# what the reference architecture's walk-through reports). "image" is not
# moto's: a Neuron training image's build and push (about 10 minutes), which
# timing/buildah emulates before a build for the pipeline benchmark.
AWS_SECONDS = {"cluster": 600, "nodegroup": 300, "file_system": 480, "image": 600}

_INSTALLED = []


def time_scale():
    """The scale factor in force, 0 to 1 (0.0: no emulation); a file that is not a number counts as 0."""
    path = os.environ.get("TRAINIUM_REHEARSAL_AWS_TIME_SCALE_FILE")
    if not path:
        return 0.0
    try:
        with open(path, encoding="utf-8") as handle:
            # At most AWS's own time: a bigger (or infinite) factor would keep resources CREATING for hours.
            return min(max(float(handle.read().strip() or 0), 0.0), 1.0)
    except (OSError, ValueError):
        return 0.0


def creating_seconds(kind, default=0.0):
    """How long a resource of ``kind`` created now stays CREATING: the scaled AWS time, else ``default``."""
    factor = time_scale()
    return AWS_SECONDS[kind] * factor if factor > 0 else default


def _creating_status(kind, original_init):
    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.__dict__["_trainium_ready_at"] = time.monotonic() + creating_seconds(kind)

    return __init__


def _status(self):
    status = self.__dict__.get("_trainium_status")
    if status in ("ACTIVE", "CREATE_FAILED") and time.monotonic() < self.__dict__.get("_trainium_ready_at", 0.0):
        return "CREATING"
    return status


def _set_status(self, value):
    self.__dict__["_trainium_status"] = value


def install():
    """Make moto's EKS clusters and node groups CREATING for their scaled AWS time (once per process)."""
    if _INSTALLED:
        return
    from moto.eks.models import Cluster, Nodegroup  # pylint: disable=import-outside-toplevel

    for cls, kind in ((Cluster, "cluster"), (Nodegroup, "nodegroup")):
        # moto assigns self.status in __init__: the property keeps that value and answers CREATING until due.
        cls.status = property(_status, _set_status)
        cls.__init__ = _creating_status(kind, cls.__init__)
    _INSTALLED.append(True)
