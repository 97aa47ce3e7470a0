# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium.eks.training_report: writes the two files, rewrites only what changed, writes nothing in check mode."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))

import tfevents_writer as writer  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.trainium.eks.plugins.modules import training_report  # noqa: E402  pylint: disable=wrong-import-position


def events(directory, steps=20, name="events.out.tfevents.1700000000.h.1.0", tensor_loss=False):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(b"".join(writer.training_events(steps, tensor_loss=tensor_loss)))


def test_writes_then_changes_nothing_then_rewrites_when_the_events_change(tmp_path, run_main):
    events(tmp_path / "tb")
    args = {"events_dir": str(tmp_path / "tb"), "dest": str(tmp_path / "report"), "job": "bert-pretrain"}

    code, result = run_main(training_report.main, args, check=True)
    assert code == 0 and result["changed"] is True
    assert not (tmp_path / "report").exists()

    code, result = run_main(training_report.main, args)
    assert code == 0 and result["changed"] is True
    assert result["counts"] == {"train/learning_rate": 20, "train/loss": 20, "train/throughput": 20}
    assert result["steps"] == {"first": 1, "last": 20}
    assert result["first_loss"] > result["last_loss"]
    png = Path(result["png"]).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert "train/throughput" in Path(result["html"]).read_text()
    mtime = os.stat(result["png"]).st_mtime_ns

    code, again = run_main(training_report.main, args)
    assert code == 0 and again["changed"] is False
    assert os.stat(result["png"]).st_mtime_ns == mtime

    events(tmp_path / "tb", steps=25, name="events.out.tfevents.1700000100.h.2.0", tensor_loss=True)
    code, result = run_main(training_report.main, args, check=True)
    assert code == 0 and result["changed"] is True
    assert Path(result["png"]).read_bytes() == png
    code, result = run_main(training_report.main, args)
    assert result["changed"] is True and result["steps"]["last"] == 25
    assert Path(result["png"]).read_bytes() != png


def test_a_corrupted_record_is_a_warning_and_a_problem(tmp_path, run_main):
    records = writer.training_events(6)
    records[2] = writer.record(writer.event(1.0, 2, writer.simple_value("train/loss", 1.0)), corrupt_data_crc=True)
    (tmp_path / "events.out.tfevents.1.h.1.0").write_bytes(b"".join(records))
    code, result = run_main(training_report.main, {"events_dir": str(tmp_path), "dest": str(tmp_path / "r")})
    assert code == 0
    assert len(result["problems"]) == 1 and "data CRC mismatch" in result["problems"][0]
    assert any("data CRC mismatch" in str(line) for line in result["warnings"]), result


def test_fails_without_event_files_or_loss(tmp_path, run_main):
    code, result = run_main(training_report.main, {"events_dir": str(tmp_path), "dest": str(tmp_path / "r")})
    assert code == 1 and "no TensorBoard event file" in result["msg"]
    (tmp_path / "events.out.tfevents.1.h.1.0").write_bytes(
        writer.record(writer.event(1.0, 1, writer.simple_value("other", 1.0))))
    code, result = run_main(training_report.main, {"events_dir": str(tmp_path), "dest": str(tmp_path / "r")})
    assert code == 1 and "no train/loss scalar" in result["msg"] and "other" in result["msg"]
    code, result = run_main(training_report.main, {"events_dir": str(tmp_path / "missing"), "dest": str(tmp_path / "r")})
    assert code == 1 and "not a directory" in result["msg"]
