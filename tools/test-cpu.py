# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where pytest's CPU went, per test file: the sums of the lines tests/conftest.py writes with TRAINIUM_TEST_CPU_LOG.

Usage: .venv/bin/python tools/test-cpu.py PREFIX [--most N] [--machine CORE_SECONDS]

PREFIX-<worker>.tsv hold one line per test (node id, wall s, CPU s of the
pytest worker, CPU s of the child processes it waited for: ansible-playbook,
its module processes, kubectl). The table is sorted by CPU (worker + children),
most first; CPU the rehearsal's services spent for a test (moto, the API
server, the training workers on the pod runner) is not in it, and --machine
(the busy core-seconds of the whole machine during the run) shows how much
that was.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys


def read(prefix):
    """{file: [tests, wall, own, children]} from every PREFIX-*.tsv."""
    sums = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    base = pathlib.Path(prefix)
    for path in sorted(base.parent.glob(base.name + "-*.tsv")):
        for line in path.read_text(encoding="utf-8").splitlines():
            nodeid, wall, own, children = line.rsplit("\t", 3)
            row = sums[nodeid.split("::", 1)[0]]
            row[0] += 1
            row[1] += float(wall)
            row[2] += float(own)
            row[3] += float(children)
    return sums


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("prefix")
    parser.add_argument("--most", type=int, default=25)
    parser.add_argument("--machine", type=float, help="busy core-seconds of the whole machine during the run")
    args = parser.parse_args(argv)
    sums = read(args.prefix)
    if not sums:
        print(f"no per-test CPU lines under {args.prefix}-*.tsv")
        return 0
    rows = sorted(sums.items(), key=lambda item: item[1][2] + item[1][3], reverse=True)
    print(f"{'test file (most CPU first)':<64} {'tests':>5} {'wall s':>8} {'CPU s':>8} {'of which children':>18}")
    for name, (tests, wall, own, children) in rows[:args.most]:
        print(f"{name:<64} {tests:>5} {wall:>8.0f} {own + children:>8.0f} {children:>18.0f}")
    if len(rows) > args.most:
        rest = rows[args.most:]
        print(f"{'(' + str(len(rest)) + ' more files)':<64} {sum(r[1][0] for r in rest):>5} {sum(r[1][1] for r in rest):>8.0f} "
              f"{sum(r[1][2] + r[1][3] for r in rest):>8.0f} {sum(r[1][3] for r in rest):>18.0f}")
    tests = sum(r[0] for r in sums.values())
    cpu = sum(r[2] + r[3] for r in sums.values())
    print(f"{'all':<64} {tests:>5} {sum(r[1] for r in sums.values()):>8.0f} {cpu:>8.0f} {sum(r[3] for r in sums.values()):>18.0f}")
    if args.machine:
        print(f"the whole machine was busy {args.machine:.0f} core-seconds meanwhile: {args.machine - cpu:.0f} of them outside the tests' "
              "own processes (the rehearsal's services, the training workers, Molecule's lane)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
