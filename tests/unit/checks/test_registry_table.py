"""The checks are found, not listed: README's check table is generated from their declarations."""
import re
from pathlib import Path

from provision import checks

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_table_is_the_generated_one():
    text = README.read_text()
    block = re.search(r"<!-- checks:begin[^>]*-->\n(.*?)\n\s*<!-- checks:end -->", text, re.S)
    assert block, "README.md lost its checks:begin/checks:end markers"
    shown = "\n".join(line.strip() for line in block.group(1).splitlines()) + "\n"
    assert shown == checks.markdown_table(), "README.md's check table is stale: paste `provision checks --markdown`"


def test_every_check_is_found_once_in_declared_order():
    found = checks.registry()
    assert len(found) >= 12 and len(set(found)) == len(found)
    orders = [c.order for c in found.values() if c.scope is checks.Scope.NODE]
    assert orders == sorted(orders)
    # Diagnostics that name a dead part (order band 10-29, provision/checks/base.py) come first, whichever
    # checks a site or a release adds to the band; gpu_health and xid are among them.
    diagnostics = [c.id for c in found.values() if c.scope is checks.Scope.NODE and c.order < 30]
    assert list(found)[:len(diagnostics)] == diagnostics
    assert {"gpu_health", "xid"} <= set(diagnostics)
