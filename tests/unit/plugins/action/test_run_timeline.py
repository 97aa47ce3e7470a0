# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.run_timeline: the sums of a run's stage notes, and the files it writes on the controller;
then summary.yml with it in a real ansible-playbook run (no AWS: the facts are given)."""

from __future__ import annotations

import json
import os
import pathlib
import stat
import subprocess
import sys

import pytest

from action_stub import stub_action
from ansible_collections.trainium.eks.plugins.action import run_timeline as plugin
from ansible_collections.trainium.eks.plugins.module_utils.trainium_timeline import summarize

ROOT = pathlib.Path(__file__).resolve().parents[4]


def note(stage, event, time, within=None):
    return {"stage": stage, "event": event, "time": time, "within": within}


# Infrastructure 0-100 with the cluster 10-60 within it; the image 5-80 and FSx 20-150 in the background;
# training 150-200. A stage noted twice keeps its first start and last end; a stage without an end is left out.
NOTES = [note("preflight", "start", 0.0), note("preflight", "end", 2.04),
         note("infrastructure", "start", 2.04), note("image", "start", 5), note("cluster", "start", 10, "infrastructure"),
         note("fsx", "start", 20), note("cluster", "end", 60, "infrastructure"), note("infrastructure", "end", 100),
         note("image", "end", 80), note("fsx", "end", 150), note("training", "start", 150), note("training", "end", 200),
         note("training", "start", 190), note("platform", "start", 120)]


def test_each_stage_first_start_last_end_and_the_overlap():
    summary = summarize(NOTES)
    assert [(s["stage"], s["start"], s["end"], s["seconds"], s["within"]) for s in summary["stages"]] == [
        ("preflight", 0.0, 2.04, 2.0, None), ("infrastructure", 2.04, 100.0, 98.0, None), ("image", 5.0, 80.0, 75.0, None),
        ("cluster", 10.0, 60.0, 50.0, "infrastructure"), ("fsx", 20.0, 150.0, 130.0, None), ("training", 150.0, 200.0, 50.0, None)]
    # The cluster is not counted twice: 2 + 98 + 75 + 130 + 50 over 200 s of wall time.
    assert summary["wall_seconds"] == 200.0 and summary["stage_seconds"] == 355.0 and summary["overlap"] == 1.77


def test_no_notes_and_a_bad_event():
    assert summarize([]) == {"stages": [], "wall_seconds": 0, "stage_seconds": 0, "overlap": 1.0}
    assert summarize([note("a", "start", 1)])["stages"] == []
    with pytest.raises(ValueError, match="event must be one of start, end"):
        summarize([note("a", "begin", 1)])


def _action(args, check_mode=False):
    return stub_action(plugin, args, check_mode=check_mode)


@pytest.fixture(autouse=True)
def no_base_run(monkeypatch):
    monkeypatch.setattr(plugin.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})


def test_writes_both_files_private_in_a_private_directory_and_changes_nothing(tmp_path):
    directory = tmp_path / "runs" / "trn"
    result = _action({"entries": NOTES, "cluster": "trn", "dir": str(directory)}, check_mode=True).run(task_vars={})
    assert not result.get("failed") and result["changed"] is False
    assert result["files"] == [str(directory / "timeline-0.json"), str(directory / "timeline-latest.json")]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for name in ("timeline-0.json", "timeline-latest.json"):
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600
        written = json.loads((directory / name).read_text())
        assert written["cluster"] == "trn" and written["check_mode"] is True and written["overlap"] == 1.77
        assert [s["stage"] for s in written["stages"]] == ["preflight", "infrastructure", "image", "cluster", "fsx", "training"]
    assert [p.name for p in directory.iterdir() if p.name.startswith(".")] == []


def test_nothing_to_write_without_times_and_clear_errors(tmp_path):
    assert _action({"entries": [], "dir": str(tmp_path / "x")}).run(task_vars={})["files"] == []
    assert not (tmp_path / "x").exists()
    bad = _action({"entries": "notes", "dir": str(tmp_path)}).run(task_vars={})
    assert bad["failed"] and bad["msg"].startswith("entries: got 'notes'; allowed:")
    nodir = _action({"entries": NOTES}).run(task_vars={})
    assert nodir["failed"] and nodir["msg"].startswith("dir: got nothing")
    blocked = tmp_path / "file"
    blocked.write_text("")
    refused = _action({"entries": NOTES, "dir": str(blocked / "runs")}).run(task_vars={})
    assert refused["failed"] and refused["msg"].startswith(f"trainium_timeline_dir: got {blocked}/runs, which cannot hold the run timeline")
    assert _action({"entries": NOTES, "dir": str(tmp_path), "write": "maybe"}).run(task_vars={})["msg"] == \
        "write: got 'maybe'; allowed: true or false"
    assert _action({"entries": NOTES, "dir": str(tmp_path / "no"), "write": "false"}).run(task_vars={})["files"] == []
    assert not (tmp_path / "no").exists()


def test_a_directory_others_could_swap_files_in_is_refused(tmp_path, monkeypatch):
    """A link, a directory others may write to, or another user's: nothing is written or chmodded there."""
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    (tmp_path / "link").symlink_to(target)
    for given in (str(tmp_path / "link"), f"{tmp_path}/link/"):
        linked = _action({"entries": NOTES, "dir": given}).run(task_vars={})
        assert linked["failed"] and "cannot hold the run timeline" in linked["msg"], given
    assert list(target.iterdir()) == [] and stat.S_IMODE(target.stat().st_mode) == 0o755

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    open_to_all = _action({"entries": NOTES, "dir": str(shared)}).run(task_vars={})
    assert open_to_all["failed"] and "others may write to it (mode 0777)" in open_to_all["msg"]
    assert list(shared.iterdir()) == []

    monkeypatch.setattr(plugin.os, "geteuid", lambda: os.stat(tmp_path).st_uid + 1)
    theirs = _action({"entries": NOTES, "dir": str(target)}).run(task_vars={})
    assert theirs["failed"] and "not to the user of this run" in theirs["msg"]
    assert list(target.iterdir()) == []


def test_a_link_planted_at_a_file_name_is_replaced_not_followed(tmp_path):
    directory = tmp_path / "runs"
    directory.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    victim.chmod(0o644)
    (directory / "timeline-latest.json").symlink_to(victim)
    assert not _action({"entries": NOTES, "dir": str(directory)}).run(task_vars={}).get("failed")
    assert victim.read_text() == "keep" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert not (directory / "timeline-latest.json").is_symlink()


def test_summary_play_prints_the_times_and_writes_the_timeline(tmp_path):
    """playbooks/summary.yml as site.yml runs it last: the validation pass (no call) makes the deployment fact,
    the notes come as extra vars."""
    playbook = tmp_path / "summary.yml"
    playbook.write_text(f"""
- name: The deployment fact, as the first play of site.yml makes it
  hosts: trainium
  gather_facts: false
  tasks:
    - name: Check the deployment variables
      trainium.eks.validate_variables:

- name: The summary
  ansible.builtin.import_playbook: {ROOT}/playbooks/summary.yml
""")
    extra = tmp_path / "extra.json"
    # A price of one's own contract for the pool's type (the local inventory's 2 x trn1.32xlarge on demand).
    extra.write_text(json.dumps({"trainium_timeline": NOTES, "trainium_timeline_dir": str(tmp_path / "runs"),
                                 "trainium_hourly_prices": {"trn1.32xlarge": 10.0}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    bin_dir = pathlib.Path(sys.executable).parent
    done = subprocess.run([str(bin_dir / "ansible-playbook"), str(playbook), "-i", "inventories/local", "-e", f"@{extra}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert ("Time per stage: preflight 2.0 s, infrastructure 98.0 s, image 75.0 s, fsx 130.0 s, training 50.0 s"
            " (within them: cluster 50.0 s); wall 200.0 s, overlap 1.77") in output, output[-3000:]
    assert json.loads((tmp_path / "runs" / "timeline-latest.json").read_text())["stage_seconds"] == 355.0
    assert "Trainium nodes cost about $20.00/h at on-demand list prices" in output
    assert "changed=0" in output
