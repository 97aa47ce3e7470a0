# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""buildah, with a Neuron training image's build time emulated at the AWS time scale.

On AWS the training image's build and push take about 10 minutes (a Neuron
base of several GB, the pip installs, the push to ECR); on the rehearsal the
same Containerfile builds on a small Debian base in seconds. A benchmark that
measures how much of the pipeline overlaps (tools/bench/pipeline.py) puts this
directory first on PATH, so the collection's container_image module finds this
script as ``buildah`` and a ``build`` takes as long as on AWS, times the factor
moto's creation times use (moto_ext_timing.py: ``AWS_SECONDS["image"]``, the
file ``TRAINIUM_REHEARSAL_AWS_TIME_SCALE_FILE`` names). Without a factor (the
tests) and for every other subcommand it is the real buildah, unchanged.

The real buildah is the first one on PATH after this directory. ``buildah``
next to this file is the command (a shell script that runs this with python3).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from moto_ext_timing import creating_seconds  # noqa: E402  pylint: disable=wrong-import-position


def real_buildah():
    """The first executable buildah on PATH that is not this script."""
    others = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and pathlib.Path(d).resolve() != HERE]
    return shutil.which("buildah", path=os.pathsep.join(others))


def main(argv):
    target = real_buildah()
    if target is None:
        sys.stderr.write(f"{HERE / 'buildah'}: no buildah on PATH after {HERE}\n")
        return 127
    # The subcommand is the first of build/bud among the words (buildah's global options come before it;
    # their values are paths and names, never the bare word).
    if any(word in ("build", "bud") for word in argv[1:]):
        seconds = creating_seconds("image")
        if seconds > 0:
            sys.stderr.write(f"rehearsal: emulating a Neuron image build on AWS: {seconds:.1f} s before the build\n")
            sys.stderr.flush()
            time.sleep(seconds)
    os.execv(target, [target, *argv[1:]])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
