# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A minimal TensorBoard event-file writer (scalars only), standard library only.

The file format TensorBoard reads:

- a file named ``events.out.tfevents.<unix time>.<host>.<pid>.0``;
- a sequence of TFRecord records: ``uint64 length`` (little endian),
  ``uint32 masked_crc32c(length bytes)``, ``data``, ``uint32 masked_crc32c(data)``;
- each record's data is a serialized ``tensorflow.Event`` protocol buffer:
  ``double wall_time = 1; int64 step = 2; string file_version = 3;
  Summary summary = 5`` with ``Summary { repeated Value value = 1 }`` and
  ``Value { string tag = 1; float simple_value = 2 }``;
- the first record carries ``file_version = "brain.Event:2"``.

The protobuf encoding is written by hand (a handful of fields), so neither
tensorboard nor protobuf is needed to write.
"""

from __future__ import annotations

import os
import socket
import struct
import time

_CRC32C_POLY = 0x82F63B78  # Castagnoli, reflected


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _bit in range(8):
            crc = (crc >> 1) ^ _CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of data."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The CRC as TFRecord stores it: rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data: bytes) -> bytes:
    """One TFRecord frame around data."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked_crc32c(length)) + data
            + struct.pack("<I", masked_crc32c(data)))


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint((field << 3) | wire_type)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def encode_event(wall_time: float, step: int = 0, file_version: str | None = None,
                 scalars: dict | None = None) -> bytes:
    """Serialize an Event with optional file_version and scalar summary values."""
    out = _key(1, 1) + struct.pack("<d", wall_time)
    if step:
        out += _key(2, 0) + _varint(int(step))
    if file_version is not None:
        out += _length_delimited(3, file_version.encode("utf-8"))
    if scalars:
        summary = b""
        for tag, value in scalars.items():
            item = _length_delimited(1, tag.encode("utf-8"))
            item += _key(2, 5) + struct.pack("<f", float(value))
            summary += _length_delimited(1, item)
        out += _length_delimited(5, summary)
    return out


class EventWriter:
    """Appends scalar events to a new event file in logdir; flushed after each write."""

    def __init__(self, logdir: str, suffix: str = ""):
        os.makedirs(logdir, exist_ok=True)
        name = "events.out.tfevents.%d.%s.%d.0%s" % (
            int(time.time()), socket.gethostname(), os.getpid(), suffix)
        self.path = os.path.join(logdir, name)
        self._file = open(self.path, "ab")  # pylint: disable=consider-using-with
        self._write(encode_event(time.time(), file_version="brain.Event:2"))

    def _write(self, event: bytes):
        self._file.write(tfrecord(event))
        self._file.flush()

    def add_scalars(self, step: int, scalars: dict, wall_time: float | None = None):
        """One Event holding every tag -> value of scalars at step."""
        self._write(encode_event(time.time() if wall_time is None else wall_time,
                                 step=step, scalars=scalars))

    def add_scalar(self, tag: str, value: float, step: int):
        self.add_scalars(step, {tag: value})

    def close(self):
        if not self._file.closed:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
