#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: training_report
short_description: Turn TensorBoard event files into a PNG and an HTML report of loss, learning rate and throughput
version_added: 0.4.0
description:
  - Reads every TensorBoard event file under O(events_dir) (recursively) with the collection's own reader - TFRecord
    framing with both masked CRC32C checksums checked, and C(Event) protocol buffers with scalar summaries, as
    C(simple_value) or as a scalar float, double or integer C(tensor).
  - Writes C(<dest>/training-report.png) (three panels per step - loss, learning rate, throughput) and
    C(<dest>/training-report.html) (self-contained - the PNG inlined as a data URI, a table of the first, last and
    minimum value of every tag, the run's job, time range and steps; all text escaped).
  - The PNG is drawn in pure Python (no matplotlib), byte for byte the same for the same data, so a file is
    rewritten only when its content differs.
  - A record with a wrong checksum is skipped and reported in RV(problems) (and as a warning); the rest is read.
  - Fails when no event file is found, or when none holds the loss tag.
author:
  - trainium.eks developers (@trainium-eks)
options:
  events_dir:
    description:
      - Directory with the event files, searched recursively (file names containing C(tfevents)).
    type: path
    required: true
  dest:
    description:
      - Directory of the report files; created when missing.
    type: path
    required: true
  job:
    description:
      - Name of the training job, for the titles and the run metadata.
    type: str
    default: training
  loss_tag:
    description:
      - Tag of the loss scalar.
    type: str
    default: train/loss
  learning_rate_tag:
    description:
      - Tag of the learning rate scalar.
    type: str
    default: train/learning_rate
  throughput_tag:
    description:
      - Tag of the throughput scalar (sequences per second).
    type: str
    default: train/throughput
attributes:
  check_mode:
    support: full
    description: Reads the events and reports whether the files would change; writes nothing.
  diff_mode:
    support: none
    description: No diff; the result's C(changed) says whether the PNG or the HTML differs.
notes:
  - Runs where the event files are, usually the controller (a mount of the shared volume, or files copied out of the
    TensorBoard pod by the monitoring role).
"""

EXAMPLES = r"""
- name: Write the training report of bert-pretrain
  trainium.eks.training_report:
    events_dir: /fsx/output/bert-pretrain/tensorboard
    dest: ~/.cache/trainium-eks/reports/trn-prod/bert-pretrain
    job: bert-pretrain
  register: report

- name: Show where it is
  ansible.builtin.debug:
    msg: "{{ report.html }} (loss {{ report.first_loss }} -> {{ report.last_loss }})"
"""

RETURN = r"""
png:
  description: Path of the PNG.
  returned: success
  type: str
  sample: /home/me/.cache/trainium-eks/reports/trn-prod/bert-pretrain/training-report.png
html:
  description: Path of the HTML page.
  returned: success
  type: str
  sample: /home/me/.cache/trainium-eks/reports/trn-prod/bert-pretrain/training-report.html
counts:
  description: Points per tag (one per step; a step written again after a resume counts once, the latest value wins).
  returned: success
  type: dict
  sample: {"train/loss": 50, "train/learning_rate": 50, "train/throughput": 50}
first_loss:
  description: Loss at the first step.
  returned: success
  type: float
  sample: 10.42
last_loss:
  description: Loss at the last step.
  returned: success
  type: float
  sample: 7.91
steps:
  description: First and last step of the loss.
  returned: success
  type: dict
  sample: {"first": 1, "last": 50}
summary:
  description: Per tag - count, first_step, first, last_step, last, min.
  returned: success
  type: dict
files:
  description: The event files read.
  returned: success
  type: list
  elements: str
problems:
  description: Records skipped (wrong checksum, truncated, undecodable), one line each.
  returned: success
  type: list
  elements: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.trainium.eks.plugins.module_utils.trainium_report import build_report
from ansible_collections.trainium.eks.plugins.module_utils.trainium_tfevents import read_events_dir

PNG_NAME = "training-report.png"
HTML_NAME = "training-report.html"


def _current(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _write(module, path, content):
    """Write atomically (temporary file in the same directory, then rename)."""
    directory = os.path.dirname(path)
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".training-report.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        os.chmod(temporary, 0o644)
        module.atomic_move(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            events_dir=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            job=dict(type="str", default="training"),
            loss_tag=dict(type="str", default="train/loss"),
            learning_rate_tag=dict(type="str", default="train/learning_rate"),
            throughput_tag=dict(type="str", default="train/throughput"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    events_dir = params["events_dir"]
    if not os.path.isdir(events_dir):
        module.fail_json(msg=f"events_dir {events_dir} is not a directory (where the job's TensorBoard event files should be)")
    data = read_events_dir(events_dir)
    if not data["files"]:
        module.fail_json(msg=f"no TensorBoard event file (name containing tfevents) under {events_dir}", problems=[])
    loss = data["scalars"].get(params["loss_tag"], [])
    if not loss:
        module.fail_json(
            msg=f"no {params['loss_tag']} scalar in {len(data['files'])} event file(s) under {events_dir}; "
                f"tags found: {sorted(data['scalars']) or 'none'}",
            files=data["files"], problems=data["problems"])
    for line in data["problems"]:
        module.warn(line)

    png, page, summary = build_report(data, params["job"], params["loss_tag"], params["learning_rate_tag"],
                                      params["throughput_tag"])
    dest = params["dest"]
    png_path = os.path.join(dest, PNG_NAME)
    html_path = os.path.join(dest, HTML_NAME)
    wanted = {png_path: png, html_path: page.encode("utf-8")}
    stale = [path for path, content in wanted.items() if _current(path) != content]
    if stale and not module.check_mode:
        os.makedirs(dest, exist_ok=True)
        for path in stale:
            _write(module, path, wanted[path])

    module.exit_json(
        changed=bool(stale),
        png=png_path,
        html=html_path,
        counts={tag: len(points) for tag, points in sorted(data["scalars"].items())},
        first_loss=loss[0][2],
        last_loss=loss[-1][2],
        steps={"first": loss[0][0], "last": loss[-1][0]},
        summary=summary,
        files=data["files"],
        problems=data["problems"],
    )


if __name__ == "__main__":
    main()
