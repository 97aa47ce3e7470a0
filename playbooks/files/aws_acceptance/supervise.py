# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance run's supervisor: site.yml, then the teardown whatever happened, then the check that nothing is left.

playbooks/aws_acceptance.yml starts it detached (its own session), so that
neither a failed stage nor an interrupted ansible-playbook leaves a paid
deployment behind: the supervisor runs the teardown after site.yml in every
case, and also when it is told to stop (SIGINT, SIGTERM, SIGHUP: site.yml is
interrupted, the teardown runs), or when site.yml reaches the run's deadline.
Signals during the teardown and the check are noted and otherwise ignored.

It writes into its directory: ``pid`` (its own), ``state`` (one line the playbook polls: the
phase and the play it is in, then ``done``), ``<phase>.log`` (each
ansible-playbook's output), ``trace.jsonl`` (every AWS call,
trainium_aws_trace.py) and ``result.json``. Only the Python standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import subprocess
import sys
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

    def on_signal(self, number, _frame):
        name = signal.Signals(number).name
        if self.stop_reason is None:
            self.stop_reason = f"{name} during {self.phase}"
        if self.phase == "site" and self.child is not None and self.child.poll() is None:
            os.killpg(self.child.pid, signal.SIGINT)

    def environment(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
        env["BOTOCORE_EXPERIMENTAL__PLUGINS"] = ",".join(
            filter(None, [env.get("BOTOCORE_EXPERIMENTAL__PLUGINS"), "trainium_aws_trace=trainium_aws_trace"]))
        env["TRAINIUM_AWS_TRACE"] = str(self.directory / "trace.jsonl")
        env["ANSIBLE_NOCOLOR"] = "1"
        return env

    def run(self, phase, playbook, extra, deadline=None):
        """One ansible-playbook; the state line follows its plays. Returns its exit code."""
        self.phase = phase
        argv = [sys.executable, "-m", "ansible.cli.playbook", playbook]
        for inventory in self.args.inventory:
            argv += ["-i", inventory]
        argv += ["-e", f"@{self.args.vars}", *extra]
        started = time.monotonic()
        self.state(f"{phase}: starting")
        with open(self.directory / f"{phase}.log", "w", encoding="utf-8") as log:
            log.write("$ " + " ".join(argv) + "\n")
            log.flush()
            self.child = subprocess.Popen(  # pylint: disable=consider-using-with
                argv, cwd=self.args.root, env=self.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, errors="replace", start_new_session=True)
            for line in self.child.stdout:
                log.write(line)
                log.flush()
                if line.startswith("PLAY [") and not line.startswith("PLAY RECAP"):
                    self.state(f"{phase}: {line.strip().rstrip('*').strip()}")
                if deadline is not None and time.monotonic() > deadline and self.stop_reason is None:
                    self.stop_reason = f"the deadline ({self.args.max_seconds} s less the teardown's reserve) during {phase}"
                    os.killpg(self.child.pid, signal.SIGINT)
            rc = self.wait()
        self.child = None
        self.result["phases"].append({"phase": phase, "rc": rc, "seconds": round(time.monotonic() - started, 1),
                                      "log": str(self.directory / f"{phase}.log")})
        return rc

    def wait(self):
        for grace, then in zip(STOP_GRACE_SECONDS, (signal.SIGTERM, signal.SIGKILL)):
            try:
                return self.child.wait(timeout=None if self.stop_reason is None else grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.child.pid, then)
        return self.child.wait()

    def main(self):
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, self.on_signal)
        (self.directory / "pid").write_text(f"{os.getpid()}\n", encoding="utf-8")
        deadline = time.monotonic() + self.args.max_seconds - self.args.teardown_reserve
        root = pathlib.Path(self.args.root)
        site = self.run("site", str(root / "site.yml"), [], deadline=deadline)
        teardown = self.run("teardown", str(root / "site.yml"), ["--tags", "teardown"])
        if teardown != 0:  # once more: a teardown converges on a rerun
            teardown = self.run("teardown-again", str(root / "site.yml"), ["--tags", "teardown"])
        verify = self.run("verify", str(root / "playbooks" / "aws_acceptance.yml"),
                          ["-e", "trainium_acceptance_phase=verify", "-e", f"trainium_acceptance_dir={self.directory}"])
        trace = self.directory / "trace.jsonl"
        calls = len(trace.read_text(encoding="utf-8").splitlines()) if trace.exists() else 0
        self.result.update(interrupted=self.stop_reason, site_rc=site, teardown_rc=teardown, verify_rc=verify,
                           trace=str(trace), calls=calls)
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
    return Supervisor(parser.parse_args()).main()


if __name__ == "__main__":
    sys.exit(main())
