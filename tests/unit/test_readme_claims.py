"""README's measured claims say only what their measurements show and name what backs them (issue 34 item 6).

- A goal README calls met is met by a figure of README's own table beside it (the overhead table said 1.18 at 64
  nodes where the text said "the goal of 1.15 is met at 64 nodes").
- The claims about scale, memory and ansible-core versions name the test or bench that backs them, and each named
  file exists."""
from __future__ import annotations

import re

from provision import paths

README = (paths.ROOT / "README.md").read_text()


def _overhead_rows() -> list[tuple[int, float]]:
    """(nodes, engine / test) of the burn-in overhead table."""
    head = README.index("| nodes | engine / test |")
    rows = []
    for line in README[head:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((int(cells[0].replace(",", "")), float(cells[1])))
    return rows


def test_a_goal_called_met_is_met_by_the_tables_figures():
    rows = _overhead_rows()
    assert rows, "README's overhead table is gone"
    claims = re.findall(r"goal of ([\d.]+) is (not )?met", README)
    assert claims, "README no longer says whether the overhead goal is met"
    best = min(ratio for _nodes, ratio in rows)
    for goal, negated in claims:
        met = best <= float(goal)
        assert met != bool(negated), f"README says the goal of {goal} is {'not ' if negated else ''}met; table: {rows}"
    for goal, nodes in re.findall(r"goal of ([\d.]+) is met at ([\d,]+) nodes", README):
        ratio = dict(rows).get(int(nodes.replace(",", "")))
        assert ratio is not None and ratio <= float(goal), (nodes, ratio)


CLAIMS = {  # a phrase of a measured claim -> the test or bench README names beside it
    "opened at most 64 at a time": "tests/unit/engine/test_connects.py",
    "2.6 MB at 1,250 hosts": "bench/report_scale.py",
    "9.5 MiB at 128": "bench/burnin_overhead.py",
    "with 2.16.19, 2.19.14 and 2.21.5": "tests/integration/test_collection.py",
    "6 rounds at 128": "tests/unit/fabric/test_localize.py",
}


def test_measured_claims_name_what_backs_them_and_it_exists():
    flat = README
    for phrase, backer in CLAIMS.items():
        at = flat.find(phrase)
        assert at >= 0, f"README no longer says {phrase!r}: update CLAIMS with the claim as it is now"
        paragraph = flat[flat.rfind("\n\n", 0, at):flat.find("\n\n", at)]
        assert backer in paragraph, f"README's {phrase!r} does not name {backer}"
        assert (paths.ROOT / backer).is_file(), backer
