# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""A minimal TensorBoard event writer for the tests, independent of the reader under test.

Its CRC32C is computed bit by bit (no table) and its protobuf encoding is
written out field by field, so a shared mistake with the reader is unlikely.
"""

from __future__ import annotations

import struct


def crc32c_bitwise(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _bit in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 * (crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c_bitwise(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(value):
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def key(number, wire):
    return varint((number << 3) | wire)


def length_field(number, payload):
    return key(number, 2) + varint(len(payload)) + payload


def simple_value(tag, value):
    """Summary.Value with simple_value (field 2, float)."""
    return length_field(1, length_field(1, tag.encode()) + key(2, 5) + struct.pack("<f", value))


def tensor_value(tag, value, packed_float_val=False, double=False):
    """Summary.Value with a scalar tensor (field 8) and scalars plugin metadata (field 9)."""
    if double:
        tensor = key(1, 0) + varint(2) + length_field(2, b"") + length_field(4, struct.pack("<d", value))
    elif packed_float_val:
        tensor = key(1, 0) + varint(1) + length_field(2, b"") + length_field(5, struct.pack("<f", value))
    else:
        tensor = key(1, 0) + varint(1) + length_field(2, b"") + length_field(4, struct.pack("<f", value))
    metadata = length_field(1, length_field(1, b"scalars"))
    return length_field(1, length_field(1, tag.encode()) + length_field(8, tensor) + length_field(9, metadata))


def image_value(tag):
    """A value of another plugin (images): the reader must leave it out."""
    tensor = key(1, 0) + varint(1) + length_field(4, struct.pack("<f", 42.0))
    metadata = length_field(1, length_field(1, b"images"))
    return length_field(1, length_field(1, tag.encode()) + length_field(8, tensor) + length_field(9, metadata))


def event(wall_time, step, values=b"", file_version=None):
    body = key(1, 1) + struct.pack("<d", wall_time) + key(2, 0) + varint(step)
    if file_version:
        body += length_field(3, file_version.encode())
    if values:
        body += length_field(5, values)
    return body


def record(data, corrupt_data_crc=False):
    header = struct.pack("<Q", len(data))
    crc = masked(data) ^ (1 if corrupt_data_crc else 0)
    return header + struct.pack("<I", masked(header)) + data + struct.pack("<I", crc)


def training_events(steps=20, start_time=1_700_000_000.0, tensor_loss=False):
    """Records of a short run: loss falling, warm-up learning rate, throughput around 100."""
    out = [record(event(start_time, 0, file_version="brain.Event:2"))]
    for step in range(1, steps + 1):
        loss = 10.0 / (1 + 0.1 * step)
        loss_value = tensor_value("train/loss", loss) if tensor_loss else simple_value("train/loss", loss)
        values = (loss_value + simple_value("train/learning_rate", 1e-4 * min(step, 5) / 5)
                  + simple_value("train/throughput", 100.0 + step % 3))
        out.append(record(event(start_time + step, step, values)))
    return out
