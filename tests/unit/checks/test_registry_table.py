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
    assert list(found)[:2] == ["gpu_health", "xid"]  # diagnostics that name a dead part come first
