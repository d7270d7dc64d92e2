"""``provision fabric`` on the real 582-HCA NDR dump (NVIDIA topograph's Quantum-2 DGX H100 fabric,
tests/data/ibnetdiscover/topograph_ndr_*.source): a summary first, the leaves missing uplinks named with
their counts (as the burn-in's fabric check finds them), switches by the name their description gives,
HCA ports by host and device where the dump says, and lines that fit a terminal (issue 23 item 2)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from provision import checks, cli, profiles
from provision.checks.base import judge_outputs
from provision.fabric import discover
from provision.fabric.model import missing_uplinks, names, switch_name
from provision.report import fabric_text
from tests.unit.checks import hosts_of

NDR = Path(__file__).resolve().parents[2] / "data" / "ibnetdiscover" / "topograph_ndr_quantum2_40sw_582ca.txt"


@pytest.fixture(scope="module")
def text() -> str:
    return NDR.read_text()


@pytest.fixture(scope="module")
def printed(text) -> list[str]:
    from provision.commands import fabric as fabric_command

    out: list[str] = []
    assert fabric_command.fabric(None, [str(NDR)], out=out.append, err=lambda _: None) == 0
    return out


def _fabric_check_shortfalls(text: str) -> dict[str, int]:
    """{leaf node id: uplinks missing} as the burn-in's fabric check judges the dump (its FABRIC_UPLINK_MISSING
    findings: fewer uplinks than the best-cabled leaf)."""
    profile = profiles.load("h100-sxm5-80g-ndr")
    spec = checks.registry()["fabric"]
    devices = [s.key for s in spec.steps(profile, hosts_of(spec, ("n1", "n2"), profile))]
    findings = judge_outputs(spec, profile, hosts_of(spec, ("n1", "n2"), profile), dict.fromkeys(devices, text))
    return {f.device.split(" leaf ")[1]: f.expected - f.value for f in findings
            if f.metric == "uplinks" and not f.ok and f.device.startswith(f"{devices[0]} ")}


def test_the_summary_comes_first_and_counts_what_is_wrong(printed):
    assert printed[0] == ("fabric: 1 plane, 40 switches (31 leaves, 9 spines), 542 HCA ports, 1074 cables; "
                          "expected 4xNDR")
    assert printed[1:3] == ["  degraded cables: 0", "  leaves missing uplinks: 12 (26 uplinks)"]
    assert printed[3].startswith("  HCA ports without a host name: 69 ")
    assert printed.index(next(line for line in printed if line.startswith("plane "))) > 3


def test_the_leaves_missing_uplinks_are_named_as_the_fabric_check_finds_them(text, printed):
    shortfalls = _fabric_check_shortfalls(text)
    assert len(shortfalls) == 12 and sum(shortfalls.values()) == 26  # 31 leaves x 18 uplinks - 532 cables to spines
    listed = {m.group(2): (m.group(1), 18 - int(m.group(3))) for m in
              (re.match(r"    (\S+) \((S-[0-9a-f]+)\): (\d+) of 18 uplinks", line) for line in printed) if m}
    assert {guid: missing for guid, (_, missing) in listed.items()} == shortfalls
    assert {name for name, _ in listed.values()} >= {"A09-P1-IBLEAF-01-02", "B09-P1-IBLEAF-03-07"}
    assert ("    A09-P1-IBLEAF-01-02 (S-2c5eab0300b87a80): 14 of 18 uplinks; short of A10-P1-IBSPINE-01 (0 of 2),"
            in printed)  # and where the missing cables would go
    assert "  leaves missing uplinks: 12, 26 uplinks (the best-cabled leaf has 18)" in printed


def test_switches_go_by_the_name_their_description_gives(printed):
    body = "\n".join(printed)
    assert '  leaf A09-P1-IBLEAF-04-04 S-2c5eab0300b87b40 lid 73 "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"' in printed
    assert "    uplinks: [35]->A10-P1-IBSPINE-02[32] 4xNDR, " in body
    assert not re.search(r"\]->S-[0-9a-f]{16}\[", body)  # every switch of this dump has a name of its own
    assert switch_name("MF0;node90:SX6012/U1") == "node90" and switch_name("SwitchIB Mellanox Technologies") == (
        "SwitchIB Mellanox Technologies")


def test_hca_ports_go_by_host_and_device_and_the_unnamed_by_node_id(text, printed):
    plane = discover.fabric_from_dumps([(str(NDR), text)]).planes[0]
    named = names(plane)
    body = "\n".join(printed)
    assert "?" not in body
    for hca in plane.hcas:
        label = f"{hca.host} {hca.device}" if hca.host else hca.guid
        assert named[hca.guid] == label
        assert f"{label} [{hca.leaf_port}] 4xNDR" in body, label
    assert sum(1 for h in plane.hcas if not h.host) == 69  # "MT4129 ConnectX7   Mellanox Technologies"


def test_every_line_fits_a_terminal(printed):
    assert max(len(line) for line in printed) <= fabric_text.WIDTH
    assert len(printed) < 1000  # the leaves' host lists wrapped, not a line per port


def test_the_json_carries_the_names_and_the_missing_uplinks(capsys):
    assert cli.main(["fabric", "--ibnetdiscover", str(NDR), "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert len(view["missing_uplinks"]) == 12 and sum(m["missing"] for m in view["missing_uplinks"]) == 26
    assert {leaf["name"] for leaf in view["leaves"]} >= {"A09-P1-IBLEAF-04-04"}
    assert view["planes"][0]["unnamed_hcas"] == 69


def test_duplicate_descriptions_name_no_switch(text):
    plane = discover.fabric_from_dumps([(str(NDR), text)]).planes[0]
    for sw in plane.switches.values():
        sw.description = "Quantum-2 Mellanox Technologies"  # unmanaged switches all print one description
    named = names(plane)
    assert all(named[guid] == guid for guid in plane.switches)
    assert [m["name"] for m in missing_uplinks(plane, named)][0].startswith("S-")
