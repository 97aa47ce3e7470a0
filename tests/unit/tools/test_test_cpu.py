# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/test-cpu.py: the per-test CPU lines of every worker summed per test file, most CPU first."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("test_cpu_tool", ROOT / "tools" / "test-cpu.py")
tool = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(tool)


def test_lines_of_two_workers_are_summed_per_file_most_cpu_first(tmp_path, capsys):
    first = "tests/a.py::test_one\t10.00\t1.00\t4.00\ntests/b.py::test_x[1]\t3.00\t0.50\t0.00\n"
    second = "tests/a.py::test_two\t5.00\t0.25\t2.75\ntests/b.py::test_x[2]\t50.00\t9.00\t1.00\n"
    (tmp_path / "cpu-gw0.tsv").write_text(first, encoding="utf-8")
    (tmp_path / "cpu-gw1.tsv").write_text(second, encoding="utf-8")
    assert tool.read(tmp_path / "cpu") == {"tests/a.py": [2, 15.0, 1.25, 6.75], "tests/b.py": [2, 53.0, 9.5, 1.0]}
    assert tool.main([str(tmp_path / "cpu"), "--machine", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # b.py used 10.5 CPU seconds, a.py 8: b first; the totals; what the machine spent outside the tests' processes.
    assert lines[1].split() == ["tests/b.py", "2", "53", "10", "1"]  # 10.5 rounds to even
    assert lines[2].split() == ["tests/a.py", "2", "15", "8", "7"]
    assert lines[3].split() == ["all", "4", "68", "18", "8"]
    assert "busy 30 core-seconds meanwhile: 12 of them outside" in lines[4]


def test_no_lines_says_so(tmp_path, capsys):
    assert tool.main([str(tmp_path / "cpu")]) == 0
    assert capsys.readouterr().out.startswith("no per-test CPU lines under ")
