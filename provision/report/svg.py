"""Inline SVG plots for the HTML report, drawn in Python: no JavaScript, no external files.

Three shapes, each returning one ``<svg>`` element as ``markupsafe.Markup`` (every label and
tooltip is escaped here, so Jinja's autoescape leaves the element alone):

- ``strip``: one column per node (or pair, or group), a dot per device measured there (an HCA, the
  all-reduce), a dashed line at the reference and one at its lower bound; failing dots red, a value
  that was not measured a red cross on the axis. Tooltips (SVG ``<title>``) give the exact figure.
- ``heatmap``: a GPU x GPU matrix (row: source GPU, column: destination GPU), each cell coloured by
  its value against the reference's lower bound (red below it, yellow at it, green at the
  reference), failing cells outlined; the diagonal and cells not measured grey.
- ``trend``: one metric of one node across runs (oldest first), a line with a dot per run.

Sizes are in SVG user units (= CSS px at the report's scale). SVG 1.1 elements only
(https://www.w3.org/TR/SVG11/): rect, line, circle, polyline, path, text, title.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from provision.results.model import number

PASS, FAIL, GREY, INK, REF, LOW = "#2e7d32", "#c62828", "#bdbdbd", "#37474f", "#1565c0", "#ef6c00"
FONT = 'font-family="system-ui,sans-serif" font-size="11"'


@dataclass(frozen=True)
class Dot:
    """One measured value: ``device`` its label (an HCA, "8 GPUs"), ``value`` in the chart's unit
    (None: not measured), ``ok`` its finding's verdict."""

    device: str
    value: float | None
    ok: bool


@dataclass(frozen=True)
class Column:
    """One x position: ``label`` (a host, "n1+n2") and the dots measured there."""

    label: str
    dots: tuple[Dot, ...]


def strip(columns: Sequence[Column], unit: str, reference: float | None = None,
          lower: float | None = None) -> Markup:
    """A strip chart of ``columns`` (see the module's doc); ``reference`` and ``lower`` absolute
    values in ``unit`` (None: not drawn). The y axis spans the figures (``_span``): it starts at 0 only
    when they reach near it, else at a round step below the lowest, said in the legend and marked on
    the axis. The margins are sized by the labels' estimated widths (``text_width``), so no label runs
    out of the drawing."""
    top, plot_h = 22, 200
    step = min(max(560 / max(len(columns), 1), 14), 48)  # px per column: wide for a few nodes, 14 px at 40+
    columns = [Column(c.label, tuple(Dot(d.device, _finite(d.value), d.ok) for d in c.dots)) for c in columns]
    reference, lower = _finite(reference), _finite(lower)
    values = [d.value for c in columns for d in c.dots if d.value is not None]
    ymin, ymax, tick = _span(values + [v for v in (reference, lower) if v is not None])
    labels = [_short(c.label) for c in columns]
    count = round((ymax / 2 - ymin / 2) / (tick / 2))
    ticks = [_axis_label(ymin + tick * i, tick) for i in range(count + 1)]
    left = max(56.0, 10 + max(text_width(t) for t in ticks),  # the y labels, and the first columns' labels
               *(text_width(t) * COS60 - step * i - step / 2 + 4 for i, t in enumerate(labels)))
    bottom = 16 + max((text_width(t) for t in labels), default=0.0) * SIN60  # room for rotated labels
    legend = _legend_text(reference, lower, unit, ymin)
    width = max(left + step * len(columns) + 24, 480, left + 4 + text_width(legend) + 8)

    def y(v: float) -> float:
        return top + plot_h * (1 - (v / 2 - ymin / 2) / (ymax / 2 - ymin / 2))  # halves: no overflow

    parts = [_open(width, top + plot_h + bottom, f"{len(columns)} columns in {unit}")]
    parts += _y_axis(left, width - 12, y, ymin, ticks, tick, unit)
    for name, value, colour in (("reference", reference, REF), ("lower bound", lower, LOW)):
        if value is not None:
            parts.append(f'<line x1="{left:.1f}" x2="{width - 12:.1f}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                         f'stroke="{colour}" stroke-dasharray="6 3"><title>{name} {escape(number(value))} '
                         f'{escape(unit)}</title></line>')
    for i, (column, label) in enumerate(zip(columns, labels)):
        x = left + step * i + step / 2
        parts += [_dot(x, y, ymin, column.label, dot, unit) for dot in column.dots]
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 8}" text-anchor="end" '
                     f'transform="rotate(-60 {x:.1f} {top + plot_h + 8})">{escape(label)}</text>')
    parts.append(_legend(left, reference, lower, unit, ymin))
    return Markup("".join(parts) + "</svg>")


# Label widths are estimated, not measured (no layout engine here): 0.62 em per character at the
# charts' 11 px, above the average advance of system-ui sans-serif faces' digits and lower case (about
# 0.55 em), so a margin sized by it holds the label.
CHAR_EM = 0.62
FONT_PX = 11
COS60, SIN60 = 0.5, math.sqrt(3) / 2  # the column labels are rotated by -60 degrees
# An axis starts at 0 when the lowest figure is within this fraction of the highest: a strip of dots
# encodes values by position, so its axis need not include 0 (Cleveland, The Elements of Graphing Data,
# 1985: a dot chart's scale need not start at zero), but when the figures nearly reach it anyway, 0 is
# the honest start.
ZERO_WITHIN = 0.5


def text_width(text: str, size: float = FONT_PX) -> float:
    """The estimated width in px of ``text`` at ``size`` px (``CHAR_EM`` per character)."""
    return len(text) * CHAR_EM * size


def _span(figures: list[float]) -> tuple[float, float, float]:
    """(axis minimum, maximum, gridline step) for ``figures``: 0 (or the round step below a negative
    lowest) up to the round step above the highest when the lowest is at most ``ZERO_WITHIN`` of it,
    else from a round step below the lowest (a quarter step's margin at least) to the one above the
    highest, the span at least 5 % of the highest (a flat series). About four steps; near the largest
    float, where round steps overflow, the figures' own range in four."""
    lo, hi = (min(figures), max(figures)) if figures else (0.0, 1.0)
    if hi > 0 and lo > ZERO_WITHIN * hi:
        tick = _tick(max(hi / 2 - lo / 2, hi / 40) * 2)  # halves: no overflow
        base = tick * math.floor(lo / tick)
        lo_axis = max(base - tick if lo - base < tick / 4 else base, 0.0)
    else:
        tick = _tick(max(abs(hi), abs(lo), 1e-9))
        lo_axis = 0.0 if lo >= 0 else -tick * math.ceil(-lo / tick)
    top_axis = tick * (math.floor(hi / tick) + 1)
    steps = (top_axis / 2 - lo_axis / 2) / (tick / 2)
    if not (math.isfinite(top_axis) and math.isfinite(lo_axis) and math.isfinite(steps)) or steps > 12:
        lo_axis, top_axis = min(lo, 0.0), max(hi, 1e-9)
        tick = top_axis / 4 - lo_axis / 4
    return lo_axis, top_axis, tick


def _axis_label(v: float, tick: float) -> str:
    """A gridline's figure: as many decimals as the step needs, large ones in exponent form."""
    if abs(v) >= 1e7:
        return f"{v:.3g}"
    decimals = max(0, -math.floor(math.log10(tick))) if 0 < tick < 1 else 0
    return f"{v:.{min(decimals, 6)}f}" if decimals else number(round(v))


def _dot(x: float, y, ymin: float, label: str, dot: Dot, unit: str) -> str:
    tip = f"<title>{escape(label)} {escape(dot.device)}: {escape(number(dot.value))} {escape(unit)}</title>"
    if dot.value is None:  # not measured: a cross at the foot of the axis
        y0 = y(ymin)
        return (f'<path d="M{x - 4:.1f} {y0 - 4:.1f}l8 8m0 -8l-8 8" stroke="{FAIL}" stroke-width="2">'
                f"{tip}</path>")
    return f'<circle cx="{x:.1f}" cy="{y(dot.value):.1f}" r="3.5" fill="{PASS if dot.ok else FAIL}">{tip}</circle>'


def _finite(value: float | None) -> float | None:
    """``value``, or None (drawn as not measured, a line left out) when it is not a finite number."""
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _tick(top: float) -> float:
    """A round gridline step (1, 2 or 5 times a power of ten) giving about four steps up to ``top``."""
    raw = top / 4
    power = 10.0 ** math.floor(math.log10(raw))  # a float: 10 ** 307 as an int overflows where it meets one
    return next(power * m for m in (1, 2, 5, 10) if power * m >= raw)


def _y_axis(left: float, right: float, y, ymin: float, ticks: list[str], tick: float, unit: str) -> list[str]:
    """Gridlines and their ``ticks`` labels every ``tick`` from ``ymin``, and the unit; an axis that
    does not start at 0 gets a break mark (two slashes) at its foot."""
    out = [f'<text x="4" y="14" fill="{INK}">{escape(unit)}</text>']
    for i, label in enumerate(ticks):
        v = ymin + tick * i
        out.append(f'<line x1="{left:.1f}" x2="{right:.1f}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eceff1"/>'
                   f'<text x="{left - 4:.1f}" y="{y(v) + 4:.1f}" text-anchor="end" fill="{INK}">'
                   f"{escape(label)}</text>")
    if ymin != 0:
        foot = y(ymin)
        out.append(f'<path d="M{left - 3:.1f} {foot - 6:.1f}l6 -4m-6 8l6 -4" stroke="{INK}" fill="none">'
                   f"<title>the axis starts at {escape(number(ymin))} {escape(unit)}, not 0</title></path>")
    return out


def _legend_parts(reference: float | None, lower: float | None, unit: str, ymin: float) -> list[tuple[str, str]]:
    """The legend's pieces, (colour, plain text) each: the reference line, the lower bound, an axis not from 0."""
    parts = []
    if reference is not None:
        parts.append((REF, f"- - reference {number(reference)} {unit}"))
    if lower is not None:
        parts.append((LOW, f" - - lower bound {number(lower)} {unit}"))
    if ymin != 0:
        parts.append((INK, f"; axis from {number(ymin)} {unit}, not 0"))
    return parts


def _legend_text(reference: float | None, lower: float | None, unit: str, ymin: float) -> str:
    """The legend as plain text (its width sizes the chart)."""
    return "".join(text for _, text in _legend_parts(reference, lower, unit, ymin))


def _legend(left: float, reference: float | None, lower: float | None, unit: str, ymin: float = 0.0) -> str:
    """The legend as SVG text, each piece in its line's colour; "" when there is none."""
    spans = "".join(f'<tspan fill="{colour}">{escape(text)}</tspan>'
                    for colour, text in _legend_parts(reference, lower, unit, ymin))
    return f'<text x="{left + 4:.1f}" y="14">{spans}</text>' if spans else ""


def heatmap(cells: Mapping[tuple[int, int], float | None], unit: str, reference: float | None = None,
            lower: float | None = None, failing: frozenset[tuple[int, int]] = frozenset()) -> Markup:
    """A GPU x GPU heatmap of ``cells`` ({(source GPU, destination GPU): value in ``unit`` or None});
    ``failing`` the cells whose finding failed. Without a reference, colours scale to the largest cell."""
    cells = {pair: _finite(v) for pair, v in cells.items()}
    reference, lower = _finite(reference), _finite(lower)
    gpus = sorted({g for pair in cells for g in pair})
    size, left, top = 34, 40, 30
    caption = f"source (row) -> destination (column), {unit}"
    side = max(left + size * len(gpus) + 8, left + text_width(caption) + 8)  # the caption fits too
    top_value = reference or max([v for v in cells.values() if v is not None] + [1e-9])
    parts = [_open(side, top + size * len(gpus) + 8, f"GPU x GPU {unit}"),
             f'<text x="{left}" y="12" fill="{INK}">{escape(caption)}</text>']
    for i, gpu in enumerate(gpus):
        parts.append(f'<text x="{left + size * i + size / 2}" y="{top - 4}" text-anchor="middle">{gpu}</text>'
                     f'<text x="{left - 6}" y="{top + size * i + size / 2 + 4}" text-anchor="end">{gpu}</text>')
    for r, src in enumerate(gpus):
        for c, dst in enumerate(gpus):
            value = cells.get((src, dst))
            colour = GREY if value is None or src == dst else _colour(value, top_value, lower)
            edge = f' stroke="{FAIL}" stroke-width="3"' if (src, dst) in failing else ' stroke="#fff"'
            x, y = left + size * c, top + size * r
            parts.append(f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{colour}"{edge}>'
                         f"<title>GPU{src} -&gt; GPU{dst}: {escape(number(value))} {escape(unit)}</title></rect>"
                         f'<text x="{x + size / 2}" y="{y + size / 2 + 4}" text-anchor="middle" font-size="9">'
                         f"{'' if value is None else escape(_short(f'{value:.0f}', 6))}</text>")
    return Markup("".join(parts) + "</svg>")


def _colour(value: float, reference: float, lower: float | None) -> str:
    """Red below ``lower``, then yellow at ``lower`` to green at ``reference`` (HSL hue 60 -> 120);
    without a lower bound, hue 0 -> 120 over 0 -> ``reference``."""
    if lower is not None and value < lower:
        return "hsl(0,70%,62%)"
    floor = lower if lower is not None else 0.0
    span = max(reference - floor, 1e-9)
    fraction = min(max((value - floor) / span, 0.0), 1.0)
    hue = 60 + 60 * fraction if lower is not None else 120 * fraction
    return f"hsl({hue:.0f},60%,62%)"


def trend(points: Sequence[tuple[str, float]], unit: str) -> Markup:
    """One metric across runs: ``points`` (run id, value in ``unit``), oldest first; the y axis spans
    the values' range (a flat series sits mid-height), its two figures left of the plot in a margin
    their width sets, the first and last run ids below it, each shortened to half the plot's width."""
    width, height, pad, foot = 320.0, 100, 14, 12  # foot: the band of run ids under the plot
    points = [(run, v) for run, v in points if _finite(v) is not None]  # a non-finite figure is not plotted
    values = [v for _, v in points]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    span = (high / 2 - low / 2) or 1.0  # halves: the span of -1e308 and 1e308 overflows a float
    left = max(pad + 40.0, 8 + text_width(number(high)), 8 + text_width(number(low)))
    width = max(width, left + 160)
    step = (width - pad - left) / max(len(points) - 1, 1)
    most = max(4, int((width - pad - left) / 2 / (CHAR_EM * FONT_PX)) - 1)  # run-id characters in half the plot

    def xy(i: int, v: float) -> tuple[float, float]:
        fraction = (v / 2 - low / 2) / span if high > low else 0.5
        return left + step * i, height - foot - pad - (height - foot - 2 * pad) * fraction

    coords = [xy(i, v) for i, (_, v) in enumerate(points)]
    parts = [_open(width, height, f"trend of {len(points)} runs in {unit}"),
             f'<text x="2" y="{pad}" fill="{INK}">{escape(number(high))}</text>',
             f'<text x="2" y="{height - foot - pad + 4}" fill="{INK}">{escape(number(low))}</text>',
             f'<polyline fill="none" stroke="{REF}" stroke-width="1.5" points="'
             + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>']
    parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{REF}"><title>{escape(run)}: '
              f"{escape(number(v))} {escape(unit)}</title></circle>" for (x, y), (run, v) in zip(coords, points)]
    if points:
        parts.append(f'<text x="{left:.0f}" y="{height - 4}" fill="{INK}">{escape(_short(points[0][0], most))}</text>')
    if len(points) > 1:
        parts.append(f'<text x="{width - pad:.0f}" y="{height - 4}" text-anchor="end" fill="{INK}">'
                     f"{escape(_short(points[-1][0], most))}</text>")
    return Markup("".join(parts) + "</svg>")


def _open(width: float, height: float, label: str) -> str:
    return (f'<svg role="img" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" {FONT} aria-label="{escape(label)}">')


def _short(text: str, most: int = 28) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."
