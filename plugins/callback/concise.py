# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: concise
type: stdout
short_description: The default output without the bookkeeping tasks that went as planned
version_added: 0.4.0
description:
  - Prints what C(ansible.builtin.default) prints, except, at verbosity 0, the tasks that only keep
    books and reported C(ok) - C(set_fact), C(assert), role argument spec checks,
    C(trainium.eks.validate_variables) - and the C(include_tasks) / C(include_role) tasks with their
    C(included:) lines.
  - The header of a play shows with its first task that prints something, so a play that prints
    nothing (the C(never)-tagged Teardown play of C(site.yml) on a normal run) leaves no empty header.
  - Deprecation warnings that upstream modules give on every call, whatever their options, and that
    the collection has checked do not concern it, are left out (listed in C(KNOWN_DEPRECATIONS) of
    the plugin, each with its reason); every other deprecation shows.
  - Anything changed, failed, skipped on purpose or printed by C(debug) shows as usual; with C(-v) or
    more, everything does.
  - The collection's C(ansible.cfg) selects it; AWX and other callbacks are unaffected.
author:
  - trainium.eks developers (@trainium-eks)
extends_documentation_fragment:
  - ansible.builtin.default_callback
  - ansible.builtin.result_format_callback
requirements:
  - set as the stdout callback (C(stdout_callback = trainium.eks.concise))
"""

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

# Actions whose ok results are bookkeeping; their failures still show.
QUIET_ACTIONS = frozenset((
    "set_fact", "ansible.builtin.set_fact", "ansible.legacy.set_fact",
    "assert", "ansible.builtin.assert", "ansible.legacy.assert",
    "validate_argument_spec", "ansible.builtin.validate_argument_spec", "ansible.legacy.validate_argument_spec",
    "trainium.eks.validate_variables",
    "include_tasks", "ansible.builtin.include_tasks", "ansible.legacy.include_tasks",
    "include_role", "ansible.builtin.include_role", "ansible.legacy.include_role",
))


# (module, start of the message): deprecations an upstream module announces on
# every call, whatever its options, that do not concern the collection.
KNOWN_DEPRECATIONS = (
    # Said even when the task does not read the return value; nothing in the collection reads it.
    ("amazon.aws.iam_role", "In a release after 2026-05-01 iam_role.assume_role_policy_document_raw will no longer be returned"),
)


def _message(summary):
    return getattr(getattr(summary, "event", None), "msg", None) or str(summary)


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "trainium.eks.concise"

    def _quiet(self, result):
        return (self._display.verbosity < 1 and result._task.action in QUIET_ACTIONS
                and not result._result.get("changed", False))

    _pending_play = None

    def v2_playbook_on_play_start(self, play):
        if self._display.verbosity >= 1:
            super().v2_playbook_on_play_start(play)
            return
        # Shown with the play's first task banner (default's own state is kept as it would be).
        self._play = play
        self._pending_play = play

    def _print_task_banner(self, task):
        pending, self._pending_play = self._pending_play, None
        if pending is not None:
            super().v2_playbook_on_play_start(pending)
        super()._print_task_banner(task)

    def v2_runner_on_ok(self, result):
        if self._quiet(result):
            return
        super().v2_runner_on_ok(result)

    def v2_runner_item_on_ok(self, result):
        if self._quiet(result):
            return
        super().v2_runner_item_on_ok(result)

    def _handle_warnings(self, res):
        current = self._current_task_result
        if self._display.verbosity < 1 and current is not None and res.get("deprecations") and current.deprecations:
            action = current.task.resolved_action or current.task.action
            kept = [summary for summary in current.deprecations
                    if not any(action == module and _message(summary).startswith(start) for module, start in KNOWN_DEPRECATIONS)]
            if not kept:
                res.pop("deprecations", None)
            elif len(kept) < len(current.deprecations):
                res.pop("deprecations", None)
                for summary in kept:
                    self._display._deprecated(summary)
        super()._handle_warnings(res)

    def v2_playbook_on_include(self, included_file):
        if self._display.verbosity < 1:
            return
        super().v2_playbook_on_include(included_file)
