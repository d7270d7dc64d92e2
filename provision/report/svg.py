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
    values in ``unit`` (None: not drawn). The y axis runs from 0 to the round step above the largest figure."""
    left, top, plot_h = 56, 22, 200
    step = min(max(560 / max(len(columns), 1), 14), 48)  # px per column: wide for a few nodes, 14 px at 40+
    bottom = 12 + 5.5 * min(max((len(c.label) for c in columns), default=1), 28)  # room for rotated labels
    columns = [Column(c.label, tuple(Dot(d.device, _finite(d.value), d.ok) for d in c.dots)) for c in columns]
    reference, lower = _finite(reference), _finite(lower)
    values = [d.value for c in columns for d in c.dots if d.value is not None]
    top_value = max(values + [v for v in (reference, lower) if v is not None] + [1e-9])
    tick = _tick(top_value)
    ymax = tick * (math.floor(top_value / tick) + 1)
    if not math.isfinite(ymax):  # the round step above a figure near the largest float overflows
        ymax, tick = top_value, top_value / 4
    width = max(left + step * len(columns) + 24, 480)

    def y(v: float) -> float:
        return top + plot_h * (1 - v / ymax)

    parts = [_open(width, top + plot_h + bottom, f"{len(columns)} columns in {unit}")]
    parts += _y_axis(left, width - 12, y, ymax, tick, unit)
    for name, value, colour in (("reference", reference, REF), ("lower bound", lower, LOW)):
        if value is not None:
            parts.append(f'<line x1="{left}" x2="{width - 12}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                         f'stroke="{colour}" stroke-dasharray="6 3"><title>{name} {escape(number(value))} '
                         f'{escape(unit)}</title></line>')
    for i, column in enumerate(columns):
        x = left + step * i + step / 2
        parts += [_dot(x, y, column.label, dot, unit) for dot in column.dots]
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 8}" text-anchor="end" '
                     f'transform="rotate(-60 {x:.1f} {top + plot_h + 8})">{escape(_short(column.label))}</text>')
    parts.append(_legend(left, reference, lower, unit))
    return Markup("".join(parts) + "</svg>")


def _dot(x: float, y, label: str, dot: Dot, unit: str) -> str:
    tip = f"<title>{escape(label)} {escape(dot.device)}: {escape(number(dot.value))} {escape(unit)}</title>"
    if dot.value is None:
        y0 = y(0.0)
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


def _y_axis(left: int, right: float, y, ymax: float, tick: float, unit: str) -> list[str]:
    """Gridlines and labels at every ``tick`` from 0 to ``ymax``, and the unit."""
    out = [f'<text x="4" y="14" fill="{INK}">{escape(unit)}</text>']
    for i in range(round(ymax / tick) + 1):
        v = tick * i
        out.append(f'<line x1="{left}" x2="{right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eceff1"/>'
                   f'<text x="{left - 4}" y="{y(v) + 4:.1f}" text-anchor="end" fill="{INK}">'
                   f"{escape(number(round(v, 1)))}</text>")
    return out


def _legend(left: int, reference: float | None, lower: float | None, unit: str) -> str:
    text = []
    if reference is not None:
        text.append(f'<tspan fill="{REF}">- - reference {escape(number(reference))} {escape(unit)}</tspan>')
    if lower is not None:
        text.append(f'<tspan fill="{LOW}"> - - lower bound {escape(number(lower))} {escape(unit)}</tspan>')
    return f'<text x="{left + 4}" y="14">{"".join(text)}</text>' if text else ""


def heatmap(cells: Mapping[tuple[int, int], float | None], unit: str, reference: float | None = None,
            lower: float | None = None, failing: frozenset[tuple[int, int]] = frozenset()) -> Markup:
    """A GPU x GPU heatmap of ``cells`` ({(source GPU, destination GPU): value in ``unit`` or None});
    ``failing`` the cells whose finding failed. Without a reference, colours scale to the largest cell."""
    cells = {pair: _finite(v) for pair, v in cells.items()}
    reference, lower = _finite(reference), _finite(lower)
    gpus = sorted({g for pair in cells for g in pair})
    size, left, top = 34, 40, 30
    side = left + size * len(gpus) + 8
    top_value = reference or max([v for v in cells.values() if v is not None] + [1e-9])
    parts = [_open(side, top + size * len(gpus) + 8, f"GPU x GPU {unit}"),
             f'<text x="{left}" y="12" fill="{INK}">source (row) -&gt; destination (column), {escape(unit)}</text>']
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
    the values' range (a flat series sits mid-height)."""
    width, height, pad = 320, 90, 14
    points = [(run, v) for run, v in points if _finite(v) is not None]  # a non-finite figure is not plotted
    values = [v for _, v in points]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    span = (high / 2 - low / 2) or 1.0  # halves: the span of -1e308 and 1e308 overflows a float
    step = (width - 2 * pad - 40) / max(len(points) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        fraction = (v / 2 - low / 2) / span if high > low else 0.5
        return pad + 40 + step * i, height - pad - (height - 2 * pad) * fraction

    coords = [xy(i, v) for i, (_, v) in enumerate(points)]
    parts = [_open(width, height, f"trend of {len(points)} runs in {unit}"),
             f'<text x="2" y="{pad}" fill="{INK}">{escape(number(high))}</text>',
             f'<text x="2" y="{height - pad + 4}" fill="{INK}">{escape(number(low))}</text>',
             f'<polyline fill="none" stroke="{REF}" stroke-width="1.5" points="'
             + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>']
    parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{REF}"><title>{escape(run)}: '
              f"{escape(number(v))} {escape(unit)}</title></circle>" for (x, y), (run, v) in zip(coords, points)]
    if points:
        parts.append(f'<text x="{pad + 40}" y="{height - 1}" fill="{INK}">{escape(_short(points[0][0]))}</text>'
                     f'<text x="{width - pad}" y="{height - 1}" text-anchor="end" fill="{INK}">'
                     f"{escape(_short(points[-1][0]))}</text>")
    return Markup("".join(parts) + "</svg>")


def _open(width: float, height: float, label: str) -> str:
    return (f'<svg role="img" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" {FONT} aria-label="{escape(label)}">')


def _short(text: str, most: int = 28) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."
