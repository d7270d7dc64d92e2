"""storage: the storage network bond is aggregated as the site says, and the checkpoint
store takes sequential writes at its reference bandwidth.

Site facts: the host's inventory variable ``provision_storage`` (``profile.site["storage"]``:
bond, mode, slaves, slave_speed_Mbps, checkpoint_path, bonding_dir); a host without it is
not applicable (``needs=("storage",)``).

Steps: ``cat <bonding_dir>/<bond>`` (key ``bond``; the Linux bonding driver's /proc file,
parser ``provision.parsers.bonding``, tested on driver v3.7.1 and kernel-versioned v6.1
files with and without LACP pdu details) and ``fio`` one sequential-write job on
``checkpoint_path`` (key ``fio``; ``--output-format=json``, parser ``provision.parsers.fio``,
tested on fio 3.33-3.36 JSON and text); each step names its parser (``bonding``, ``fio``).

Units: ``write_bw_MiBps`` MiB/s (summed over jobs) against ``references.storage.write_bw_MiBps``,
whose params give rw, bs, iodepth, ioengine and size; ``speed_Mbps`` Mb/s as the driver prints it.

Rules: the mode line must be the driver's name for the site's mode (bond_mode_name() in
drivers/net/bonding/bond_main.c: 802.3ad prints "IEEE 802.3ad Dynamic link aggregation");
the bond holds ``slaves`` slaves, each MII "up" at ``slave_speed_Mbps``; in 802.3ad
every slave is in the active aggregator and the aggregator has every slave as a port (a
slave outside it carries no traffic: kernel bonding.rst, "802.3ad"); fio's ``err`` must be 0
(fio HOWTO: a non-zero err is the job's first I/O error). fio runs with ``--direct=1`` so the
page cache does not inflate the figure and ``--unlink=1`` so no test file is left behind.
"""
from __future__ import annotations

from provision.checks.base import Budget, Check, Context, Data, Finding, Placement, Step
from provision.checks.rules import expect, measured
from provision.errors import ParseError, ProfileError

# bond_mode_name() in drivers/net/bonding/bond_main.c, keyed by the mode's option name.
MODES = {"balance-rr": "load balancing (round-robin)", "active-backup": "fault-tolerance (active-backup)",
         "balance-xor": "load balancing (xor)", "broadcast": "fault-tolerance (broadcast)",
         "802.3ad": "IEEE 802.3ad Dynamic link aggregation", "balance-tlb": "transmit load balancing",
         "balance-alb": "adaptive load balancing"}


def site(profile) -> dict:
    """The host's storage site facts (``provision_storage``). Raises ProfileError without them."""
    st = profile.site.get("storage")
    if not st:
        raise ProfileError(f"profile {profile.name}: no provision_storage site facts for the storage check "
                           "(set provision_storage in the inventory's group_vars)")
    return st


def steps(profile, host) -> list[Step]:
    st = site(profile)
    p = profile.required_reference("storage", "write_bw_MiBps").params
    fio = ["fio", "--name=checkpoint", f"--directory={st['checkpoint_path']}", f"--rw={p['rw']}", f"--bs={p['bs']}",
           f"--iodepth={p['iodepth']}", f"--ioengine={p['ioengine']}", f"--size={p['size']}",
           "--direct=1", "--unlink=1", "--output-format=json"]
    return [Step("bond", ["cat", f"{st['bonding_dir'].rstrip('/')}/{st['bond']}"], parser="bonding"),
            Step("fio", fio, parser="fio")]


def judge(ctx: Context) -> list[Finding]:
    judges = {"bond": lambda r: _bond(r, site(ctx.profile)), "fio": lambda r: _fio(r, ctx.profile)}  # by step key
    findings: list[Finding] = []
    for key, result in ctx.parsed.items():
        findings += judges[key](result)
    return findings


def _bond(result: dict, st: dict) -> list[Finding]:
    bond, slaves = st["bond"], result["slaves"]
    out = [expect(bond, "mode", result["mode"], MODES.get(st["mode"], st["mode"]), "BOND_MODE"),
           expect(bond, "slave_count", len(slaves), st["slaves"], "BOND_SLAVE_DOWN")]
    active = result.get("active_aggregator_id") if st["mode"] == "802.3ad" else None
    for s in slaves:
        device = f"{bond} {s['name']}"
        out.append(expect(device, "mii_status", s["mii_status"], "up", "BOND_SLAVE_DOWN"))
        if s["mii_status"] == "up":
            out.append(expect(device, "speed_Mbps", s["speed_Mbps"], st["slave_speed_Mbps"], "BOND_SLAVE_SPEED",
                              unit="Mb/s"))
        if active is not None:
            out.append(expect(device, "aggregator_id", s["aggregator_id"], active, "BOND_AGGREGATOR"))
    if active is not None:
        ports = (result.get("active_aggregator") or {}).get("ports")
        out.append(expect(bond, "aggregator_ports", ports, st["slaves"], "BOND_AGGREGATOR"))
    return out


def _fio(result: dict, profile) -> list[Finding]:
    path = site(profile)["checkpoint_path"]
    written = [j["write_bw_MiBps"] for j in result["jobs"] if j.get("write_bw_MiBps") is not None]
    if not written:
        raise ParseError("fio reported no write bandwidth: the job wrote nothing")
    if result.get("errors") is None:
        raise ParseError("fio printed no error count (err=): the result cannot be trusted")
    ref = profile.required_reference("storage", "write_bw_MiBps")
    return [measured(path, "write_bw_MiBps", sum(written), ref, "STORAGE_SLOW"),
            expect(path, "fio_errors", result["errors"], 0, "STORAGE_IO_ERROR")]


# JSON Schema of each reference's params (the test parameters the command is built from); the
# profile's rows are checked against it (provision.checks.references).
PARAMS = {
    "write_bw_MiBps": {
        "required": ["rw", "bs", "iodepth", "ioengine", "size"],
        "properties": {
            "tool": {"const": "fio"},
            "rw": {"enum": ["write", "randwrite"]},
            "bs": {"type": "string", "pattern": "^[0-9]+[kKmMgG]?$"},
            "iodepth": {"type": "integer", "minimum": 1},
            "ioengine": {"type": "string", "minLength": 1},
            "size": {"type": "string", "pattern": "^[0-9]+[kKmMgGtT]?$"},
        },
    },
}


CHECK = Check(id="storage", tool="cat bonding + fio", steps=steps, judge=judge, order=75,
              placement=Placement(needs=("storage",)),
              budget=Budget(loads="disk", timeout_s=300, sets=("deep",)),
              data=Data(metrics={"write_bw_MiBps": "MiB/s", "speed_Mbps": "Mb/s"}, params=PARAMS))
