# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The pure-Python report: PNG structure, ticks, and an escaped self-contained HTML page."""

from __future__ import annotations

import base64
import re
import struct
import zlib

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_report as report


def scalars(steps=30):
    return {
        "train/loss": [(s, 1000.0 + s, 10.0 / (1 + 0.1 * s)) for s in range(1, steps + 1)],
        "train/learning_rate": [(s, 1000.0 + s, 1e-4 * min(s, 5) / 5) for s in range(1, steps + 1)],
        "train/throughput": [(s, 1000.0 + s, 100.0 + s % 3) for s in range(1, steps + 1)],
        "<script>alert(1)</script>": [(1, 1000.0, 1.0)],
    }


def data(steps=30):
    return {"scalars": scalars(steps), "files": ["events.out.tfevents.1.h.1.0"], "problems": ["a <bad> record"], "records": steps}


def png_chunks(png):
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos = 8
    chunks = []
    while pos < len(png):
        length = struct.unpack(">I", png[pos:pos + 4])[0]
        kind = png[pos + 4:pos + 8]
        body = png[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", png[pos + 8 + length:pos + 12 + length])[0]
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks.append((kind, body))
        pos += 12 + length
    return chunks


def test_png_is_valid_three_panels_with_ink_of_each_series_color():
    png, page, summary = report.build_report(data(), "bert-pretrain", "train/loss", "train/learning_rate", "train/throughput")
    chunks = png_chunks(png)
    assert [kind for kind, _body in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, color_type = struct.unpack(">IIBB", chunks[0][1][:10])
    assert (width, height, depth, color_type) == (960, 44 + 3 * 300, 8, 2)
    raw = zlib.decompress(chunks[1][1])
    assert len(raw) == height * (1 + 3 * width)
    pixels = b"".join(raw[row * (1 + 3 * width) + 1:(row + 1) * (1 + 3 * width)] for row in range(height))
    for index, color in enumerate(report.COLORS):
        band = pixels[3 * width * (44 + index * 300):3 * width * (44 + (index + 1) * 300)]
        assert bytes(color) in band, f"panel {index} has no line"
    assert 5_000 < len(png) < 400_000
    assert summary["train/loss"]["count"] == 30


def test_png_is_deterministic():
    first = report.build_report(data(), "j", "train/loss", "train/learning_rate", "train/throughput")
    second = report.build_report(data(), "j", "train/loss", "train/learning_rate", "train/throughput")
    assert first[0] == second[0] and first[1] == second[1]


def test_html_has_the_three_tags_the_inline_png_and_escapes_everything():
    png, page, _summary = report.build_report(data(), "job<&>\"x", "train/loss", "train/learning_rate", "train/throughput")
    for tag in ("train/loss", "train/learning_rate", "train/throughput"):
        assert f"<td>{tag}</td>" in page
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "job&lt;&amp;&gt;&quot;x" in page
    assert "a &lt;bad&gt; record" in page
    inline = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert inline and base64.b64decode(inline.group(1)) == png
    assert "http://" not in page and "https://" not in page
    assert "2023-11-14" not in page  # wall times 1000 s after the epoch
    assert "1970-01-01 00:16:41 UTC - 1970-01-01 00:16:70" not in page
    assert "1970-01-01 00:16:40 UTC - 1970-01-01 00:17:10 UTC" in page


def test_missing_series_gives_a_no_data_panel():
    only_loss = {"scalars": {"train/loss": [(1, 1.0, 2.0)]}, "files": ["f"], "problems": [], "records": 1}
    png, page, _summary = report.build_report(only_loss, "j", "train/loss", "train/learning_rate", "train/throughput")
    assert png_chunks(png)[0][0] == b"IHDR"
    assert "train/learning_rate" not in page.split("<h2>Scalars</h2>")[1]


@pytest.mark.parametrize("low, high", [(0.0, 10.0), (1e-5, 4e-4), (7.0, 7.0), (-3.5, 2.25), (0.0, 123456.0)])
def test_nice_ticks_cover_the_range_with_round_steps(low, high):
    ticks = report.nice_ticks(low, high)
    assert ticks[0] <= low and ticks[-1] >= high
    steps = {round(b - a, 15) for a, b in zip(ticks, ticks[1:])}
    assert len({f"{s:.6g}" for s in steps}) == 1
    mantissa = float(f"{next(iter(steps)):.6e}".split("e")[0])
    assert mantissa in (1.0, 2.0, 5.0)
    assert 3 <= len(ticks) <= 12


def test_tick_labels():
    assert report.format_tick(0.0001, 0.00005) == "1.0E-04"
    assert report.format_tick(2.5, 0.5) == "2.5"
    assert report.format_tick(200.0, 50.0) == "200"
    assert report.format_tick(-0.0, 0.5) == "0"


def test_every_glyph_is_seven_rows_of_five_bits():
    for char, rows in report._FONT.items():  # pylint: disable=protected-access
        assert len(rows) == 7 and all(0 <= row < 32 for row in rows), char
