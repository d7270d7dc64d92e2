"""imex: the IMEX daemons of the node's NVLink domain see each other, and the IMEX channel devices exist.

Tools: ``nvidia-imex-ctl -N -j -H`` (the domain's status as every daemon of it reports it, JSON with hostnames;
parser ``provision.parsers.imex_ctl``, which also reads the text form of ``-N``, tested on nvidia-imex 570.172's
18-node output published by AWS, a one-node capture from NVIDIA/k8s-dra-driver-gpu and the JSON of NVIDIA/DCGM's
IMEX tests, IMEX 580.30) and ``find /dev -maxdepth 2 ( -path /dev -o -path '/dev/nvidia-caps-imex-channels*' )
-print`` (the channel devices; parser ``provision.parsers.imex_channels``; find exits 0 with no match, so missing
channels are judged rather than an exit status). Options from NVIDIA's IMEX guide ("IMEX Service Command Service",
https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/cmdservice.html): ``-N`` queries every node of
nodes_config.cfg, so a node whose daemon is down is listed UNAVAILABLE rather than failing the command.

Rules (device names: "IMEX daemon <host>" for this node's own entry, "IMEX node #<i> <host>" for a peer):
- this node's own entry (its ``hostName`` or address equal to the host's inventory name or address) is listed
  (IMEX_NODE_NOT_LISTED: its daemon's nodes_config.cfg does not name it, so it shares no memory with the domain;
  or the list names the trays by addresses the inventory does not use: the finding says which names it looked
  for) and READY (IMEX_DAEMON_DOWN otherwise);
- every other node listed is READY (IMEX_PEER_DISCONNECTED): a peer whose daemon does not answer cannot share
  memory with this node;
- every READY node reports every READY node Connected (legend "C", JSON "CONNECTED"; IMEX_PEER_DISCONNECTED
  naming the pairs and their state: I, N, R, D, A, !V!, !M! or the JSON word);
- the domain state is UP (IMEX_DOMAIN_NOT_UP: DEGRADED or DOWN as DCGM reads it, dcgmlib/src/DcgmImexManager.cpp);
- channel 0 exists (IMEX_CHANNELS_MISSING): CUDA's default IMEX channel; the channels are device nodes that do
  not survive a reboot unless the driver or a boot unit creates them.

The domain's size against the run's trays of that domain is ``imex_domain``'s (it compares every tray's list with
the trays the inventory puts in the domain); a count other than the profile's full domain (18 trays of a GB200
NVL72 rack: a site may run a partial rack) is reported in the detail and never failed here.
A profile without an IMEX NVLink domain (``nvlink_domain`` missing or ``imex: false``: HGX B200, H100, PCIe
boards) is skipped by the engine (``needs=("imex",)``).
"""
from __future__ import annotations

from provision.checks import faults
from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.common.imex_nodes import entry_of, names_of
from provision.checks.rules import expect
from provision.parsers.imex_ctl import CONNECTED, READY

CHANNELS_DIR = "/dev/nvidia-caps-imex-channels"
UP = "UP"  # "Domain State: UP" / JSON "status": "UP" (IMEX guide; DCGM DcgmImexManager.cpp)
SHOWN_PAIRS = 6  # pairs named in a message; the rest are counted


def steps(profile, host) -> list[Step]:
    return [Step("", ["nvidia-imex-ctl", "-N", "-j", "-H"], parser="nvidia-imex-ctl"),
            Step("channels", ["find", "/dev", "-maxdepth", "2", "(", "-path", "/dev", "-o", "-path",
                              f"{CHANNELS_DIR}*", ")", "-print"], parser="imex-channels")]


def judge(ctx: Context) -> list[Finding]:
    domain, channels = ctx.parsed[""], ctx.parsed["channels"]
    nodes = domain["nodes"]
    own = entry_of(nodes, ctx.target)
    findings = [_domain_state(domain, ctx.profile)]
    if own is None:
        names = ", ".join(sorted(names_of(ctx.target))) or "none"
        findings.append(Finding(device="IMEX domain", metric="imex_node_listed", value=False, ok=False,
                                expected=True, fault="IMEX_NODE_NOT_LISTED",
                                action=faults.action("IMEX_NODE_NOT_LISTED"),
                                detail=f"no entry by this node's names or addresses ({names}) among the "
                                       f"{len(nodes)} listed"))
    for node in nodes:
        if own is not None and node is own:
            findings.append(expect(f"IMEX daemon {_name(node)}", "imex_daemon_status", node["status"], READY,
                                   "IMEX_DAEMON_DOWN"))
        elif node["status"] != READY:
            findings.append(expect(f"IMEX node #{node['index']} {_name(node)}", "imex_node_status", node["status"],
                                   READY, "IMEX_PEER_DISCONNECTED"))
    findings.append(_connections(nodes))
    have = channels["channels"]
    findings.append(Finding(device=f"IMEX channels {CHANNELS_DIR}", metric="imex_channel0_present",
                            value=0 in have, ok=0 in have, expected=True, fault="IMEX_CHANNELS_MISSING",
                            action=faults.action("IMEX_CHANNELS_MISSING"),
                            detail=f"channels {','.join(map(str, have))}" if have else
                            "no channel device" + ("" if channels["folder"] else f" ({CHANNELS_DIR} missing)")))
    return findings


def _name(node: dict) -> str:
    return node["hostname"] or node["host"] or "?"


def _domain_state(domain: dict, profile) -> Finding:
    expected_nodes = profile.nvlink_domain.nodes if profile.nvlink_domain else None
    listed = f"{len(domain['nodes'])} nodes listed" + (f" (a full domain of this profile: {expected_nodes})"
                                                        if expected_nodes else "")
    return Finding(device="IMEX domain", metric="imex_domain_state", value=domain["domain_state"],
                   ok=domain["domain_state"] == UP, expected=UP, fault="IMEX_DOMAIN_NOT_UP",
                   action=faults.action("IMEX_DOMAIN_NOT_UP"), detail=listed)


def _connections(nodes: list[dict]) -> Finding:
    """Every READY node's view of every other READY node: Connected. A node that is not READY has no view
    and its own finding; the cells toward it (I) would only repeat that."""
    listed = [n["index"] for n in nodes if n["status"] == READY]  # a node not READY has its own finding
    down = [f"{n['index']}->{peer}: {n['connections'].get(peer) or 'not reported'}"
            for n in nodes if n["status"] == READY for peer in listed
            if n["connections"].get(peer) not in CONNECTED]
    more = f" (+{len(down) - SHOWN_PAIRS} more)" if len(down) > SHOWN_PAIRS else ""
    return Finding(device="IMEX domain", metric="imex_pairs_not_connected", value=len(down), ok=not down,
                   expected=0, fault="IMEX_PEER_DISCONNECTED", action=faults.action("IMEX_PEER_DISCONNECTED"),
                   detail=", ".join(down[:SHOWN_PAIRS]) + more)


CHECK = Check(id="imex", tool="nvidia-imex-ctl -N -j -H", steps=steps, judge=judge, order=46,
              placement=Placement(needs=("imex",)),
              budget=Budget(timeout_s=60, sets=("quick", "deep", "health")),
              data=Data(metrics={"imex_domain_state": "", "imex_daemon_status": "", "imex_node_status": "",
                                 "imex_pairs_not_connected": "", "imex_channel0_present": "", "imex_node_listed": ""}))
