"""Write the merged references of every bundled profile, as ``provision.profiles.load(name).references`` gives them,
to a JSON file (profile -> check -> metric -> every field of the row): the oracle of
tests/unit/test_references_layers.py, taken before the rows a check shares moved into the check (issue 35 item 4).

    .venv/bin/python tools/references_snapshot.py tests/data/references/merged_before.json
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from provision import profiles


def snapshot() -> dict:
    """profile -> check -> metric -> row (every field of the Reference) of each bundled profile."""
    return {name: {check: {metric: dataclasses.asdict(row) for metric, row in rows.items()}
                   for check, rows in profiles.load(name).references.items()}
            for name in profiles.names()}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: references_snapshot.py OUT.json", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
