# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""A reader of TensorBoard event files, written for trainium.eks (no tensorflow, no tensorboard).

An event file (``events.out.tfevents.<time>.<host>.<pid>.<n>``) is a sequence
of TFRecord records::

    uint64 length (little endian)
    uint32 masked CRC32C of the 8 length bytes
    bytes  data (length bytes): one serialized ``Event`` protocol buffer
    uint32 masked CRC32C of the data

Both checksums are checked. A record whose data checksum is wrong is reported
and skipped; a wrong length checksum (or a truncated record) ends the file,
since the framing after it cannot be trusted. Every such problem is reported.

From each ``Event`` it takes ``wall_time`` (field 1, double), ``step``
(field 2, int64) and the values of ``summary`` (field 5): ``tag`` (1) with
either ``simple_value`` (2, float) or a scalar ``tensor`` (8) of dtype float,
double or int (``tensor_content``, ``float_val``, ``double_val``,
``int_val``, ``int64_val``) - what TensorBoard's own writers emit. Values
whose metadata names a plugin other than ``scalars`` (images, histograms,
text) are left out.
"""

from __future__ import annotations

import os
import struct

EVENT_FILE_MARK = "tfevents"

# CRC32C (Castagnoli), reflected polynomial.
_CRC32C_POLY = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _bit in range(8):
            crc = (crc >> 1) ^ _CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    """CRC32C of ``data`` (bytes)."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    """The masked CRC32C that TFRecord frames carry."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


# Protocol buffer wire format.
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5

# TensorProto dtypes (tensorflow/core/framework/types.proto).
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64 = 1, 2, 3, 9
_CONTENT_FORMATS = {DT_FLOAT: "<f", DT_DOUBLE: "<d", DT_INT32: "<i", DT_INT64: "<q"}


class ProtoError(ValueError):
    """A protocol buffer that cannot be decoded."""


def _varint(buf, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ProtoError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtoError("varint longer than 10 bytes")


def fields(buf):
    """(field number, wire type, value) of each field of a message; value is int, or bytes for fixed and length types."""
    pos = 0
    end = len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
        elif wire == _FIXED64:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == _LENGTH:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == _FIXED32:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ProtoError(f"unsupported wire type {wire} (field {number})")
        if pos > end:
            raise ProtoError(f"field {number} runs past the end of the message")
        yield number, wire, value


def _signed64(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def _repeated(wire, value, fmt, size):
    """Values of a repeated numeric field: packed (length) or one fixed value."""
    if wire == _LENGTH:
        return [item[0] for item in struct.iter_unpack(fmt, value[:len(value) - len(value) % size])]
    if wire in (_FIXED32, _FIXED64):
        return [struct.unpack(fmt, value)[0]]
    return []


def _repeated_varint(wire, value):
    if wire == _VARINT:
        return [_signed64(value)]
    if wire != _LENGTH:
        return []
    out = []
    pos = 0
    while pos < len(value):
        item, pos = _varint(value, pos)
        out.append(_signed64(item))
    return out


def tensor_scalar(buf):
    """The single number of a scalar TensorProto (float, double, int32, int64), or None."""
    dtype = None
    content = None
    values = []
    for number, wire, value in fields(buf):
        if number == 1 and wire == _VARINT:
            dtype = value
        elif number == 4 and wire == _LENGTH:
            content = value
        elif number == 5:
            values.extend(_repeated(wire, value, "<f", 4))
        elif number == 6:
            values.extend(_repeated(wire, value, "<d", 8))
        elif number in (7, 10):
            values.extend(_repeated_varint(wire, value))
    if dtype not in _CONTENT_FORMATS:
        return None
    if content:
        fmt = _CONTENT_FORMATS[dtype]
        size = struct.calcsize(fmt)
        return float(struct.unpack(fmt, content[:size])[0]) if len(content) >= size else None
    return float(values[0]) if values else None


def _plugin_name(metadata):
    for number, wire, value in fields(metadata):
        if number == 1 and wire == _LENGTH:  # plugin_data
            for inner, inner_wire, name in fields(value):
                if inner == 1 and inner_wire == _LENGTH:
                    return name.decode("utf-8", "replace")
    return None


def summary_values(buf):
    """(tag, number) of each scalar value of a Summary."""
    out = []
    for number, wire, value in fields(buf):
        if number != 1 or wire != _LENGTH:
            continue
        tag = None
        scalar = None
        plugin = None
        for inner, inner_wire, item in fields(value):
            if inner == 1 and inner_wire == _LENGTH:
                tag = item.decode("utf-8", "replace")
            elif inner == 2 and inner_wire == _FIXED32:
                scalar = struct.unpack("<f", item)[0]
            elif inner == 8 and inner_wire == _LENGTH and scalar is None:
                scalar = tensor_scalar(item)
            elif inner == 9 and inner_wire == _LENGTH:
                plugin = _plugin_name(item)
        if tag is not None and scalar is not None and plugin in (None, "", "scalars"):
            out.append((tag, float(scalar)))
    return out


def decode_event(buf):
    """An Event as a dict: wall_time, step, values [(tag, number)], file_version (or None)."""
    event = {"wall_time": None, "step": 0, "values": [], "file_version": None}
    for number, wire, value in fields(buf):
        if number == 1 and wire == _FIXED64:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2 and wire == _VARINT:
            event["step"] = _signed64(value)
        elif number == 3 and wire == _LENGTH:
            event["file_version"] = value.decode("utf-8", "replace")
        elif number == 5 and wire == _LENGTH:
            event["values"].extend(summary_values(value))
    return event


def read_records(data, name="<data>"):
    """(records, problems): the data of each TFRecord of ``data`` whose checksums hold, and one line per problem."""
    records = []
    problems = []
    pos = 0
    index = 0
    while pos < len(data):
        if len(data) - pos < 12:
            problems.append(f"{name}: record {index} at byte {pos}: truncated header ({len(data) - pos} bytes left)")
            break
        header = data[pos:pos + 8]
        length = struct.unpack("<Q", header)[0]
        length_crc = struct.unpack("<I", data[pos + 8:pos + 12])[0]
        if masked_crc32c(header) != length_crc:
            problems.append(f"{name}: record {index} at byte {pos}: length CRC mismatch; the rest of the file is skipped")
            break
        start = pos + 12
        end = start + length
        if end + 4 > len(data):
            problems.append(f"{name}: record {index} at byte {pos}: truncated (needs {length} data bytes)")
            break
        payload = data[start:end]
        data_crc = struct.unpack("<I", data[end:end + 4])[0]
        if masked_crc32c(payload) != data_crc:
            problems.append(f"{name}: record {index} at byte {pos}: data CRC mismatch; record skipped")
        else:
            records.append(payload)
        pos = end + 4
        index += 1
    return records, problems


def event_files(events_dir):
    """Every event file under ``events_dir`` (recursive), sorted by path."""
    found = []
    for root, dirs, files in os.walk(events_dir):
        dirs.sort()
        for name in files:
            if EVENT_FILE_MARK in name and not name.endswith((".tmp", ".partial")):
                found.append(os.path.join(root, name))
    return sorted(found)


def read_events_dir(events_dir):
    """Scalars of every event file under ``events_dir``.

    Returns a dict: ``scalars`` {tag: [(step, wall_time, value), ...]} sorted by
    step, one point per step (the latest written wins: a job resumed from a
    checkpoint writes its steps again), ``files`` (paths), ``problems`` (lines),
    ``records`` (how many were decoded).
    """
    files = event_files(events_dir)
    raw = {}
    problems = []
    count = 0
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        name = os.path.relpath(path, events_dir)
        records, file_problems = read_records(data, name)
        problems.extend(file_problems)
        for index, record in enumerate(records):
            try:
                event = decode_event(record)
            except ProtoError as error:
                problems.append(f"{name}: event {index}: {error}")
                continue
            count += 1
            for tag, value in event["values"]:
                raw.setdefault(tag, []).append((event["step"], event["wall_time"] or 0.0, value))
    scalars = {}
    for tag, points in raw.items():
        latest = {}
        for step, wall_time, value in points:
            if step not in latest or wall_time >= latest[step][1]:
                latest[step] = (step, wall_time, value)
        scalars[tag] = [latest[step] for step in sorted(latest)]
    return {"scalars": scalars, "files": files, "problems": problems, "records": count}
