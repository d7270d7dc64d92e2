"""The HTML report tells what the run found (issue 23 item 2): every test below its reference counted
in its round (a pair test has rail ratios only), plot axes that start where the figures are with
every label inside the drawing, and trends that stop at the report's own run."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from provision.report import html, svg
from tests.unit.report.burnin_run import failing_run

SVG = ""  # inline SVG in HTML: no namespace declared


class _Rounds(HTMLParser):
    """The rows of the cluster section's rounds table: the text of each top-level cell."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.depth, self.cell = 0, None  # table nesting; the text of the open top-level cell

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.depth += 1
        elif tag == "tr" and self.depth == 1:
            self.rows.append([])
        elif tag == "td" and self.depth == 1:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.depth -= 1
        elif tag == "td" and self.depth == 1 and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None and self.depth == 1:
            self.cell += data


def _rounds_table(page: str) -> list[list[str]]:
    section = page.split('<section id="cluster">', 1)[1].split("</section>", 1)[0]
    parser = _Rounds()
    parser.feed(section.split("<h4>Rounds</h4>", 1)[1])
    return [row for row in parser.rows if row]


def _ratio(fraction_of_reference: float) -> float:
    """A rail's ratio as the cluster procedure saves it: measured / lower bound x 0.9 (reference 400, lower
    bound 380 Gb/s: provision.engine.cluster._observe)."""
    return round(fraction_of_reference * 400 / 380 * 0.9, 4)


def test_a_round_counts_a_pair_test_whose_one_rail_is_far_below_its_reference():
    run = failing_run()
    run.cluster["groups"][0]["rounds"] = [  # pair tests as cluster.py saves them: no collective ratio
        {"round": 1, "phase": "ib_pairs quick", "tests": [
            {"kind": "pair", "purpose": "cross-leaf", "hosts": ["n1", "n2"], "ratio": None,
             "rail_ratios": {"0": _ratio(0.98), "1": _ratio(0.23)}},
            {"kind": "pair", "purpose": "cross-leaf", "hosts": ["n3", "n4"], "ratio": None,
             "rail_ratios": {"0": _ratio(0.97), "1": _ratio(0.99)}}]},
        {"round": 2, "phase": "localize", "tests": [
            {"kind": "group", "purpose": "leaf group", "hosts": ["n1", "n2"], "ratio": _ratio(0.5), "rail_ratios": {}},
            {"kind": "pair", "purpose": "probe", "hosts": ["n2", "n3"], "ratio": None, "rail_ratios": {},
             "error": "ib_write_bw timed out"}]}]
    rows = _rounds_table(html.render(run))
    assert [(r[0], r[3]) for r in rows] == [("1", "1"), ("2", "2")]  # round 1 showed "0 below threshold"
    page = html.render(run)
    assert page.count('<tr class="below">') == 3


def _texts(chart: str):
    root = ET.fromstring(str(chart))
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    return root, width, height, list(root.iter(f"{SVG}text"))


def _box(text: ET.Element) -> tuple[float, float, float, float]:
    """The text's estimated box (x0, y0, x1, y1): svg.text_width per character count, 11 px high, rotated
    as its transform says (the column labels: -60 degrees about their anchor)."""
    label = "".join(text.itertext())
    w, x, y = svg.text_width(label), float(text.get("x")), float(text.get("y"))
    anchor = text.get("text-anchor", "start")
    if text.get("transform"):
        assert anchor == "end" and "rotate(-60" in text.get("transform")
        return x - w * svg.COS60, y - 9, x + 2, y + w * svg.SIN60 + 3
    x0 = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
    return x0, y - 9, x0 + w, y + 3


def _axis_figures(chart: str) -> list[float]:
    root, _, _, texts = _texts(chart)
    return [float(t.text.replace(",", "")) for t in texts
            if t.get("text-anchor") == "end" and not t.get("transform") and re.fullmatch(r"[-\d.,e+]+", t.text)]


def _columns(values: list[float], label: str = "gpu-node-{i:04d}.rack12.example") -> list[svg.Column]:
    return [svg.Column(label.format(i=i), (svg.Dot("mlx5_0", v, v >= 380),)) for i, v in enumerate(values)]


def test_an_axis_starts_near_figures_far_from_zero_and_says_so():
    chart = svg.strip(_columns([392.0, 395.5, 371.0, 398.0]), "Gb/s", 400.0, 380.0)
    figures = _axis_figures(chart)
    assert min(figures) == 360 and max(figures) == 410  # was 0 .. 500: a 6 % drop was a few pixels
    assert "axis from 360 Gb/s, not 0" in str(chart)
    dots = [float(c.get("cy")) for c in ET.fromstring(str(chart)).iter(f"{SVG}circle")]
    assert max(dots) - min(dots) > 90  # 371 and 398 Gb/s half the plot's height apart (was 11 px)


def test_an_axis_keeps_zero_when_a_figure_nearly_reaches_it():
    chart = svg.strip(_columns([392.0, 92.0]), "Gb/s", 400.0, 380.0)
    assert min(_axis_figures(chart)) == 0 and "not 0" not in str(chart)


def test_no_label_runs_out_of_the_drawing():
    many = _columns([380.0 + i % 20 for i in range(40)]) + _columns([1_234_567.0], "{i}+n2-with-a-long-name")
    for chart in (svg.strip(many, "Gb/s", 400.0, 380.0), svg.strip(_columns([395.0]), "GB/s", 480.0, 460.8),
                  svg.trend([("20261124-020000-nightly-with-a-long-id", 1_234_567.891), ("r2", 396.0),
                             ("20261201-020000-nightly-with-a-long-id", -12_345.5)], "Gb/s"),
                  svg.heatmap({(0, 1): 370.5, (1, 0): 371.0}, "GB/s", 380.0, 361.0)):  # its caption was cut
        _, width, height, texts = _texts(chart)
        assert texts
        for text in texts:
            x0, y0, x1, y1 = _box(text)
            assert 0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height, ("".join(text.itertext()), width, height)


def test_a_trend_stops_at_the_reports_run():
    run = failing_run()  # run id r-html
    trend = {"n1": [("r0", "nccl_allreduce 8 GPUs busbw_GBps", 470.0),
                    ("r-html", "nccl_allreduce 8 GPUs busbw_GBps", 474.5),
                    ("r9-newer", "nccl_allreduce 8 GPUs busbw_GBps", 468.0)]}
    page = html.render(run, None, trend)
    assert "nccl_allreduce 8 GPUs busbw_GBps over 2 runs" in page and "r9-newer" not in page
    assert "r0: 470 GB/s" in page and "r-html: 474.5 GB/s" in page
