"""Parse ``ibstat``, ``ibstatus`` and ``ibv_devinfo [-v]`` (rdma-core / MLNX_OFED / DOCA).

One port record per port in every format:
- ibstat: "CA 'mlx5_0'" blocks with "Port n:" sub-blocks ("State: Active",
  "Physical state: LinkUp", "Rate: 400", "Link layer: InfiniBand");
- ibstatus: "Infiniband device 'mlx5_0' port 1 status:" blocks ("state: 4: ACTIVE",
  "phys state: 5: LinkUp", "rate: 200 Gb/sec (4X HDR)");
- ibv_devinfo: "hca_id: mlx5_0" blocks with "port: n" sub-blocks ("state:
  PORT_ACTIVE (4)", with ``-v`` also "phys_state: LINK_UP (5)", "active_width: 4X
  (2)", "active_speed: 25.0 Gbps (32)"; the rate is width x lane speed).

``state`` and ``physical_state`` are normalised to ibstat's words ("Active",
"LinkUp") from the numeric codes; ``*_raw`` keep what was printed.
``cas``: one record per CA/hca_id in order, {``ca``, ``fw_ver`` (ibv_devinfo "fw_ver", ibstat
"Firmware version"), ``board_id`` (ibv_devinfo "board_id", the adapter's PSID such as
"MT_0000000838"), ``node_guid`` (ibv_devinfo "node_guid", ibstat "Node GUID"), ``ports``: [{``port``,
``active_mtu``, ``max_mtu`` (bytes as ibv_devinfo prints them, "4096 (5)" -> 4096; None where not
printed), ``link_layer``}]}.

Units: ``rate_Gbps`` Gb/s (None where the tool does not print it: plain
ibv_devinfo). Raises ParseError when no CA/device/hca_id header is present.
"""
from __future__ import annotations

import re

from provision.parsers._util import clean, lines, non_negative, num, refuse, require_text, to_int

TOOLS = ("ibstat", "ibstatus", "ibv_devinfo")  # one parser: the format is told by its header
_STATES = {1: "Down", 2: "Initializing", 3: "Armed", 4: "Active", 5: "ActiveDefer"}
_PHYS = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp",
         6: "LinkErrorRecovery", 7: "PhyTest"}
_CA = re.compile(r"^CA '([^']+)'")
_IBSTATUS = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:")
_HCA = re.compile(r"^hca_id:\s*(\S+)")
_PORT = re.compile(r"^\s*(?:Port (\d+):|port:\s*(\d+))\s*$")


def parse(text: str) -> dict:
    """Parse any of the three formats into the contract's dict (see module doc)."""
    require_text(text, "ibstat/ibstatus/ibv_devinfo")
    ports: list[dict] = []
    cas: list[dict] = []
    ca: dict = {}
    tool = None
    for row in lines(text):
        header = _header(row, ports)
        if header:
            tool, ca = header
            cas.append(ca)
        port = _PORT.match(row)
        if port and ca and tool != "ibstatus":
            ports.append(_new_port(ca, to_int(port.group(1) or port.group(2), "port number")))
        elif ca and (pair := _pair(row)):
            key, value = pair
            (ports[-1] if ports and ports[-1]["ca"] == ca["name"] else ca)[key.lower()] = value
    if tool is None:
        raise refuse("ibstat/ibstatus/ibv_devinfo", "no \"CA '...'\", \"Infiniband device '...'\" "
                     "or 'hca_id:' header")
    # Every format prints the link layer last (or near last) for each port.
    complete = bool(ports) and ports[-1]["ca"] == ca["name"] and any(
        k in ports[-1] for k in ("link layer", "link_layer"))
    records = _cas(cas, ports)  # before _port() drops each port's "_ca"
    return {"tool": tool, "complete": complete, "ports": [_port(p) for p in ports], "cas": records}


def _cas(cas: list[dict], ports: list[dict]) -> list[dict]:
    """``cas`` records with their ports, grouped in one pass (no scan of the ports per CA)."""
    grouped: dict[int, list[dict]] = {id(c): [] for c in cas}
    for port in ports:
        grouped[id(port["_ca"])].append(port)
    return [_ca(c, grouped[id(c)]) for c in cas]


def _ca(ca: dict, ports: list[dict]) -> dict:
    """The contract's CA record: firmware, board id, node GUID and each port's MTUs and link layer."""
    return {"ca": ca["name"], "fw_ver": clean(ca.get("fw_ver") or ca.get("firmware version")),
            "board_id": clean(ca.get("board_id")), "node_guid": clean(ca.get("node_guid") or ca.get("node guid")),
            "ports": [{"port": p["port"], "active_mtu": _mtu(p.get("active_mtu"), p),
                       "max_mtu": _mtu(p.get("max_mtu"), p),
                       "link_layer": clean(p.get("link layer") or p.get("link_layer"))} for p in ports]}


def _mtu(value: str | None, port: dict) -> int | None:
    """Bytes from ibv_devinfo's "4096 (5)"; None where not printed."""
    mtu = num(value)
    return None if mtu is None else int(non_negative(mtu, f"{port['ca']} port {port['port']} MTU", "bytes"))


def _header(row: str, ports: list[dict]) -> tuple[str, dict] | None:
    """The format's name and a new CA record (for ibstatus also a new port), or None."""
    for pattern, tool in ((_CA, "ibstat"), (_IBSTATUS, "ibstatus"), (_HCA, "ibv_devinfo")):
        match = pattern.match(row)
        if match:
            ca = {"name": match.group(1)}
            if tool == "ibstatus":
                ports.append(_new_port(ca, to_int(match.group(2), "port number")))
            return tool, ca
    return None


def _pair(row: str) -> tuple[str, str] | None:
    """(key, value) of a "key: value" line, both stripped; None without a colon or a key.

    String operations: ``^\\s*([^:]+?)\\s*:`` backtracks cubically on a long line of blanks.
    """
    head, colon, value = row.partition(":")
    key = head.strip()
    return (key, value.strip()) if colon and key else None


def _new_port(ca: dict, number: int) -> dict:
    """A port record that remembers its CA's fields as read so far.

    The CA record itself, not a copy (a copy per port is quadratic in ports x CA fields): once
    its CA has a port, every "key: value" line goes to the port, so the CA record is final.
    """
    return {"ca": ca["name"], "port": number, "_ca": ca}


def _port(raw: dict) -> dict:
    """The contract's port record from the raw "key: value" pairs of any format."""
    ca = raw.pop("_ca")
    state = raw.get("state")
    phys = raw.get("physical state") or raw.get("phys state") or raw.get("phys_state")
    return {
        "ca": raw["ca"],
        "port": raw["port"],
        "state": _word(state, _STATES),
        "physical_state": _word(phys, _PHYS),
        "rate_Gbps": _rate(raw),
        "link_layer": clean(raw.get("link layer") or raw.get("link_layer")),
        "fw_ver": clean(ca.get("firmware version") or ca.get("fw_ver")),
        "ca_type": clean(ca.get("ca type")),
        "state_raw": state,
        "physical_state_raw": phys,
        "rate_raw": raw.get("rate"),
    }


def _word(value: str | None, names: dict[int, str]) -> str | None:
    """ibstat's word for a state printed as "Active", "4: ACTIVE" or "PORT_ACTIVE (4)"."""
    if value is None:
        return None
    code = re.search(r"(?:^(\d+):|\((\d+)\))", value)
    if code:
        return names.get(to_int(code.group(1) or code.group(2), "state code"), value)
    return value.strip()


def _rate(raw: dict) -> int | float | None:
    """Gb/s from "Rate: 400", "rate: 200 Gb/sec (4X HDR)" or width x lane speed."""
    if raw.get("rate") is not None:
        return non_negative(num(raw["rate"]), f"{raw['ca']} port {raw['port']} rate", "Gb/s")
    width = re.match(r"(\d+)X", raw.get("active_width") or "")
    speed = non_negative(num(raw.get("active_speed")), f"{raw['ca']} port {raw['port']} active_speed", "Gb/s")
    if width and speed is not None:
        return to_int(width.group(1), "active_width") * speed
    return None
