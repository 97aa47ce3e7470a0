# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example AWS inventory as a new user gets it: the validation pass
(playbooks/validate.yml, no API call) asks for one thing only, the user's own
addresses for the API endpoint; with them, every variable of every stage is
fine as shipped (Volcano v1.15.1 included: its checksum is shipped)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"


def _validate(*args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_NOCOLOR="1")
    return subprocess.run([str(BIN / "ansible-playbook"), str(ROOT / "playbooks" / "validate.yml"), "-i", str(ROOT / "inventories" / "aws"),
                           *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False)


def test_the_aws_inventory_asks_only_for_the_users_addresses():
    shipped = _validate()
    assert shipped.returncode == 2, shipped.stdout[-3000:]
    assert "1 problem(s) in the variables; nothing was created" in shipped.stdout, shipped.stdout[-3000:]
    assert "eks_cluster_public_access_cidrs[0]: got '203.0.113.0/24'" in shipped.stdout
    assert "volcano_manifest_sha256" not in shipped.stdout

    own = _validate("-e", json.dumps({"eks_cluster_public_access_cidrs": ["100.20.30.0/24"]}))
    assert own.returncode == 0, own.stdout[-3000:]
    assert "validation pass: the deployment variables and the" in own.stdout
