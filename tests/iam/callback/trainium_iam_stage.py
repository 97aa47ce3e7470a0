# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback for the IAM policy test: marks where each play and task starts in the AWS call record.

The requests recorded by tests/iam/trainium_iam_recorder.py go to the file
named by TRAINIUM_IAM_RECORD; this callback appends a line there whenever a
play or a task starts, so that every request after it belongs to that task
(one host, tasks one after another). tests/iam/iam_policy.py turns the plays
into stages (Preflight, Infrastructure, Teardown).
"""

from __future__ import annotations

DOCUMENTATION = """
name: trainium_iam_stage
type: aggregate
short_description: marks plays and tasks in the AWS call record of the IAM policy test
description:
  - Appends a JSON line to the file in E(TRAINIUM_IAM_RECORD) when a play or a task starts.
requirements:
  - enabled with E(ANSIBLE_CALLBACK_PLUGINS) and E(ANSIBLE_CALLBACKS_ENABLED)
"""

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "trainium_iam_stage"
    CALLBACK_NEEDS_ENABLED = True

    def _mark(self, **line):
        path = os.environ.get("TRAINIUM_IAM_RECORD")
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line, sort_keys=True) + "\n")

    def v2_playbook_on_play_start(self, play):
        self._mark(play=play.get_name())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._mark(task=task.get_name(), role=task._role.get_name() if task._role else None)  # pylint: disable=protected-access

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)
