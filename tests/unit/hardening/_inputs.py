"""What the hardening tests feed: every parser, and every real capture with the parser that reads it.

``PARSERS``: name -> parse function, for each tool of ``provision.parsers.PARSERS`` (called
directly, past ``parse_tool``'s size guard, so the parsers' own code is what is tested; every
parser a check's step names is one of them). ``CAPTURES``: (parser name, file name, text) for
every sample in tests/data/samples/ and every capture in tests/data/<check>/
(``<case>[.<step key>].txt``, read by the parser its step names). ``PROFILE``: the H100 profile with
the simulated rack's site facts (provision/sim/site.yml), so the storage check has its bond.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from provision import parsers, paths, profiles
from provision.checks import registry
from tests.unit.checks import hosts_of
from tests.unit.parsers._sample_rules import TOOL_OF

DATA = Path(__file__).resolve().parents[2] / "data"
CHECKS = registry()
PARSERS = dict(parsers.PARSERS)


def _captures() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted((DATA / "samples").glob("*.txt")):
        tool = TOOL_OF[json.loads(path.with_suffix(".json").read_text())["tool"]]
        found.append((tool, path.name, path.read_text()))
    for cid, check in CHECKS.items():
        steps = check.steps(PROFILE, hosts_of(check, ("node07", "node08"), PROFILE))
        named = {step.key: step.parser for step in steps}
        for path in sorted((DATA / cid).glob("*.txt")) if (DATA / cid).is_dir() else []:
            key = path.name.removesuffix(".txt").partition(".")[2]
            found.append((named.get(key) or steps[0].parser, f"{cid}/{path.name}", path.read_text()))
    return found


_SITE = yaml.safe_load((paths.ROOT / "provision/sim/site.yml").read_text())["provision_storage"]
PROFILE = profiles.for_host("h100-sxm5-80g-ndr", {"provision_storage": {**_SITE, "bonding_dir": "/proc/net/bonding"}},
                            "node07")


CAPTURES = _captures()
