#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_timeline
short_description: Sum up a run's stage times and record them as JSON, in one step on the controller
version_added: 0.4.0
description:
  - Reads the start and end notes the stage plays made (C(trainium_timeline), playbooks/tasks/timeline.yml) and
    returns each stage's first start, last end and seconds, the wall time (first start to last end), the sum of
    the top-level stages' times and the overlap (that sum over the wall time; 2 means two stages' work ran side
    by side on average).
  - Writes the result to C(timeline-<first start>.json) and C(timeline-latest.json) in O(dir) (made with mode
    0700; the files 0600, replaced atomically).
  - An action plugin, so that recording a run costs no module process. It never reports a change (the timeline
    is a record of the run, not a change to the deployment) and writes in check mode too (the file says so).
author:
  - trainium.eks developers (@trainium-eks)
options:
  entries:
    description:
      - The notes, in the order they were made - C(stage), C(event) (V(start) or V(end)), C(time) (seconds since
        the epoch) and C(within) (the stage this one is a part of, whose time is not counted again, or null).
      - A stage with no start or no end is left out.
    type: list
    elements: dict
    required: true
  cluster:
    description: The cluster name written into the file.
    type: str
  dir:
    description: The directory the files go to (C(~) is expanded). Required when O(write=true) and a stage has times.
    type: path
  write:
    description: Whether to write the files; V(false) only sums up.
    type: bool
    default: true
extends_documentation_fragment:
  - trainium.eks.controller_action
attributes:
  check_mode:
    support: full
    description: The same in check mode; the file records C(check_mode=true).
"""

EXAMPLES = r"""
- name: Write the run timeline
  trainium.eks.run_timeline:
    entries: "{{ trainium_timeline | default([]) }}"
    cluster: "{{ trainium_cluster_name }}"
    dir: "~/.cache/trainium-eks/runs/{{ trainium_cluster_name }}"
  register: summary_timeline
"""

RETURN = r"""
stages:
  description: Each stage with both a start and an end, in the order first noted.
  returned: always
  type: list
  elements: dict
  sample: [{"stage": "infrastructure", "within": null, "start": 1796176000.2, "end": 1796176183.1, "seconds": 182.9}]
wall_seconds:
  description: First start to last end, in seconds (0 without stages).
  returned: always
  type: float
stage_seconds:
  description: The sum of the seconds of the stages that are not within another.
  returned: always
  type: float
overlap:
  description: stage_seconds over wall_seconds (1.0 without wall time).
  returned: always
  type: float
files:
  description: The files written.
  returned: always
  type: list
  elements: path
"""
