# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rehearsal stand-in for the Neuron SDK's neuron_parallel_compile.

    neuron_parallel_compile COMMAND [ARGS...]
    neuron_parallel_compile "COMMAND LINE"      (one argument: run by bash, as TorchX passes it)

Runs COMMAND (as the real tool does to extract the graphs of a few training
steps), then "compiles" the graphs: it writes one small file per graph into
the compile cache named by --cache_dir in NEURON_CC_FLAGS (default
/var/tmp/neuron-compile-cache) and prints the real tool's summary lines
(Total graphs / Total successful compilations / Total failed compilations).
The number of graphs is TRAINIUM_REHEARSAL_COMPILE_GRAPHS (default 4). The
exit code is the command's, or 0.
"""

import hashlib
import os
import shlex
import subprocess
import sys


def cache_dir(flags):
    words = shlex.split(flags or "")
    for index, word in enumerate(words):
        if word.startswith("--cache_dir="):
            return word.split("=", 1)[1]
        if word == "--cache_dir" and index + 1 < len(words):
            return words[index + 1]
    return "/var/tmp/neuron-compile-cache"


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    env = dict(os.environ, NEURON_PARALLEL_COMPILE="1", NEURON_EXTRACT_GRAPHS_ONLY="1")
    # TorchX hands the whole command line over as one argument, which the real
    # tool runs through a shell; several arguments are run as they are.
    if len(sys.argv) == 2:
        code = subprocess.call(["/bin/bash", "-c", sys.argv[1]], env=env)
    else:
        code = subprocess.call(sys.argv[1:], env=env)
    if code != 0:
        print(f"neuron_parallel_compile: the command exited with {code}", file=sys.stderr)
        return code
    cache = cache_dir(os.environ.get("NEURON_CC_FLAGS"))
    graphs = int(os.environ.get("TRAINIUM_REHEARSAL_COMPILE_GRAPHS") or 4)
    seed = " ".join(sys.argv[1:]) + os.environ.get("NEURON_CC_FLAGS", "")
    for graph in range(graphs):
        digest = hashlib.sha256(f"{seed}#{graph}".encode()).hexdigest()[:20]
        module = os.path.join(cache, "neuronxcc-rehearsal", f"MODULE_{graph}_{digest}")
        os.makedirs(module, exist_ok=True)
        with open(os.path.join(module, "model.neff"), "w", encoding="utf-8") as neff:
            neff.write(f"rehearsal stand-in NEFF of graph {graph}\n")
        with open(os.path.join(module, "model.done"), "w", encoding="utf-8") as done:
            done.write("")
        print(f"Compiling graph {graph + 1}/{graphs}: {module}", flush=True)
    print(f"Total graphs: {graphs}")
    print(f"Total successful compilations: {graphs}")
    print("Total failed compilations: 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
