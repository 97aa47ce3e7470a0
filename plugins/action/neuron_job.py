# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of trainium.eks.neuron_job: run the module, then wait for the Job with progress lines.

After ``state: present`` (``wait: true``, not in check mode, not a skipped
precompile) it runs the module again with ``state: status`` every few seconds
and prints one line when the phase, the pod counts or rank 0's last LOG line
change, and at least every ``report_every`` seconds. It ends at once on:
the awaited phase (``running``: every pod Running, or Completed;
``completed``: Completed); a failed Job or a failed pod no restart replaces
(the failure names the pod, its exit code and its last log lines); pods
Pending with a scheduler reason for ``pending_timeout`` seconds (the failure
carries the reason); ``wait_timeout``. Never a FAILED - RETRYING loop.
"""

from __future__ import annotations

import time

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = "trainium.eks.neuron_job"
POLL_EVERY = 5.0


def duration(seconds):
    """``75`` -> ``1m15s``; under a minute, ``42s``."""
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def progress_line(what, status, elapsed):
    pods = status.get("pods") or {}
    line = (f"  {what}: {status.get('phase')}, {pods.get('running', 0)} running, {pods.get('pending', 0)} pending"
            + (f", {pods['succeeded']} succeeded" if pods.get("succeeded") else "")
            + (f", {pods['failed']} failed" if pods.get("failed") else "")
            + (f", restart {status['retry_count']}/{status.get('max_retry')}" if status.get("retry_count") else "")
            + f", {duration(elapsed)} so far")
    if status.get("last_log"):
        line += f"; {status['last_log']}"
    elif status.get("log_error"):
        line += f"; rank 0 {status['log_error']}"
    if status.get("pending_reason") and pods.get("pending"):
        line += f"; pending: {status['pending_reason']}"
    return line


def brief(result):
    """A failed wait's result without the rendered manifest: the message says what went wrong, the manifest is noise."""
    return {key: value for key, value in result.items() if key != "manifest"}


def failure_message(what, status):
    """The failure of a failed Job: the failing pod's name, exit code and last log lines."""
    pods = status.get("failed_pods") or []
    if not pods:
        return f"{what} is {status.get('phase')} (no failed pod left to show; restarts {status.get('retry_count')}/{status.get('max_retry')})"
    pod = pods[0]
    head = (f"{what} failed: pod {pod['name']} exited with code {pod.get('exit_code')}"
            + (f" ({pod['reason']}{': ' + pod['message'] if pod.get('message') else ''})" if pod.get("reason") else "")
            + f", job phase {status.get('phase')}, restarts {status.get('retry_count')}/{status.get('max_retry')}")
    if pod.get("log"):
        return head + f"; its last {len(pod['log'])} log lines:\n" + "\n".join(pod["log"])
    return head + f"; {pod.get('log_error') or 'its log is empty'}"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _status(self, args, task_vars):
        return self._execute_module(module_name=MODULE, module_args=dict(args, state="status"), task_vars=task_vars, wrap_async=False)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        answer = self._execute_module(module_name=MODULE, module_args=dict(args), task_vars=task_vars, wrap_async=False)
        result.update(answer)
        try:
            wait = boolean(args.get("wait", True), strict=False)
        except TypeError:
            wait = True
        if (answer.get("failed") or (args.get("state") or "present") != "present" or not wait or self._task.check_mode
                or answer.get("skipped_precompile")):
            return result
        return self._wait(result, args, task_vars)

    def _wait(self, result, args, task_vars):
        job = result.get("job") or {}
        what = f"Volcano Job {job.get('namespace')}/{job.get('name')}"
        wait_for = args.get("wait_for") or "completed"
        timeout = float(args.get("wait_timeout") or 3600)
        report_every = min(float(args.get("report_every") or 30), 30.0)
        pending_timeout = float(args["pending_timeout"] if args.get("pending_timeout") is not None else 60)
        started = time.monotonic()
        last_shown, last_report, pending_since, seen_failures = None, None, None, set()
        while True:
            answer = self._status(args, task_vars)
            elapsed = time.monotonic() - started
            if answer.get("failed"):
                return dict(brief(result), failed=True, msg=f"waiting for {what}: {answer.get('msg')}")
            status = answer.get("status") or {}
            result["status"] = status
            if answer.get("changed"):
                result["changed"] = True  # the precompile record was written
            pods = status.get("pods") or {}
            shown = (status.get("phase"), pods.get("running"), pods.get("pending"), pods.get("succeeded"), pods.get("failed"),
                     status.get("last_log"), status.get("retry_count"))
            if shown != last_shown or last_report is None or elapsed - last_report >= report_every:
                display.display(progress_line(what, status, elapsed))
                last_shown, last_report = shown, elapsed
            for pod in status.get("failed_pods") or []:
                if pod["name"] not in seen_failures and not status.get("failed_for_good"):
                    seen_failures.add(pod["name"])
                    display.display(f"  {what}: pod {pod['name']} failed (exit code {pod.get('exit_code')}); Volcano restarts the job "
                                    f"({status.get('retry_count')}/{status.get('max_retry')} restarts so far)")
            result["elapsed"] = round(elapsed, 1)
            if not status.get("exists"):
                return dict(brief(result), failed=True, msg=f"{what} is gone after {duration(elapsed)} (deleted while waiting?)")
            if status.get("done") or (wait_for == "running" and status.get("phase") == "Running"
                                      and pods.get("running", 0) >= max(int(status.get("nnodes") or 0), 1)):
                result["msg"] = f"{what} is {status.get('phase')} after {duration(elapsed)}"
                return result
            if status.get("failed_for_good"):
                return dict(brief(result), failed=True, msg=failure_message(what, status))
            if status.get("pending_reason") and (pods.get("pending") or status.get("phase") == "Pending"):
                pending_since = elapsed if pending_since is None else pending_since
                if elapsed - pending_since >= pending_timeout:
                    return dict(brief(result), failed=True,
                                msg=f"{what} stays Pending ({pods.get('pending', 0)} pod(s) pending, {duration(elapsed - pending_since)}): "
                                    f"{status['pending_reason']}")
            else:
                pending_since = None
            if elapsed >= timeout:
                late = (f"{what} is still {status.get('phase')} after {duration(elapsed)} "
                        f"(wait_timeout {duration(timeout)}, waiting for {wait_for})")
                return dict(brief(result), failed=True, msg=late)
            time.sleep(min(POLL_EVERY, report_every))
