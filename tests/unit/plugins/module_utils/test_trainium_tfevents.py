# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The TensorBoard event reader, against files written by an independent minimal writer (tfevents_writer)."""

from __future__ import annotations

import struct

import pytest

import tfevents_writer as writer
from ansible_collections.trainium.eks.plugins.module_utils import trainium_tfevents as tfevents


def write(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(records))
    return path


@pytest.mark.parametrize("data", [b"", b"a", b"123456789", bytes(range(256)) * 3])
def test_crc32c_matches_the_bitwise_definition(data):
    assert tfevents.crc32c(data) == writer.crc32c_bitwise(data)


def test_crc32c_known_value():
    # The CRC-32C check value of "123456789" (RFC 3720, iSCSI).
    assert tfevents.crc32c(b"123456789") == 0xE3069283


def test_reads_simple_value_scalars_recursively_and_in_step_order(tmp_path):
    write(tmp_path / "run" / "tensorboard" / "events.out.tfevents.1700000000.host.1.0", writer.training_events(20))
    data = tfevents.read_events_dir(str(tmp_path))
    assert data["problems"] == []
    assert len(data["files"]) == 1
    assert data["records"] == 21
    assert sorted(data["scalars"]) == ["train/learning_rate", "train/loss", "train/throughput"]
    loss = data["scalars"]["train/loss"]
    assert [point[0] for point in loss] == list(range(1, 21))
    assert loss[0][1] == 1_700_000_001.0
    assert loss[0][2] == pytest.approx(10.0 / 1.1, rel=1e-6)
    assert loss[-1][2] < loss[0][2]
    assert data["scalars"]["train/learning_rate"][0][2] == pytest.approx(2e-5, rel=1e-5)


@pytest.mark.parametrize("form", ["content", "float_val", "double"])
def test_reads_tensor_valued_scalars_and_skips_other_plugins(tmp_path, form):
    values = (writer.tensor_value("train/loss", 3.25, packed_float_val=form == "float_val", double=form == "double")
              + writer.image_value("samples/image"))
    write(tmp_path / "events.out.tfevents.1.h.1.0", [writer.record(writer.event(5.0, 7, values))])
    data = tfevents.read_events_dir(str(tmp_path))
    assert data["scalars"] == {"train/loss": [(7, 5.0, 3.25)]}


def test_corrupted_data_crc_is_reported_and_only_that_record_skipped(tmp_path):
    records = writer.training_events(5)
    records[3] = writer.record(writer.event(1_700_000_003.0, 3, writer.simple_value("train/loss", 99.0)), corrupt_data_crc=True)
    write(tmp_path / "events.out.tfevents.1.h.1.0", records)
    data = tfevents.read_events_dir(str(tmp_path))
    assert len(data["problems"]) == 1
    assert "record 3" in data["problems"][0] and "data CRC mismatch" in data["problems"][0]
    assert [point[0] for point in data["scalars"]["train/loss"]] == [1, 2, 4, 5]


def test_corrupted_length_crc_ends_the_file_with_a_problem(tmp_path):
    records = writer.training_events(4)
    bad = bytearray(records[2])
    bad[8] ^= 0xFF  # the length checksum
    records[2] = bytes(bad)
    write(tmp_path / "events.out.tfevents.1.h.1.0", records)
    data = tfevents.read_events_dir(str(tmp_path))
    assert any("length CRC mismatch" in line for line in data["problems"])
    assert [point[0] for point in data["scalars"]["train/loss"]] == [1]


def test_truncated_file_is_reported(tmp_path):
    blob = b"".join(writer.training_events(3))
    write(tmp_path / "events.out.tfevents.1.h.1.0", [blob[:-6]])
    data = tfevents.read_events_dir(str(tmp_path))
    assert any("truncated" in line for line in data["problems"])
    assert [point[0] for point in data["scalars"]["train/loss"]] == [1, 2]


def test_a_resumed_run_keeps_the_latest_value_of_a_step(tmp_path):
    first = [writer.record(writer.event(100.0 + s, s, writer.simple_value("train/loss", 10.0 - s))) for s in (1, 2, 3)]
    second = [writer.record(writer.event(200.0 + s, s, writer.simple_value("train/loss", 5.0 - s))) for s in (3, 4)]
    write(tmp_path / "a" / "events.out.tfevents.100.h.1.0", first)
    write(tmp_path / "b" / "events.out.tfevents.200.h.2.0", second)
    data = tfevents.read_events_dir(str(tmp_path))
    assert [(p[0], p[2]) for p in data["scalars"]["train/loss"]] == [(1, 9.0), (2, 8.0), (3, 2.0), (4, 1.0)]
    assert len(data["files"]) == 2


def test_other_files_are_ignored(tmp_path):
    (tmp_path / "checkpoint.pt").write_bytes(b"not an event file")
    assert tfevents.read_events_dir(str(tmp_path))["files"] == []


def test_undecodable_event_is_reported(tmp_path):
    write(tmp_path / "events.out.tfevents.1.h.1.0", [writer.record(b"\x0a\xff")])
    data = tfevents.read_events_dir(str(tmp_path))
    assert data["problems"] and "event 0" in data["problems"][0]


def test_negative_varint_and_packed_int_tensor():
    tensor = writer.key(1, 0) + writer.varint(9) + writer.length_field(10, writer.varint(-3))
    assert tfevents.tensor_scalar(tensor) == -3.0
    assert tfevents.decode_event(writer.event(1.0, 12))["step"] == 12
    assert struct.unpack("<I", writer.record(b"x")[-4:])[0] == tfevents.masked_crc32c(b"x")
