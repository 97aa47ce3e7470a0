# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The index of the Python layer (plugins/module_utils/README.md) names every
file of module_utils and plugin_utils, and the pure files import neither
boto3 nor the Kubernetes client."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UTILS = ROOT / "plugins" / "module_utils"
PURE = ("trainium_limits.py", "trainium_problems.py", "trainium_facts.py", "trainium_deployment.py")


def test_every_python_file_is_in_the_index():
    index = (UTILS / "README.md").read_text()
    named = set(re.findall(r"`(?:\.\./plugin_utils/)?([a-z_]+\.py)`", index))
    files = {p.name for p in UTILS.glob("*.py")} | {p.name for p in (ROOT / "plugins" / "plugin_utils").glob("*.py")}
    assert files - {"__init__.py"} == named


def test_the_pure_files_call_no_service():
    for name in PURE:
        text = (UTILS / name).read_text()
        assert not re.search(r"^\s*(import|from)\s+(boto3|botocore|kubernetes|ansible_collections\.amazon)", text, re.M), name
