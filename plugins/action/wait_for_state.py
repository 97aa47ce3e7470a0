# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of trainium.eks.wait_for_state: poll a module, print progress, never a FAILED line."""

from __future__ import annotations

import time

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

try:  # what the builtin gather_facts action uses to give the modules it runs their module_defaults
    from ansible.executor.module_common import _apply_action_arg_defaults
except ImportError:  # pragma: no cover - older or newer ansible-core: the caller passes every argument
    _apply_action_arg_defaults = None

display = Display()

_ARGS = ("module", "module_args", "state_path", "ready", "failed", "ready_count", "gone", "retry_on", "what", "typical",
         "delay", "first_delay", "timeout", "report_every")


def dig(result, path):
    """The value at the dotted ``path`` of ``result`` (None when a key is missing).

    A ``*`` key maps the rest of the path over a list: ``result.*.state`` is the list of the items' states
    (None when the value there is not a list).
    """
    value = result
    keys = path.split(".")
    for index, key in enumerate(keys):
        if key == "*":
            if not isinstance(value, list):
                return None
            rest = ".".join(keys[index + 1:])
            return [dig(item, rest) if rest else item for item in value]
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


# What a progress line says of a missing state (a Job without conditions yet, a resource not listed yet).
NO_STATE = "no state yet"


def describe(state):
    """A state as the progress lines print it; a list of states as counts: ``2 available, 1 pending``, or ``none``.

    A missing state reads ``no state yet`` (``1 with no state yet`` in a list), not ``None``.
    """
    if not isinstance(state, list):
        return NO_STATE if state is None else str(state)
    counts = {}
    for item in state:
        shown = f"with {NO_STATE}" if item is None else str(item)
        counts[shown] = counts.get(shown, 0) + 1
    return ", ".join(f"{count} {item}" for item, count in counts.items()) or "none"


def _retried(answer, retry_on):
    """The entry of ``retry_on`` that a failed module result matches (its message contains it, or its error code is it)."""
    code = dig(answer, "error.code")
    message = str(answer.get("msg") or "")
    return next((entry for entry in retry_on if entry == code or entry in message), None)


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
        for name in ("ready", "failed", "retry_on"):
            args[name] = args.get(name) or []
            if not isinstance(args[name], list):
                args[name] = [args[name]]
        if any(not isinstance(entry, str) or not entry for entry in args["retry_on"]):
            problems.append(f"retry_on: got {args['retry_on']!r}; allowed: a list of non-empty strings (error codes or parts of messages)")
        try:
            args["gone"] = boolean(args.get("gone") or False, strict=True)
        except TypeError:
            problems.append(f"gone: got {args.get('gone')!r}; allowed: true or false")
            args["gone"] = False
        if not args["ready"] and not args["gone"]:
            problems.append("ready: got []; allowed: the states that end the wait (or gone: true)")
        if args["ready"] and args["gone"]:
            problems.append(f"ready: got {args['ready']!r} with gone: true; allowed: one of them")
        if args.get("ready_count") is not None:
            try:
                args["ready_count"] = int(args["ready_count"])
            except (TypeError, ValueError):
                args["ready_count"] = -1
            if args["ready_count"] < 0:
                problems.append(f"ready_count: got {args['ready_count']!r}; allowed: 0 or more items")
            elif "*" not in str(args.get("state_path")).split("."):
                problems.append(f"ready_count: got {args['ready_count']} with state_path {args.get('state_path')!r}; "
                                "allowed: only with a state_path that maps a list (a * key)")
        for name, default, low in (("delay", 15, 0), ("first_delay", 0, 0), ("timeout", 1800, 0), ("report_every", 60, 0)):
            try:
                args[name] = float(args.get(name, default) if args.get(name) is not None else default)
            except (TypeError, ValueError):
                problems.append(f"{name}: got {args.get(name)!r}; allowed: a number of seconds")
                continue
            if args[name] < low:
                problems.append(f"{name}: got {args[name]}; allowed: {low} or more seconds")
        args["module_args"] = args.get("module_args") or {}
        return args, problems

    @staticmethod
    def _verdict(state, args):
        """``ready``, ``failed`` or None (wait on) for a state; a list state (a ``*`` in state_path) counts its items."""
        if args["gone"]:
            return "ready" if state is None or state == [] else None
        if not isinstance(state, list) or "*" not in args["state_path"].split("."):
            return "ready" if state in args["ready"] else "failed" if state in args["failed"] else None
        if any(item in args["failed"] for item in state):
            return "failed"
        done = sum(1 for item in state if item in args["ready"])
        wanted = args["ready_count"] if args.get("ready_count") is not None else max(len(state), 1)
        return "ready" if done >= wanted else None

    def _read(self, answer, args):
        """(outcome without polls and elapsed, state, verdict, the state as printed) of one run of the module;
        None for the outcome when the module failed in a way ``retry_on`` does not name."""
        retried = _retried(answer, args["retry_on"]) if answer.get("failed") else None
        if answer.get("failed") and retried is None:
            return None, None, "failed", None
        # A module that acts (a deletion retried while AWS refuses it) reports its change; a poll changes nothing.
        changed = bool(answer.pop("changed", False)) and bool(args["retry_on"]) and retried is None
        if retried is not None:
            outcome = {key: value for key, value in answer.items() if key not in ("exception", "failed", "msg")}
            outcome.update(changed=False, state=retried, refused=answer.get("msg"))
            return outcome, retried, None, f"refused ({retried})"
        state = dig(answer, args["state_path"])
        verdict = self._verdict(state, args)
        # Ready at null (ready: [null], or gone: true): the resource is no longer there.
        shown = "gone" if verdict == "ready" and (args["gone"] or state is None) else describe(state)
        return dict(answer, changed=changed, state=state), state, verdict, shown

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
        # first_delay: the first pause that long, each next one twice the last, up to delay.
        pause = min(args["first_delay"], args["delay"]) if args["first_delay"] else args["delay"]
        while True:
            polls += 1
            answer = self._execute_module(module_name=args["module"], module_args=dict(module_args),
                                          task_vars=task_vars, wrap_async=False)
            elapsed = time.monotonic() - started
            outcome, state, verdict, shown = self._read(answer, args)
            if outcome is None:
                return dict(answer, polls=polls, elapsed=round(elapsed, 1),
                            msg=f"waiting for {what}: {args['module']} failed: {answer.get('msg')}")
            outcome.update(polls=polls, elapsed=round(elapsed, 1))
            if verdict == "ready":
                if polls > 1:
                    display.display(f"  {what}: {shown} after {duration(elapsed)}")
                return outcome
            if verdict == "failed":
                return dict(outcome, failed=True, msg=f"{what} is {shown} after {duration(elapsed)}; it will not become "
                                                      f"{' or '.join(map(str, args['ready']))}")
            if self._task.check_mode:
                return dict(outcome, msg=f"check mode: {what} is {shown}; a real run would wait")
            if elapsed >= args["timeout"]:
                last_error = f"; last error: {outcome['refused']}" if outcome.get("refused") else ""
                return dict(outcome, failed=True, msg=f"{what} is still {shown} after {duration(elapsed)} "
                                                      f"(timeout {duration(args['timeout'])}{'; typically ' + typical if typical else ''})"
                                                      f"{last_error}")
            if state != last_state or elapsed - last_report >= args["report_every"]:
                display.display(f"  waiting for {what}: {shown}, {duration(elapsed)} so far"
                                f"{' (typically ' + typical + ')' if typical else ''}")
                last_state, last_report = state, elapsed
            time.sleep(pause)
            pause = min(pause * 2, args["delay"])
