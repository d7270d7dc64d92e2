"""Make one check's simulated captures from its declaration, reproducibly.

    .venv/bin/python tests/data/tools/capture.py --check gpu_health [--case remap_pending ...] [--out DIR]

Reads ``tests/data/<check>/cases.yaml`` (tests/unit/checks/declared.py) and, for each case with a
``sim`` recipe, runs the check's own steps (argv from the case's profile, as the burn-in runs them)
against the simulated tools of provision/sim/tools/ for node07 of an H100 rack, with the case's
fault set in the hardware model (``model``; ``faults``: kinds of provision/sim/faults.py applied to it as
``provision sim fault`` does), the software state (``software``; the packages of the profile's stack release
line) or the rack's fabric (``fabric``, as ``provision sim fault`` edits a cable), and writes the step outputs
the case names, and nothing else: only that check's folder (or ``--out``) is written, only the files of its cases.
``truncate: <case>`` writes the first half of that case's captures; ``recorded`` cases (raw outputs
of a simulated rack's cluster burn-in) are named and left as they are. Outputs are never written by
hand.

Reproducible: every tool runs with a fixed clock (``--clock``, epoch seconds, TZ=UTC: the timestamps
of nvidia-smi, dmesg and fio) and a fixed seed per step (``--seed`` with check, case and step key:
the simulated run-to-run noise and perftest's queue pair numbers), so the same declaration and the
same simulator give the same bytes. There is no simulated dpkg-query: the step's --showformat is
expanded with the package versions of the debian12 snapshot (provision/sim/snapshot/), as
dpkg-query prints installed ("ii ") packages.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from provision.checks import registry  # noqa: E402
from provision.engine.jobs import target  # noqa: E402
from provision.sim import faults, hwmodel, rack, repo, snapshot  # noqa: E402
from tests.unit.checks import declared  # noqa: E402

TOOLS = ROOT / "provision/sim/tools"
CLOCK = 1764633600  # 2025-12-02 00:00:00 UTC
NODE, NODE_INDEX, FABRIC_HOSTS = declared.HOST, 6, [f"node{i:02d}" for i in range(1, 9)]
# Run one simulated tool with the clock fixed and its randomness seeded: argv = script seed clock args...
BOOT = r"""
import os, random, runpy, secrets, sys, time
script, seed, clock, tools = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
sys.argv = [script, *sys.argv[5:]]
sys.path[:0] = [os.path.dirname(script), tools]
rng = random.Random(seed)
random.seed(seed)
secrets.randbelow, secrets.randbits = rng.randrange, rng.getrandbits
_localtime, _gmtime, _strftime = time.localtime, time.gmtime, time.strftime
time.time, time.time_ns = (lambda: clock), (lambda: int(clock * 1e9))
time.localtime = lambda t=None: _localtime(clock if t is None else t)
time.gmtime = lambda t=None: _gmtime(clock if t is None else t)
time.strftime = lambda fmt, t=None: _strftime(fmt, time.localtime() if t is None else t)
import simhw
simhw._RANDOM = rng
runpy.run_path(script, run_name="__main__")
"""


class Node:
    name, address = NODE, "127.0.0.1"


def edit(tree: dict, changes: dict) -> None:
    """Set dotted paths ("gpus.3.pcie.width_current": 8; list items by index) in ``tree``; a path
    ending in ``+`` appends the given items to a list."""
    for path, value in changes.items():
        append = path.endswith("+")
        *parents, last = path.rstrip("+").split(".")
        node = tree
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        key = int(last) if isinstance(node, list) else last
        if append:
            node[key] = [*node[key], *value] if isinstance(node, list) or key in node else list(value)
        else:
            node[key] = copy.deepcopy(value)


def software(line: str | None = None) -> dict:
    """The software state of a node installed from the simulated repository: the packages of the profile's stack
    release line ``line`` (the Blackwell line: driver 580.105.08, CUDA 13.0), the seed line's (driver branch 550)
    for the rest and where the profile names none."""
    snap = snapshot.load("debian12")
    chosen = {p.name: p for p in snap.packages if not p.line}  # the seed line's packages
    chosen.update({p.name: p for p in snap.packages if line and p.line == line})
    facts: dict = {}
    for pkg in chosen.values():  # the files the simulated packages carry (provision/sim/repo.py)
        facts.update(repo.package_facts(snap, pkg))
    driver = json.loads(facts["usr/lib/provision-sim/nvidia-driver.json"])
    cuda = facts.get(f"usr/local/cuda-{driver['cuda_version']}/version.json")
    cuda = cuda or facts["usr/local/cuda-12.4/version.json"]  # the seed line's toolkit beside driver 550
    return {"driver": driver, "cuda": json.loads(cuda), "packages": {p.name: p.version for p in chosen.values()}}


def dpkg_query(args: list[str], state: dict) -> str:
    """What ``dpkg-query -W --showformat=FMT PKG...`` prints for installed packages."""
    fmt = next(a.split("=", 1)[1] for a in args if a.startswith("--showformat="))
    out = ""
    for name in (a for a in args if not a.startswith("-")):
        line = fmt.replace("${Package}", name).replace("${Version}", state["packages"][name])
        out += line.replace("${db:Status-Abbrev}", "ii ").replace("\\n", "\n")
    return out


class Sim:
    """One node's simulated tools over a hardware model, a software state and (maybe) a fabric."""

    def __init__(self, tmp: Path, model: dict, state: dict, world: dict | None, seed: str, clock: float):
        self.tmp, self.state, self.seed, self.clock = tmp, state, seed, clock
        (tmp / "hw.yaml").write_text(yaml.safe_dump(model))
        (tmp / "driver.json").write_text(json.dumps(state["driver"]))
        (tmp / "persistenced.pid").write_text(str(os.getpid()))  # nvidia-persistenced runs on an installed node
        self.env = dict(os.environ, TZ="UTC", PROVISION_SIM_HW=str(tmp / "hw.yaml"),
                        PROVISION_SIM_DRIVER=str(tmp / "driver.json"), PROVISION_SIM_ADDR="127.0.0.1",
                        PROVISION_SIM_PERSISTENCED_PID=str(tmp / "persistenced.pid"))
        if world is not None:
            (tmp / "fabric.yaml").write_text(yaml.safe_dump(world))
            self.env.update(PROVISION_SIM_FABRIC=str(tmp / "fabric.yaml"), PROVISION_SIM_HOSTNAME=FABRIC_HOSTS[0])

    def argv(self, argv: list[str], key: str) -> list[str]:
        """The command that runs ``argv``'s simulated tool with the fixed clock and the step's seed."""
        name = Path(argv[0]).name
        if name == "cat":  # cat <bonding dir>/<bond>: the simulated kernel's bonding status
            script, args = TOOLS / "bonding.py", [Path(argv[1]).name]
        elif name == "nvcc":  # nvcc reads version.json beside its bin/
            toolkit = self.tmp / Path(argv[0]).parent.parent.name
            (toolkit / "bin").mkdir(parents=True, exist_ok=True)
            (toolkit / "version.json").write_text(json.dumps(self.state["cuda"]))
            script, args = Path(shutil.copy(TOOLS / "nvcc.py", toolkit / "bin/nvcc.py")), argv[1:]
        else:
            script, args = TOOLS / f"{name.replace('-', '_')}.py", argv[1:]
        return [sys.executable, "-c", BOOT, str(script), f"{self.seed}:{key}", str(self.clock), str(TOOLS), *args]

    def run(self, step) -> str:
        """One step's output; its server started first and waited for (its ready line). Exit 0 required."""
        if Path(step.argv[0]).name == "dpkg-query":
            return dpkg_query(step.argv[1:], self.state)
        server = None
        if step.server:
            server = subprocess.Popen(self.argv(step.server, step.key + ":server"), env=self.env,
                                      stdout=subprocess.PIPE, text=True)
            assert server.stdout is not None
            for line in server.stdout:
                if step.ready is None or step.ready.line is None or step.ready.line in line:
                    break
        proc = subprocess.run(self.argv(step.argv, step.key), env=self.env, capture_output=True, text=True)
        if server is not None:
            server.communicate(timeout=30)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(step.argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout


def remake(check_id: str, case: declared.Case, out: Path, made: dict, seed: int, clock: float) -> list[str]:
    """Write the captures of ``case`` under ``out``; the lines to print."""
    recipe = case.sim
    if "recorded" in recipe:
        return [f"{check_id}/{case.name}: not remade here ({recipe['recorded']})"]
    if "truncate" in recipe:
        source = made.get(recipe["truncate"]) or {
            key: (declared.DATA / check_id / path).read_text()
            for key, path in declared_case(check_id, recipe["truncate"]).captures.items()}
        texts = {key: source[key][: len(source[key]) // 2] for key in case.captures}
    else:
        profile = case.host_profile()
        model = hwmodel.build(profile.data, NODE, NODE_INDEX)
        state = software(profile.hardware.stack_line)
        edit(model, recipe.get("model") or {})
        for fault in recipe.get("faults") or []:  # as `provision sim fault NODE KIND --device D --value V` edits it
            faults.KINDS[fault["kind"]].apply(model, str(fault["device"]), fault.get("value"))
        edit(state, recipe.get("software") or {})
        world = None
        if "fabric" in recipe:
            world = rack.fabric_world(profile.data, FABRIC_HOSTS, {})
            for fault in recipe["fabric"]:
                faults._apply_fabric(world, fault["host"], fault["kind"], fault["device"], fault.get("value"))
        check = registry()[check_id]
        hosts = (Node,) if world is None else tuple(type("H", (), {"name": h, "address": "127.0.0.1"})
                                                   for h in FABRIC_HOSTS)
        with tempfile.TemporaryDirectory() as tmp:
            sim = Sim(Path(tmp), model, state, world, f"{seed}:{check_id}:{case.name}", clock)
            texts = {step.key: sim.run(step) for step in check.steps(profile, target(check, hosts))
                     if step.key in case.captures}
    missing = set(case.captures) - set(texts)
    if missing:
        raise SystemExit(f"{check_id}/{case.name}: the check has no step {sorted(missing)}")
    made[case.name] = texts
    lines = []
    for key, text in texts.items():
        path = (out / case.captures[key]).resolve()
        if path.parent != out.resolve():
            raise SystemExit(f"{check_id}/{case.name}: {case.captures[key]} is outside {out}: not written")
        path.write_text(text)
        lines.append(f"{check_id}/{path.name}: {len(text)} bytes")
    return lines


def declared_case(check_id: str, name: str) -> declared.Case:
    return next(c for c in declared.load(declared.DATA / check_id) if c.name == name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", required=True, help="the check whose folder is remade")
    parser.add_argument("--case", action="append", help="only these cases (default: every case with a sim recipe)")
    parser.add_argument("--out", type=Path, help="write here instead of tests/data/<check>/")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", type=float, default=CLOCK, help="the tools' time, epoch seconds")
    args = parser.parse_args(argv)
    folder = declared.DATA / args.check
    if not (folder / declared.DECLARATION).is_file():
        parser.error(f"{folder}/{declared.DECLARATION}: no such declaration")
    cases = [c for c in declared.load(folder) if c.sim and (not args.case or c.name in args.case)]
    unknown = set(args.case or ()) - {c.name for c in cases}
    if unknown:
        parser.error(f"no case with a sim recipe named {', '.join(sorted(unknown))}")
    out = args.out or folder
    out.mkdir(parents=True, exist_ok=True)
    made: dict[str, dict[str, str]] = {}
    for case in sorted(cases, key=lambda c: "truncate" in c.sim):  # a truncated case after its source
        for line in remake(args.check, case, out, made, args.seed, args.clock):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
