"""Generate provision/checks/xid_catalogue.json: NVIDIA's Xid catalogue as data.

Source: "Analyzing Xid Errors with the Xid Catalog", Table 1 Xids
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) and the spreadsheet it links
(https://docs.nvidia.com/deploy/xid-errors/Xid-Catalog.xlsx). Two inputs, read 2026-12-02:

- ``SHEET``: the spreadsheet's "Xids" rows (code, mnemonic, description, immediate and investigatory
  resolution bucket) as extracted cell by cell from NVIDIA's Xid-Catalog.xlsx into Go literals by
  leptonai/gpud (components/accelerator/nvidia/xid/catalog_generated.go, "Generated at
  2025-10-29T00:35:32Z"). Only the string literals are read; nothing of that file is kept.
- ``PAGE``: tools/xid_catalogue_page.tsv, the columns that extraction lacks (Applies to A100 / H100 /
  B100 / GB200, the "Xid 154 linkage" release, the guidance text of the rows without a bucket),
  transcribed from the page's table; each row names its mnemonic so that a shifted row is refused.

Usage: python tools/xid_catalogue.py SHEET [PAGE] [OUT]
The two inputs must list the same codes with the same mnemonics, or nothing is written.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "tools" / "xid_catalogue_page.tsv"
OUT = ROOT / "provision" / "checks" / "xid_catalogue.json"
URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
SHEET_URL = "https://docs.nvidia.com/deploy/xid-errors/Xid-Catalog.xlsx"
READ_ON = "2026-12-02"
ARCHES = ("A100", "H100", "B100", "GB200")
_GO_STRING = r'"((?:[^"\\]|\\.)*)"'
_ROW = re.compile(r"\{Code: (\d+), Mnemonic: " + _GO_STRING + r", Description: " + _GO_STRING
                  + r", ImmediateResolution: " + _GO_STRING + r", InvestigatoryResolution: " + _GO_STRING + r"\}")


def _unquote(text: str) -> str:
    """A Go string literal's body as text (its escapes: \\n, \\", \\\\)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def _clean(text: str) -> str | None:
    """Cell text on one line; None for an empty cell."""
    text = " ".join(text.split())
    return text or None


def sheet_rows(text: str) -> dict[int, dict]:
    """code -> {mnemonic, description, immediate, investigatory} from the spreadsheet extraction."""
    rows = {}
    for match in _ROW.finditer(text):
        code, mnemonic, description, immediate, investigatory = match.groups()
        rows[int(code)] = {"mnemonic": _clean(_unquote(mnemonic)), "description": _clean(_unquote(description)),
                           "immediate": _clean(_unquote(immediate)),
                           "investigatory": _clean(_unquote(investigatory))}
    if not rows:
        raise SystemExit("no '{Code: N, Mnemonic: ...}' rows in the spreadsheet input")
    return rows


def page_rows(text: str) -> dict[int, dict]:
    """code -> {mnemonic, applies_to, introduced, notes} from the transcribed page columns."""
    rows = {}
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    for line in lines[1:]:
        cells = dict(zip(header, line.split("\t") + [""] * len(header)))
        flags = [cells[arch.lower()] for arch in ARCHES]
        if set(flags) - {"Y", "N"}:
            raise SystemExit(f"page row {cells['code']}: Applies-to cells must be Y or N, got {flags}")
        rows[int(cells["code"])] = {"mnemonic": _clean(cells["mnemonic"]),
                                    "applies_to": [a for a, f in zip(ARCHES, flags) if f == "Y"],
                                    "introduced": _clean(cells["xid154_linkage"]), "notes": _clean(cells["notes"])}
    return rows


def merge(sheet: dict[int, dict], page: dict[int, dict]) -> list[dict]:
    """One record per code; refuses inputs that disagree on the codes or a mnemonic."""
    if set(sheet) != set(page):
        raise SystemExit(f"codes differ: only in the spreadsheet {sorted(set(sheet) - set(page))}, "
                         f"only on the page {sorted(set(page) - set(sheet))}")
    out = []
    for code in sorted(sheet):
        if sheet[code]["mnemonic"] != page[code]["mnemonic"]:
            raise SystemExit(f"Xid {code}: mnemonic {sheet[code]['mnemonic']!r} in the spreadsheet, "
                             f"{page[code]['mnemonic']!r} on the page")
        out.append({"xid": code, **sheet[code], **{k: v for k, v in page[code].items() if k != "mnemonic"}})
    return out


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 3:
        sys.stderr.write(__doc__ or "")
        return 2
    sheet_path = Path(argv[0])
    page_path = Path(argv[1]) if len(argv) > 1 else PAGE
    out_path = Path(argv[2]) if len(argv) > 2 else OUT
    rows = merge(sheet_rows(sheet_path.read_text()), page_rows(page_path.read_text()))
    document = {
        "source": {
            "title": "NVIDIA Xid Errors: Analyzing Xid Errors with the Xid Catalog, Table 1 Xids",
            "url": URL, "spreadsheet": SHEET_URL, "read_on": READ_ON,
            "columns": {"mnemonic, description, immediate, investigatory":
                        "Xid-Catalog.xlsx sheet 'Xids' as extracted by leptonai/gpud "
                        "components/accelerator/nvidia/xid/catalog_generated.go (2025-10-29)",
                        "applies_to, introduced, notes": "transcribed from the page's table "
                        "(tools/xid_catalogue_page.tsv)"},
            "generator": "tools/xid_catalogue.py",
        },
        "codes": rows,
    }
    out_path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"{out_path}: {len(rows)} Xids, {rows[0]['xid']}..{rows[-1]['xid']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
