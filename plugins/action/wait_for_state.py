# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of trainium.eks.wait_for_state: poll a module, print progress, never a FAILED line."""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

try:  # what the builtin gather_facts action uses to give the modules it runs their module_defaults
    from ansible.executor.module_common import _apply_action_arg_defaults
except ImportError:  # pragma: no cover - older or newer ansible-core: the caller passes every argument
    _apply_action_arg_defaults = None

display = Display()

_ARGS = ("module", "module_args", "state_path", "ready", "failed", "what", "typical", "delay", "timeout", "report_every")


def dig(result, path):
    """The value at the dotted ``path`` of ``result`` (None when a key is missing)."""
    value = result
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def duration(seconds):
    """``75`` -> ``1m15s``; under a minute, ``42s``."""
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(_ARGS)
    _requires_connection = False

    def _arguments(self):
        args = dict(self._task.args)
        problems = []
        for name in ("module", "state_path", "what"):
            if not isinstance(args.get(name), str) or not args.get(name):
                problems.append(f"{name}: got {args.get(name)!r}; allowed: a non-empty string")
        for name in ("ready", "failed"):
            args[name] = args.get(name) or []
            if not isinstance(args[name], list):
                args[name] = [args[name]]
        if not args["ready"]:
            problems.append("ready: got []; allowed: the states that end the wait")
        for name, default, low in (("delay", 15, 0), ("timeout", 1800, 0), ("report_every", 60, 0)):
            try:
                args[name] = float(args.get(name, default) if args.get(name) is not None else default)
            except (TypeError, ValueError):
                problems.append(f"{name}: got {args.get(name)!r}; allowed: a number of seconds")
                continue
            if args[name] < low:
                problems.append(f"{name}: got {args[name]}; allowed: {low} or more seconds")
        args["module_args"] = args.get("module_args") or {}
        return args, problems

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args, problems = self._arguments()
        if problems:
            return dict(result, failed=True, msg="; ".join(problems))
        what, typical = args["what"], args.get("typical")
        module_args = dict(args["module_args"])
        if _apply_action_arg_defaults is not None:
            module_args = _apply_action_arg_defaults(args["module"], self._task, module_args, self._templar)
        started = time.monotonic()
        polls = 0
        last_state = object()
        last_report = 0.0
        while True:
            polls += 1
            answer = self._execute_module(module_name=args["module"], module_args=dict(module_args),
                                          task_vars=task_vars, wrap_async=False)
            elapsed = time.monotonic() - started
            if answer.get("failed"):
                return dict(answer, polls=polls, elapsed=round(elapsed, 1),
                            msg=f"waiting for {what}: {args['module']} failed: {answer.get('msg')}")
            state = dig(answer, args["state_path"])
            answer.pop("changed", None)
            outcome = dict(answer, changed=False, state=state, polls=polls, elapsed=round(elapsed, 1))
            if state in args["ready"]:
                if polls > 1:
                    display.display(f"  {what}: {state} after {duration(elapsed)}")
                return outcome
            if state in args["failed"]:
                return dict(outcome, failed=True, msg=f"{what} is {state} after {duration(elapsed)}; it will not become "
                                                      f"{' or '.join(map(str, args['ready']))}")
            if self._task.check_mode:
                return dict(outcome, msg=f"check mode: {what} is {state}; a real run would wait")
            if elapsed >= args["timeout"]:
                return dict(outcome, failed=True, msg=f"{what} is still {state} after {duration(elapsed)} "
                                                      f"(timeout {duration(args['timeout'])}{'; typically ' + typical if typical else ''})")
            if state != last_state or elapsed - last_report >= args["report_every"]:
                display.display(f"  waiting for {what}: {state}, {duration(elapsed)} so far"
                                f"{' (typically ' + typical + ')' if typical else ''}")
                last_state, last_report = state, elapsed
            time.sleep(args["delay"])
