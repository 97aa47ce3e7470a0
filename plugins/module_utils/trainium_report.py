# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The training report of trainium.eks: a PNG of three panels and a self-contained HTML page.

Pure Python (struct and zlib): a small raster canvas with a 5x7 bitmap font
drawn for this collection, "nice" axis ticks (1, 2, 5 times a power of ten),
grid lines, tick labels and one polyline per panel, written as an 8-bit RGB
PNG. No matplotlib: the module runs with the Python of whatever host runs it,
adds no dependency to the collection, and its output is byte-for-byte the same
for the same data, which the module's "rewrite only when the content differs"
relies on.
"""

from __future__ import annotations

import base64
import datetime
import html
import math
import struct
import zlib

# 5x7 glyphs, one string of seven 5-bit rows each (1 = ink). Lower case is drawn as upper case.
_GLYPHS = {
    " ": "00000 00000 00000 00000 00000 00000 00000",
    "0": "01110 10001 10011 10101 11001 10001 01110",
    "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111",
    "3": "11111 00010 00100 00010 00001 10001 01110",
    "4": "00010 00110 01010 10010 11111 00010 00010",
    "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110",
    "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110",
    "9": "01110 10001 10001 01111 00001 00010 01100",
    ".": "00000 00000 00000 00000 00000 01100 01100",
    ",": "00000 00000 00000 00000 01100 00100 01000",
    "-": "00000 00000 00000 11111 00000 00000 00000",
    "+": "00000 00100 00100 11111 00100 00100 00000",
    "=": "00000 00000 11111 00000 11111 00000 00000",
    ":": "00000 01100 01100 00000 01100 01100 00000",
    "/": "00001 00001 00010 00100 01000 10000 10000",
    "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000",
    "_": "00000 00000 00000 00000 00000 00000 11111",
    "%": "11000 11001 00010 00100 01000 10011 00011",
    "?": "01110 10001 00001 00010 00100 00000 00100",
    "A": "01110 10001 10001 11111 10001 10001 10001",
    "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110",
    "D": "11100 10010 10001 10001 10001 10010 11100",
    "E": "11111 10000 10000 11110 10000 10000 11111",
    "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111",
    "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110",
    "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001",
    "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001",
    "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110",
    "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101",
    "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110",
    "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110",
    "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010",
    "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 10001 01010 00100 00100 00100",
    "Z": "11111 00001 00010 00100 01000 10000 11111",
}
_FONT = {char: [int(row, 2) for row in rows.split()] for char, rows in _GLYPHS.items()}

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
GRID = (225, 225, 225)
MUTED = (110, 110, 110)
COLORS = ((31, 119, 180), (214, 96, 0), (44, 140, 44))


class Canvas:
    """An RGB raster with the few drawing operations a line chart needs."""

    def __init__(self, width, height, background=WHITE):
        self.width = width
        self.height = height
        self.pixels = bytearray(bytes(background) * (width * height))

    def point(self, x, y, color):
        if 0 <= x < self.width and 0 <= y < self.height:
            offset = 3 * (y * self.width + x)
            self.pixels[offset:offset + 3] = bytes(color)

    def fill(self, x0, y0, x1, y1, color):
        for y in range(max(y0, 0), min(y1, self.height - 1) + 1):
            for x in range(max(x0, 0), min(x1, self.width - 1) + 1):
                self.point(x, y, color)

    def line(self, x0, y0, x1, y1, color, width=1):
        """Bresenham's line; ``width`` > 1 stamps a square pen."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        error = dx + dy
        low = -(width // 2)
        while True:
            for ox in range(low, low + width):
                for oy in range(low, low + width):
                    self.point(x0 + ox, y0 + oy, color)
            if x0 == x1 and y0 == y1:
                return
            doubled = 2 * error
            if doubled >= dy:
                error += dy
                x0 += sx
            if doubled <= dx:
                error += dx
                y0 += sy

    def text(self, x, y, string, color=BLACK, scale=2):
        """Draw ``string`` with its top-left corner at (x, y); returns the width drawn."""
        cursor = x
        for char in str(string):
            rows = _FONT.get(char.upper(), _FONT["?"])
            for row_index, bits in enumerate(rows):
                for col in range(5):
                    if bits & (1 << (4 - col)):
                        self.fill(cursor + col * scale, y + row_index * scale,
                                  cursor + col * scale + scale - 1, y + row_index * scale + scale - 1, color)
            cursor += 6 * scale
        return cursor - x

    @staticmethod
    def text_width(string, scale=2):
        return 6 * scale * len(str(string))

    def png(self):
        """The canvas as PNG bytes (8-bit RGB, no filter, deterministic)."""
        stride = 3 * self.width
        raw = b"".join(b"\x00" + bytes(self.pixels[row * stride:(row + 1) * stride]) for row in range(self.height))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def nice_ticks(low, high, count=5):
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high < low:
        low, high = high, low
    if high == low:
        pad = abs(low) * 0.1 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 0.5 and len(ticks) < 50:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def format_tick(value, step):
    """A tick label: plain with as many decimals as the step needs, or 1.5E-04 for very small or large numbers."""
    magnitude = max(abs(value), abs(step))
    if value != 0 and (magnitude >= 1e6 or magnitude < 1e-3):
        return f"{value:.1E}"
    decimals = max(0, -int(math.floor(math.log10(abs(step))))) if step else 0
    text = f"{value:.{decimals}f}"
    return "0" if text.strip("-0.") == "" else text


def draw_panel(canvas, top, height, title, points, color):
    """One chart (value over step) in the band [top, top + height) of the canvas."""
    left, right = 130, canvas.width - 30
    plot_top, plot_bottom = top + 40, top + height - 55
    canvas.text(left, top + 12, title, BLACK, 2)
    if not points:
        canvas.line(left, plot_top, right, plot_top, MUTED)
        canvas.line(left, plot_bottom, right, plot_bottom, MUTED)
        canvas.text(left + 20, (plot_top + plot_bottom) // 2 - 7, "no data", MUTED, 2)
        return
    steps = [point[0] for point in points]
    values = [point[1] for point in points if math.isfinite(point[1])] or [0.0]
    x_ticks = nice_ticks(min(steps), max(steps), 6)
    y_ticks = nice_ticks(min(values), max(values), 5)
    x_low, x_high = x_ticks[0], x_ticks[-1]
    y_low, y_high = y_ticks[0], y_ticks[-1]

    def to_x(step):
        return int(round(left + (step - x_low) / (x_high - x_low) * (right - left)))

    def to_y(value):
        value = min(max(value, y_low), y_high)
        return int(round(plot_bottom - (value - y_low) / (y_high - y_low) * (plot_bottom - plot_top)))

    x_step = x_ticks[1] - x_ticks[0] if len(x_ticks) > 1 else 1
    y_step = y_ticks[1] - y_ticks[0] if len(y_ticks) > 1 else 1
    for tick in y_ticks:
        y = to_y(tick)
        canvas.line(left, y, right, y, GRID)
        label = format_tick(tick, y_step)
        canvas.text(left - 8 - canvas.text_width(label), y - 7, label, MUTED, 2)
    for tick in x_ticks:
        x = to_x(tick)
        canvas.line(x, plot_top, x, plot_bottom, GRID)
        label = format_tick(tick, x_step)
        canvas.text(x - canvas.text_width(label) // 2, plot_bottom + 8, label, MUTED, 2)
    canvas.line(left, plot_top, left, plot_bottom, BLACK)
    canvas.line(left, plot_bottom, right, plot_bottom, BLACK)
    canvas.text(right - canvas.text_width("step"), plot_bottom + 30, "step", MUTED, 2)
    pixels = [(to_x(step), to_y(value)) for step, value in points if math.isfinite(value)]
    if len(pixels) == 1:
        x, y = pixels[0]
        canvas.fill(x - 3, y - 3, x + 3, y + 3, color)
    for (x0, y0), (x1, y1) in zip(pixels, pixels[1:]):
        canvas.line(x0, y0, x1, y1, color, 2)


def render_png(panels, width=960, panel_height=300, title=""):
    """PNG bytes of the panels: [(title, [(step, value), ...]), ...] stacked, under a title line."""
    head = 44 if title else 0
    canvas = Canvas(width, head + panel_height * len(panels))
    if title:
        canvas.text(20, 14, title, BLACK, 2)
    for index, (panel_title, points) in enumerate(panels):
        draw_panel(canvas, head + index * panel_height, panel_height, panel_title, points, COLORS[index % len(COLORS)])
    return canvas.png()


def _utc(seconds):
    if seconds is None:
        return ""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _number(value):
    return "" if value is None else f"{value:.6g}"


def tag_summary(scalars):
    """Per tag: points, first and last (step, value), minimum value."""
    summary = {}
    for tag in sorted(scalars):
        points = scalars[tag]
        if not points:
            continue
        summary[tag] = {
            "count": len(points),
            "first_step": points[0][0], "first": points[0][2],
            "last_step": points[-1][0], "last": points[-1][2],
            "min": min(point[2] for point in points),
        }
    return summary


def render_html(job, png, summary, scalars, panels_tags, problems, files):
    """The self-contained page: the PNG inlined as a data URI, a table per tag, the run's metadata; all text escaped."""
    times = [point[1] for points in scalars.values() for point in points if point[1]]
    steps = [point[0] for points in scalars.values() for point in points]
    esc = html.escape
    rows = "\n".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            esc(tag), item["count"], item["first_step"], esc(_number(item["first"])),
            item["last_step"], esc(_number(item["last"])), esc(_number(item["min"])))
        for tag, item in summary.items())
    problem_items = "".join(f"<li>{esc(line)}</li>" for line in problems)
    meta = [
        ("job", job),
        ("time range", f"{_utc(min(times))} - {_utc(max(times))}" if times else "none"),
        ("steps", f"{min(steps)} - {max(steps)}" if steps else "none"),
        ("event files", str(len(files))),
        ("panels", ", ".join(panels_tags)),
    ]
    meta_rows = "\n".join(f"<tr><th>{esc(key)}</th><td>{esc(value)}</td></tr>" for key, value in meta)
    image = base64.b64encode(png).decode("ascii")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Training report - {esc(job)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: left; }}
img {{ max-width: 100%; border: 1px solid #ddd; }}
</style>
</head>
<body>
<h1>Training report - {esc(job)}</h1>
<table class="run">
{meta_rows}
</table>
<img alt="loss, learning rate and throughput per step" src="data:image/png;base64,{image}">
<h2>Scalars</h2>
<table class="scalars">
<tr><th>tag</th><th>points</th><th>first step</th><th>first</th><th>last step</th><th>last</th><th>min</th></tr>
{rows}
</table>
{f'<h2>Problems</h2><ul class="problems">{problem_items}</ul>' if problems else ''}
</body>
</html>
"""


def build_report(data, job, loss_tag, lr_tag, throughput_tag):
    """(png bytes, html text, summary) of what :func:`trainium_tfevents.read_events_dir` read."""
    scalars = data["scalars"]
    panels = []
    for label, tag in (("loss", loss_tag), ("learning rate", lr_tag), ("throughput (seq/s)", throughput_tag)):
        points = [(point[0], point[2]) for point in scalars.get(tag, [])]
        panels.append((f"{label} - {tag}", points))
    png = render_png(panels, title=f"training report - {job}")
    summary = tag_summary(scalars)
    page = render_html(job, png, summary, scalars, [loss_tag, lr_tag, throughput_tag], data["problems"], data["files"])
    return png, page, summary
