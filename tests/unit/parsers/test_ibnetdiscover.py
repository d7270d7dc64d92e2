"""ibnetdiscover: real captures (tests/data/ibnetdiscover/, counts in expected.json read by hand) and the
variants real dumps show: tabs or single spaces, blank lines or none, self-loops, error lines, -g grouping,
names the tool could not decode, truncation."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from provision.errors import ParseError
from provision.parsers import parse_tool

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURES = DATA / "ibnetdiscover"
EXPECTED = json.loads((CAPTURES / "expected.json").read_text())
MANPAGE = (DATA / "samples" / "ibnetdiscover_manpage_1xSDR_degraded_width.txt").read_text()
UFM = (DATA / "samples" / "ibnetdiscover_nvidia_kb_ufm_lab_mixed_speeds_selfloops_smp_error.txt").read_text()


def parse(text: str) -> dict:
    return parse_tool("ibnetdiscover", text, "dump.txt")


@pytest.mark.parametrize("name", sorted(k for k in EXPECTED if not k.startswith("_")))
def test_real_capture_counts(name: str) -> None:
    want = EXPECTED[name]
    got = parse((CAPTURES / f"{name}.txt").read_text())
    assert (CAPTURES / f"{name}.source").is_file()
    assert len(got["switches"]) == want["switches"] and len(got["cas"]) == want["cas"]
    assert len(got["links"]) == want["cables"]
    assert sum(lk["self_loop"] for lk in got["links"]) == want["self_loops"]
    assert sum(lk["mismatch"] for lk in got["links"]) == want["mismatched"]
    assert len(got["errors"]) == want["errors"] and got["unparsed"] == []
    assert got["complete"] is want["complete"]
    assert dict(Counter(lk["width_speed"] for lk in got["links"])) == want["width_speeds"]


def test_ndr_dump_keeps_descriptions_lids_and_port_counts() -> None:
    got = parse((CAPTURES / "topograph_ndr_quantum2_40sw_582ca.txt").read_text())
    leaf = next(s for s in got["switches"] if s["guid"] == "S-2c5eab0300b87b40")
    assert leaf == {"guid": "S-2c5eab0300b87b40", "description": "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1", "lid": 73,
                    "ports": 65, "printed": True}
    ca = next(c for c in got["cas"] if c["guid"] == "H-e09d7303007a4bd8")
    assert ca["description"] == "a08-p1-dgx-04-c01 mlx5_5" and ca["lid"] == 647 and ca["ports_cabled"] == 1
    assert sum("Aggregation Node" in c["description"] for c in got["cas"]) == 40
    # the firmware's default description keeps its three spaces
    assert sum(c["description"] == "MT4129 ConnectX7   Mellanox Technologies" for c in got["cas"]) == 69


def test_a_cable_is_listed_once_with_both_ends_and_the_lower_rate() -> None:
    got = parse(MANPAGE)
    narrow = [lk for lk in got["links"] if lk["mismatch"]]
    assert [(lk["a"], lk["a_port"], lk["b"], lk["b_port"], lk["width_speed"], lk["a_width_speed"], lk["b_width_speed"])
            for lk in narrow] == [
        ("S-005442ba00003080", 10, "S-0008f10400410015", 1, "1xSDR", "4xSDR", "1xSDR"),
        ("S-005442ba00003080", 12, "H-0008f10403960558", 1, "1xSDR", "4xSDR", "1xSDR")]
    ca = next(c for c in got["cas"] if c["guid"] == "H-0008f10403960558")
    assert ca["ports_cabled"] == 2 and ca["lids"] == {"1": 10, "2": 14}


def test_self_loops_printed_twice_in_one_block_are_one_cable_each() -> None:
    got = parse(UFM)
    loops = sorted((lk["a_port"], lk["b_port"]) for lk in got["links"] if lk["self_loop"])
    assert loops == [(1, 2), (19, 21), (29, 30)]
    assert got["errors"][0].startswith("src/query_smp.c:195; umad")


def test_tabs_spaces_and_missing_blank_lines_read_alike() -> None:
    spaced = re.sub(r"[ \t]+", " ", MANPAGE)
    packed = "\n".join(row for row in MANPAGE.splitlines() if row.strip())
    tabbed = re.sub(r" {2,}", "\t", MANPAGE)
    base = parse(MANPAGE)
    for text in (spaced, packed, tabbed, MANPAGE.replace("\n", "\r\n")):
        got = parse(text)
        assert got["links"] == base["links"] and got["complete"]
        assert [s["description"] for s in got["switches"]] == [s["description"] for s in base["switches"]]


def test_unmanaged_switches_with_identical_descriptions_stay_apart() -> None:
    text = MANPAGE.replace('"ISR9024 Voltaire"', '"SwitchIB Mellanox Technologies"').replace(
        '"SW-6IB4 Voltaire"', '"SwitchIB Mellanox Technologies"')
    got = parse(text)
    assert len(got["switches"]) == 2 and len({s["guid"] for s in got["switches"]}) == 2
    assert len(got["links"]) == 7


def test_grouping_output_and_full_info_suffixes_are_read() -> None:
    """``-g``: Chassis headers, ``# Spine Nodes``, ``[ext N]``; ``-f``: `` s=.. w=.. v=..`` (ibnetdiscover.c)."""
    grouped = "Chassis 1 (guid 0x5442ba00003000)\n\n# Spine Nodes\n\nNon-Chassis Nodes"
    text = MANPAGE.replace("Non-Chassis Nodes", grouped)
    text = text.replace('[10]    "S-0008f10400410015"[1]', '[10][ext 3]    "S-0008f10400410015"[1][ext 1]')
    text = text.replace("lid 4 4xSDR", "lid 4 4xSDR s=1 w=2 v=4")
    got = parse(text)
    assert len(got["links"]) == 7 and got["complete"] and got["unparsed"] == []


def test_widths_and_speeds_the_tool_could_not_name_are_null() -> None:
    """dump_linkwidth_compat prints "??" and dump_linkspeedext_compat "???" for values they do not know."""
    text = UFM.replace('# "node01 HCA-2" lid 2 4xEDR', '# "node01 HCA-2" lid 2 4x???').replace(
        '# lid 2 lmc 0 "SwitchIB Mellanox Technologies" lid 268 4xEDR',
        '# lid 2 lmc 0 "SwitchIB Mellanox Technologies" lid 268 ?????')
    cable = next(lk for lk in parse(text)["links"] if lk["b"] == "H-e41d2d030061f957")
    assert cable["width"] == "4x" and cable["speed"] is None and cable["width_speed"] is None
    assert cable["a_width_speed"] == "4x???" and cable["mismatch"]


@pytest.mark.parametrize("text", [MANPAGE, UFM])
def test_a_cut_dump_parses_what_is_there_and_is_incomplete(text: str) -> None:
    for cut in (len(text) // 3, len(text) // 2, len(text) - 12):
        got = parse(text[:cut])
        assert got["complete"] is False and got["links"]


def test_a_node_block_cut_after_its_header_is_incomplete() -> None:
    head = MANPAGE[:MANPAGE.index("[1](8f10403960559)")]
    got = parse(head)
    assert got["complete"] is False


def test_the_initiating_ca_alone_without_links_is_a_complete_dump() -> None:
    lone = (CAPTURES / "topograph_gb200_lone_ca_no_links.txt").read_text()
    assert parse(lone)["complete"] is True
    other = lone.replace("Initiated from node b8e92403009ca838", "Initiated from node 0000000000000001")
    assert parse(other)["complete"] is False


def test_tool_error_lines_anywhere_are_errors_not_cables() -> None:
    text = ("ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1,3)\n" + UFM
            + "ibnetdiscover: iberror: failed: discover failed\n")
    got = parse(text)
    assert len(got["errors"]) == 3 and len(got["links"]) == 10
    assert got["complete"] is False  # the last line is not the dump's


def test_only_an_iberror_line_is_refused_saying_what_the_tool_printed() -> None:
    with pytest.raises(ParseError, match="it printed: ibnetdiscover: iberror: failed: discover failed"):
        parse("ibnetdiscover: iberror: failed: discover failed\n")


@pytest.mark.parametrize("text", ["", "Hello\n", "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n",
                                  "#\n# Topology file: x\n"])
def test_other_text_is_refused(text: str) -> None:
    with pytest.raises(ParseError, match="^dump.txt: not ibnetdiscover output"):
        parse(text)


def test_out_of_range_numbers_are_refused() -> None:
    with pytest.raises(ParseError, match="port count 300 is outside 0..255"):
        parse(MANPAGE.replace("Switch  24 ", "Switch  300 "))
    with pytest.raises(ParseError, match="LID 70000 is over 65535"):
        parse(MANPAGE.replace("lid 4 4xSDR", "lid 70000 4xSDR"))


def test_a_port_printed_with_two_far_ends_is_refused_naming_it() -> None:
    # two dumps pasted together: port 10 of the ISR9024 now also loops back to itself
    text = MANPAGE.replace('[10]    "S-0008f10400410015"[1]         # "SW-6IB4 Voltaire" lid 3 4xSDR',
                           '[10]    "S-005442ba00003080"[10]         # "ISR9024 Voltaire" lid 6 4xSDR')
    with pytest.raises(ParseError, match=r"^dump.txt: port 10 of S-005442ba00003080 is printed cabled to both"):
        parse(text)


def test_the_same_dump_twice_in_one_file_is_the_same_cables() -> None:
    once, twice = parse(MANPAGE), parse(MANPAGE + "\n" + MANPAGE)
    assert twice["links"] == once["links"] and twice["complete"]


def test_a_port_looped_back_to_itself_is_one_complete_self_loop() -> None:
    got = parse('# Topology file: x\nSwitch 4 "S-0000000000000001" # "sw" base port 0 lid 1 lmc 0\n'
                '[1] "S-0000000000000001"[1] # "sw" lid 1 4xNDR\n'
                '[2] "H-0000000000000002"[1](2) # "n1 mlx5_0" lid 2 4xNDR\n'
                '\nCa 1 "H-0000000000000002" # "n1 mlx5_0"\n'
                '[1](2) "S-0000000000000001"[2] # lid 2 lmc 0 "sw" lid 1 4xNDR\n')
    loop = next(lk for lk in got["links"] if lk["self_loop"])
    assert (loop["a_port"], loop["b_port"], loop["width_speed"]) == (1, 1, "4xNDR") and got["complete"]


def test_binary_junk_is_refused_in_one_printable_line() -> None:
    with pytest.raises(ParseError) as info:
        parse("\x1b[2J\x00\x07garbage\x1b]0;title\x07\n")
    said = str(info.value)
    assert said.isprintable() and "garbage" in said


def test_crlf_and_non_utf8_bytes_read_as_the_plain_dump() -> None:
    crlf = parse(MANPAGE.replace("\n", "\r\n"))
    junk = parse(MANPAGE.encode().replace(b"Voltaire", b"Volt\xff\xfeaire").decode("utf-8", errors="replace"))
    assert crlf["links"] == parse(MANPAGE)["links"] and crlf["complete"] and len(junk["links"]) == 7
