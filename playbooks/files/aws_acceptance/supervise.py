# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance run's supervisor: site.yml, then the teardown whatever happened, then the check that nothing is left.

playbooks/aws_acceptance.yml starts it detached (its own session), so that
neither a failed stage nor an interrupted ansible-playbook leaves a paid
deployment behind: the supervisor runs the teardown after site.yml in every
case (an exception of its own included), and also when it is told to stop
(SIGINT, SIGTERM, SIGHUP: site.yml is interrupted, the teardown runs), or
when site.yml reaches the run's deadline (wall clock). Each teardown attempt
is bounded by the reserve, and tried twice. Signals during the teardown and
the check are noted and otherwise ignored. One supervisor per cluster (a
lock in the cluster's directory). It cannot outlive the machine: a reboot
or a lost session's credentials leave the teardown to you
(``ansible-playbook site.yml --tags teardown``, docs/acceptance.md).

It writes into its directory: ``pid`` (its own), ``state`` (one line the playbook polls: the
phase and the play it is in, then ``done``), ``<phase>.log`` (each
ansible-playbook's output), ``trace.jsonl`` (every AWS call,
trainium_aws_trace.py) and ``result.json``. Only the Python standard library.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
# What a stopped ansible-playbook gets: SIGINT first (it ends the current task), then SIGTERM, then SIGKILL.
STOP_GRACE_SECONDS = (90, 60)


class Supervisor:
    def __init__(self, args):
        self.args = args
        self.directory = pathlib.Path(args.dir)
        self.stop_reason = None
        self.phase = None
        self.child = None
        self.result = {"phases": [], "interrupted": None}

    def state(self, text):
        path = self.directory / "state"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, path)

    def interrupt(self):
        """Ask the running ansible-playbook to stop (its whole process group), if there is one."""
        if self.child is not None and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    def on_signal(self, number, _frame):
        name = signal.Signals(number).name
        if self.stop_reason is None:
            self.stop_reason = f"{name} during {self.phase or 'the start'}"
        if self.phase == "site":
            self.interrupt()

    def environment(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
        env["BOTOCORE_EXPERIMENTAL__PLUGINS"] = ",".join(
            filter(None, [env.get("BOTOCORE_EXPERIMENTAL__PLUGINS"), "trainium_aws_trace=trainium_aws_trace"]))
        env["TRAINIUM_AWS_TRACE"] = str(self.directory / "trace.jsonl")
        env["ANSIBLE_NOCOLOR"] = "1"
        return env

    def _follow(self, log):
        """Copy the child's output to its log; the state line follows its plays (a thread: a silent task must not
        keep the supervisor from its deadline)."""
        for line in self.child.stdout:
            log.write(line)
            log.flush()
            if line.startswith("PLAY [") and not line.startswith("PLAY RECAP"):
                self.state(f"{self.phase}: {line.strip().rstrip('*').strip()}")

    def run(self, phase, playbook, extra, deadline=None):
        """One ansible-playbook; stopped (SIGINT, then SIGTERM, then SIGKILL) at ``deadline`` (wall clock: AWS bills a
        suspended laptop's hours too) or, for site.yml, when the supervisor is told to stop. Returns its exit code."""
        self.phase = phase
        argv = [sys.executable, "-m", "ansible.cli.playbook", playbook]
        for inventory in self.args.inventory:
            argv += ["-i", inventory]
        argv += ["-e", f"@{self.args.vars}", *extra]
        started = time.time()
        self.state(f"{phase}: starting")
        with open(self.directory / f"{phase}.log", "w", encoding="utf-8") as log:
            log.write("$ " + " ".join(argv) + "\n")
            log.flush()
            self.child = subprocess.Popen(  # pylint: disable=consider-using-with
                argv, cwd=self.args.root, env=self.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, errors="replace", start_new_session=True)
            reader = threading.Thread(target=self._follow, args=(log,), daemon=True)
            reader.start()
            escalation = iter(((STOP_GRACE_SECONDS[0], signal.SIGTERM), (STOP_GRACE_SECONDS[1], signal.SIGKILL)))
            stopping_since, grace, then = None, None, None
            while self.child.poll() is None:
                time.sleep(2)
                now = time.time()
                if deadline is not None and now > deadline and stopping_since is None:
                    self.stop_reason = self.stop_reason or f"the deadline during {phase}"
                if stopping_since is None and (deadline is not None and now > deadline or phase == "site" and self.stop_reason):
                    self.interrupt()
                    stopping_since = now
                    grace, then = next(escalation)
                elif stopping_since is not None and then is not None and now - stopping_since > grace:
                    try:
                        os.killpg(self.child.pid, then)
                    except ProcessLookupError:
                        pass
                    stopping_since = now
                    grace, then = next(escalation, (None, None))
            reader.join(timeout=30)
            rc = self.child.returncode
        self.child = None
        self.result["phases"].append({"phase": phase, "rc": rc, "seconds": round(time.time() - started, 1),
                                      "log": str(self.directory / f"{phase}.log")})
        return rc

    def main(self):
        os.umask(0o077)
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, self.on_signal)
        (self.directory / "pid").write_text(f"{os.getpid()}\n", encoding="utf-8")
        started = time.time()
        root = pathlib.Path(self.args.root)
        site = teardown = verify = None
        try:
            if self.stop_reason is None:
                site = self.run("site", str(root / "site.yml"), [],
                                deadline=started + self.args.max_seconds - self.args.teardown_reserve)
        finally:
            # Whatever happened to site.yml (a failure, a stop, an exception here), the teardown runs: each attempt
            # bounded by the reserve, a second one when the first fails (a teardown converges on a rerun).
            teardown_args = ["--tags", "teardown"]
            for attempt in ("teardown", "teardown-again"):
                try:
                    teardown = self.run(attempt, str(root / "site.yml"), teardown_args,
                                        deadline=time.time() + self.args.teardown_reserve)
                except OSError as exc:
                    self.result.setdefault("errors", []).append(f"{attempt}: {exc}")
                    teardown = -1
                if teardown == 0:
                    break
            verify = self.run("verify", str(root / "playbooks" / "aws_acceptance.yml"),
                              ["-e", json.dumps({"trainium_acceptance_phase": "verify", "trainium_acceptance_dir": str(self.directory)})],
                              deadline=time.time() + 900)
            trace = self.directory / "trace.jsonl"
            calls = len(trace.read_text(encoding="utf-8").splitlines()) if trace.exists() else 0
            self.result.update(interrupted=self.stop_reason, site_rc=site if site is not None else -1, teardown_rc=teardown,
                               verify_rc=verify, trace=str(trace), calls=calls)
            (self.directory / "result.json").write_text(json.dumps(self.result, indent=2) + "\n", encoding="utf-8")
            self.state("done")
        return 0 if site == teardown == verify == 0 and self.stop_reason is None else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="the run's directory (state, logs, trace, result)")
    parser.add_argument("--root", required=True, help="the directory of site.yml")
    parser.add_argument("--vars", required=True, help="the acceptance deployment's variables (a YAML or JSON file)")
    parser.add_argument("-i", "--inventory", action="append", required=True, help="the inventory (repeatable)")
    parser.add_argument("--max-seconds", type=int, required=True, help="the run's maximum wall time")
    parser.add_argument("--teardown-reserve", type=int, required=True, help="seconds kept for the teardown and the check")
    args = parser.parse_args()
    # One supervisor per deployment: a second run on the same cluster waits for nothing and stops here.
    with open(pathlib.Path(args.dir).parent / ".lock", "a", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pathlib.Path(args.dir, "state").write_text("done\n", encoding="utf-8")
            pathlib.Path(args.dir, "result.json").write_text(json.dumps({
                "phases": [], "interrupted": "another acceptance run of this cluster is running", "site_rc": -1,
                "teardown_rc": -1, "verify_rc": -1, "trace": "", "calls": 0}) + "\n", encoding="utf-8")
            return 1
        return Supervisor(args).main()


if __name__ == "__main__":
    sys.exit(main())
