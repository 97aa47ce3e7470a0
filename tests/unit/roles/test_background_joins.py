# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The joins of site.yml's background jobs (fsx_lustre and training_image tasks/join.yml), without AWS:
a local async job stands in for the module's, so the wait, the recorded facts and the removal of the job's
status file run for real, on success and on failure."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PLAY = """
- name: A background job collected by a role's join
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Start a job that prints JSON (a module's result) after a second
      ansible.builtin.shell: sleep 1; echo '{payload}'
      async: 60
      poll: 0
      vars: {{ansible_async_dir: "{async_dir}"}}
      register: job
    - name: Hand it to the role as present.yml would
      ansible.builtin.set_fact:
        {fact}
    - name: Join
      ansible.builtin.include_role:
        name: trainium.eks.{role}
        tasks_from: join
      vars: {{fsx_lustre_wait_delay: 1}}
    - name: Write the facts down
      ansible.builtin.copy:
        content: "{{{{ {facts} | to_json }}}}"
        dest: "{async_dir}/../facts.json"
        mode: "0600"
"""
FSX_FACT = ("fsx_lustre_facts: {file_system_id: fs-1, lifecycle: CREATING, background_job: "
            "{ansible_job_id: \"{{ job.ansible_job_id }}\", results_file: \"{{ job.results_file }}\"}}")
IMAGE_FACT = ("training_image_facts: {image: null, tag: null, digest: null, built: false, background_job: "
              "{ansible_job_id: \"{{ job.ansible_job_id }}\", results_file: \"{{ job.results_file }}\"}}")


def _run(tmp_path, role, fact, facts):
    async_dir = tmp_path / "async"
    async_dir.mkdir(mode=0o700)
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(payload="{}", async_dir=async_dir, fact=fact, role=role, facts=facts), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_NOCOLOR="1")
    done = subprocess.run([str(ROOT / ".venv/bin/ansible-playbook"), "-i", "localhost,", "-c", "local", str(play)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    return done, async_dir


def test_fsx_join_removes_the_status_file_also_when_the_job_result_is_not_a_file_system(tmp_path):
    done, async_dir = _run(tmp_path, "fsx_lustre", FSX_FACT, "fsx_lustre_facts")
    # The job's result carries no file_system: recording it fails, the clean-up in always: still runs.
    assert done.returncode == 2, done.stdout[-3000:]
    assert "Record the file system as AVAILABLE" in done.stdout and "Remove the background job's status file" in done.stdout
    assert list(async_dir.iterdir()) == [], done.stdout[-3000:]


def test_image_join_records_the_facts_with_the_end_time_and_removes_the_status_file(tmp_path):
    done, async_dir = _run(tmp_path, "training_image", IMAGE_FACT, "training_image_facts")
    assert done.returncode == 0, done.stdout[-3000:]
    facts = json.loads((tmp_path / "facts.json").read_text(encoding="utf-8"))
    assert facts["background_job"] is None and facts["built"] is False and facts["image"] is None
    assert isinstance(facts["built_at"], (int, float)) and facts["built_at"] > 0
    assert list(async_dir.iterdir()) == [], done.stdout[-3000:]


def test_fsx_join_without_a_background_job_changes_nothing(tmp_path):
    done, dummy = _run(tmp_path, "fsx_lustre", "fsx_lustre_facts: {file_system_id: fs-1, lifecycle: AVAILABLE, background_job: null}",
                       "fsx_lustre_facts")
    assert done.returncode == 0, done.stdout[-3000:]
    assert json.loads((tmp_path / "facts.json").read_text(encoding="utf-8")) == {
        "file_system_id": "fs-1", "lifecycle": "AVAILABLE", "background_job": None}
