# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare two AWS call traces of acceptance runs (trace.jsonl): list the calls that differ.

    .venv/bin/python tools/compare-trace.py AWS_TRACE REHEARSAL_TRACE [--alias trn-bert=trn-rehearsal] [--operations-only]

A trace is what playbooks/aws_acceptance.yml records (one JSON line per call:
service, operation, params, error). Both are normalised first: resource IDs,
account IDs, regions, times and request tokens become placeholders, and each
``--alias A=B`` reads name A of the first trace as B. Then:

- calls that change something (not Describe/List/Get/...) are compared with
  their parameters and counted: ``ec2 CreateVpc`` twice here and once there
  is a difference;
- reads are compared by (service, operation, error) only, present or not: how
  often a wait polls depends on how long AWS took;
- an error code that one side got and the other did not is a difference.

Prints one line per difference and a last line with the counts; exit 0 when
nothing differs, 1 when something does, 2 when a trace cannot be read.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys

READ_PREFIXES = ("Describe", "List", "Get", "Search", "Head", "Check", "Lookup")
PLACEHOLDERS = (
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T[0-9:.]+(Z|[+-]\d{2}:?\d{2})?\b"), "<time>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE), "<uuid>"),
    (re.compile(r"\b([a-z]+(?:-[a-z]+)?)-[0-9a-f]{8,17}\b"), r"\1-<id>"),
    (re.compile(r"\b\d{12}\b"), "<account>"),
    (re.compile(r"\b(?:us|eu|ap|sa|ca|me|af|il|mx)-(?:gov-)?[a-z]+-\d\b"), "<region>"),
    (re.compile(r"\b(?:us|eu|ap|sa|ca|me|af|il|mx)(?:-gov)?[a-z]*\d-az\d+\b"), "<zone-id>"),
    # The id of a cluster's OIDC issuer (https://oidc.eks.<region>.amazonaws.com/id/<ID>), in URLs and provider ARNs.
    (re.compile(r"(oidc\.eks\.[^/\s]+/id/)[0-9A-Za-z]+"), r"\1<oidc-id>"),
)
VOLATILE_KEYS = {"ClientRequestToken", "ClientToken", "clientRequestToken", "NextToken", "nextToken", "Marker", "StartingToken"}


def normalise(value, aliases):
    if isinstance(value, dict):
        return {key: normalise(item, aliases) for key, item in sorted(value.items()) if key not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [normalise(item, aliases) for item in value]
    if isinstance(value, str):
        for name, replacement in aliases:
            value = value.replace(name, replacement)
        for pattern, replacement in PLACEHOLDERS:
            value = pattern.sub(replacement, value)
    return value


def read_trace(path, aliases):
    calls = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                call = json.loads(line)
                calls.append({"service": call["service"], "operation": call["operation"], "error": call.get("error"),
                              "params": normalise(call.get("params") or {}, aliases)})
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a trace line ({exc})") from exc
    return calls


def is_read(operation):
    return operation.startswith(READ_PREFIXES)


def signature(call, operations_only):
    base = (call["service"], call["operation"], call["error"] or "ok")
    if operations_only or is_read(call["operation"]):
        return base + ("",)
    return base + (json.dumps(call["params"], sort_keys=True),)


def compare(first, second, operations_only=False):
    """The differences between two normalised traces, one sentence each."""
    counts = [collections.Counter(signature(call, operations_only) for call in trace) for trace in (first, second)]
    differences = []
    for key in sorted(set(counts[0]) | set(counts[1])):
        service, operation, error, params = key
        here, there = counts[0][key], counts[1][key]
        shown = f"{service} {operation} ({error})" + (f" {params}" if params else "")
        if is_read(operation) or operations_only:
            if bool(here) != bool(there):
                differences.append(f"only in the {'first' if here else 'second'} trace: {shown}")
        elif here != there:
            differences.append(f"{shown}: {here} call(s) in the first trace, {there} in the second")
    return differences


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", help="a trace, for example the AWS run's")
    parser.add_argument("second", help="the trace to compare it with, for example the rehearsal's")
    parser.add_argument("--alias", action="append", default=[], metavar="A=B",
                        help="read name A (a cluster, a repository) of both traces as B; repeatable")
    parser.add_argument("--operations-only", action="store_true", help="compare which calls were made, not their parameters")
    args = parser.parse_args(argv)
    aliases = []
    for alias in args.alias:
        name, _equals, replacement = alias.partition("=")
        if not name or not replacement:
            parser.error(f"--alias: got {alias!r}; allowed: NAME=OTHER")
        aliases.append((name, replacement))
    try:
        traces = [read_trace(path, aliases) for path in (args.first, args.second)]
    except (OSError, ValueError) as exc:
        print(f"compare-trace: {exc}", file=sys.stderr)
        return 2
    differences = compare(*traces, operations_only=args.operations_only)
    for line in differences:
        print(line)
    print(f"{len(traces[0])} and {len(traces[1])} calls; {len(differences)} difference(s)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
