"""What the hardening tests feed: every parser, and every real capture with the parser that reads it.

``PARSERS``: name -> parse function, for each tool of ``provision.parsers.PARSERS`` (called
directly, past ``parse_tool``'s size guard, so the parsers' own code is what is tested) and
each check's ``parse`` (``check:<id>``; the small parsers inside stack, storage, nvbandwidth,
pcie_link, gpu_stress). ``CAPTURES``: (parser name, file name, text) for every sample in
tests/data/samples/ and every capture in tests/data/<check>/. ``PROFILE``: the H100 profile with
the simulated rack's site facts (provision/sim/site.yml), so the storage check has its bond.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from provision import parsers, paths, profiles
from provision.checks import registry
from tests.unit.parsers._sample_rules import TOOL_OF

DATA = Path(__file__).resolve().parents[2] / "data"
CHECKS = registry()
PARSERS = {**parsers.PARSERS, **{f"check:{cid}": check.parse for cid, check in CHECKS.items()}}


def _captures() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted((DATA / "samples").glob("*.txt")):
        tool = TOOL_OF[json.loads(path.with_suffix(".json").read_text())["tool"]]
        found.append((tool, path.name, path.read_text()))
    for cid in CHECKS:
        for path in sorted((DATA / cid).glob("*.txt")) if (DATA / cid).is_dir() else []:
            found.append((f"check:{cid}", f"{cid}/{path.name}", path.read_text()))
    return found


CAPTURES = _captures()


_SITE = yaml.safe_load((paths.ROOT / "provision/sim/site.yml").read_text())["provision_storage"]
PROFILE = profiles.for_host("h100-sxm5-80g-ndr", {"provision_storage": {**_SITE, "bonding_dir": "/proc/net/bonding"}},
                            "node07")
