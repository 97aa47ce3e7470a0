# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium.eks.concise, the stdout callback of the collection's ansible.cfg, on a playbook run locally (no service)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]
PLAYBOOK = """
- name: Work
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Keep books
      ansible.builtin.set_fact:
        books: kept
    - name: Check the books
      ansible.builtin.assert:
        that: books == 'kept'
    - name: Say something
      ansible.builtin.debug:
        msg: hello from the work play
    - name: Change something
      ansible.builtin.command: "true"
      changed_when: true

- name: Only when asked
  hosts: localhost
  gather_facts: false
  tags: [never, later]
  tasks:
    - name: Never on a normal run
      ansible.builtin.debug:
        msg: not printed

- name: Only bookkeeping
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Keep more books
      ansible.builtin.set_fact:
        more: kept
"""


def run(tmp_path, *args):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_STDOUT_CALLBACK="trainium.eks.concise", ANSIBLE_INVENTORY_ENABLED="host_list")
    binary = pathlib.Path(sys.executable).parent / "ansible-playbook"
    command = [str(binary), "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}", str(playbook), *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_bookkeeping_and_plays_that_print_nothing_are_left_out(tmp_path):
    out = run(tmp_path)
    assert "PLAY [Work]" in out and "hello from the work play" in out and "TASK [Change something]" in out
    assert "Keep books" not in out and "Check the books" not in out
    # No empty headers: neither the play the tags leave out nor the one whose tasks only keep books.
    assert "PLAY [Only when asked]" not in out and "PLAY [Only bookkeeping]" not in out
    assert "PLAY RECAP" in out and "changed=1" in out


def test_verbose_shows_everything(tmp_path):
    out = run(tmp_path, "-v")
    assert "TASK [Keep books]" in out and "PLAY [Only when asked]" in out and "PLAY [Only bookkeeping]" in out
