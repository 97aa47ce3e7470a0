# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The run timeline: the stage plays' start and end notes summed up per stage (plugins/action/run_timeline.py)."""

from __future__ import annotations

import json

EVENTS = ("start", "end")


def summarize(entries):
    """Each stage's first start and last end, in the order the stages were first noted.

    ``entries``: dicts with ``stage``, ``event`` (start or end), ``time`` (seconds since the epoch) and
    ``within`` (the stage this one is a part of, or None). A stage with no start or no end yet is left out.
    Returns ``stages`` (stage, within, start, end, seconds), ``wall_seconds`` (first start to last end),
    ``stage_seconds`` (the stages within none, each second of work counted once) and ``overlap``
    (stage_seconds over wall_seconds; 1.0 when there is no wall time).
    """
    known = {}
    for entry in entries or []:
        if entry.get("event") not in EVENTS:
            raise ValueError(f"timeline entry {entry!r}: event must be one of {', '.join(EVENTS)}")
        times = known.setdefault(entry["stage"], {"within": entry.get("within")})
        time = float(entry["time"])
        if entry["event"] == "start":
            times.setdefault("start", time)
        else:
            times["end"] = time
    stages = [{"stage": name, "within": times["within"], "start": times["start"], "end": times["end"],
               "seconds": round(times["end"] - times["start"], 1)}
              for name, times in known.items() if "start" in times and "end" in times]
    if not stages:
        return {"stages": [], "wall_seconds": 0, "stage_seconds": 0, "overlap": 1.0}
    wall = round(max(s["end"] for s in stages) - min(s["start"] for s in stages), 1)
    stage_seconds = round(sum(s["seconds"] for s in stages if s["within"] is None), 1)
    overlap = round(stage_seconds / wall, 2) if wall > 0 else 1.0
    return {"stages": stages, "wall_seconds": wall, "stage_seconds": stage_seconds, "overlap": overlap}


def timeline_document(cluster, check_mode, summary):
    """The JSON written for a run (timeline-<start>.json, timeline-latest.json), keys sorted, with a final newline."""
    document = {"cluster": cluster, "check_mode": bool(check_mode), "stages": summary["stages"],
                "wall_seconds": summary["wall_seconds"], "stage_seconds": summary["stage_seconds"], "overlap": summary["overlap"]}
    return json.dumps(document, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def timeline_file_names(summary):
    """The files a run's timeline goes to: one named by its first stage's start, and the latest."""
    return [f"timeline-{int(summary['stages'][0]['start'])}.json", "timeline-latest.json"]
