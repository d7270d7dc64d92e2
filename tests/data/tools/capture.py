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
the simulated run-to-run noise, perftest's queue pair numbers, the process id the tools print), so
the same declaration and the same simulator give the same bytes. There is no simulated dpkg-query: the
step's --showformat is expanded with the package versions of the debian12 snapshot (provision/sim/snapshot/), as
dpkg-query prints installed ("ii ") packages.

The node's kernel views (``cat /proc/cmdline``, ``find /sys/kernel/iommu_groups ...``, ``grep -r ...
/sys/devices/system/cpu/cpufreq``, ``grep -r ... /sys/module``) are read by the real cat, find and grep over a
temporary folder where ``provision.sim.kernelviews.write`` put the node's views, the paths shown as the real ones;
find and grep print in directory order, which is the file system's, so their lines are sorted (by path, numbers as
numbers). The simulated nodes share this machine's kernel: ``uname -r`` prints ``KERNEL``, and the kernel command
line boots it; ``grep -H . /proc/uptime`` prints ``UPTIME``. ``numactl ... COMMAND`` runs the simulated numactl,
which runs the simulated COMMAND with the step's seed. A check that ``uses`` others' outputs (gpudirect: topology's)
gets them (``seen``) from the same simulated node. A group check that gathers a node check's outputs
(firmware_fleet) runs them on each of the case's hosts (declared.Case.job_hosts: node07, node08, ...), each its own
hardware model; a fault with ``host`` applies to that host only (default node07), ``model`` and ``software`` to
every host. A step whose exit status is judged from its output (``exit_judged``) keeps its standard output followed
by its standard error, whatever its exit status.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from provision.checks import registry  # noqa: E402
from provision.checks.base import parse_outputs  # noqa: E402
from provision.engine.jobs import target  # noqa: E402
from provision.sim import faults, hwmodel, kernelviews, rack, repo, snapshot  # noqa: E402
from tests.unit.checks import declared  # noqa: E402

TOOLS = ROOT / "provision/sim/tools"
CLOCK = 1764633600  # 2025-12-02 00:00:00 UTC
NODE, NODE_INDEX, FABRIC_HOSTS = declared.HOST, 6, [f"node{i:02d}" for i in range(1, 9)]
# The kernel release the simulated nodes run (Debian 12's kernel ABI form: linux-image-6.1.0-28-amd64): what
# ``uname -r`` prints and /proc/cmdline boots, in place of this machine's own.
KERNEL = "6.1.0-28-amd64"
# /proc/uptime of the simulated node (``grep -H . /proc/uptime``): up one day, its 224 CPUs idle all of it (proc(5):
# seconds up, then the CPUs' idle seconds summed). A live node's is this machine's (the nodes share its kernel).
UPTIME = "86400.00 19353600.00"
# Real path -> where kernelviews.write puts that view under a node's root.
VIEWS = {"/proc/cmdline": kernelviews.CMDLINE, "/sys/kernel/iommu_groups": kernelviews.IOMMU_GROUPS,
         "/sys/devices/system/cpu/cpufreq": kernelviews.CPUFREQ, "/sys/module": kernelviews.SYS_MODULE}
# The command numactl runs: the simulated tool under BOOT with the step's seed (numactl execs it by name).
EXEC = '#!/bin/sh\nexec "$CAPTURE_PYTHON" -c "$CAPTURE_BOOT" "$CAPTURE_TOOLS/{name}.py" "$CAPTURE_SEED" ' \
       '"$CAPTURE_CLOCK" "$CAPTURE_TOOLS" "$@"\n'
# Run one simulated tool with the clock fixed and its randomness seeded: argv = script seed clock args...
BOOT = r"""
import hashlib, os, random, runpy, secrets, sys, time
script, seed, clock, tools = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
sys.argv = [script, *sys.argv[5:]]
sys.path[:0] = [os.path.dirname(script), tools]
rng = random.Random(seed)
random.seed(seed)
_pid = 1000 + int(hashlib.sha256(seed.encode()).hexdigest(), 16) % 90000
os.getpid = lambda: _pid
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
        self.root = tmp / "root"  # the node's kernel views (cat, find and grep read them here)
        kernelviews.write(self.root, model)

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

    def numactl(self, argv: list[str], key: str) -> tuple[list[str], dict]:
        """``numactl ... COMMAND ARGS``: the simulated numactl, and on its PATH the simulated COMMAND run as ``argv``
        runs a tool (BOOT, the step's seed), so that its output is the one COMMAND alone gives."""
        command = next(a for a in argv[1:] if not a.startswith("-"))
        bin_dir = self.tmp / "bin"
        bin_dir.mkdir(exist_ok=True)
        wrapper = bin_dir / command
        wrapper.write_text(EXEC.format(name=command.replace("-", "_")))
        wrapper.chmod(0o755)
        env = dict(self.env, PATH=f"{bin_dir}{os.pathsep}{self.env.get('PATH', '')}", CAPTURE_PYTHON=sys.executable,
                   CAPTURE_BOOT=BOOT, CAPTURE_TOOLS=str(TOOLS), CAPTURE_SEED=f"{self.seed}:{key}",
                   CAPTURE_CLOCK=str(self.clock))
        return self.argv(argv, key + ":numactl"), env

    def launch(self, argv: list[str], key: str) -> tuple[list[str], dict]:
        """(the command, its environment) that runs ``argv``'s simulated tool; ``env NAME=VALUE ... COMMAND`` sets
        those variables for COMMAND, as env(1) does."""
        if Path(argv[0]).name == "env":
            names = [a for a in argv[1:] if "=" in a and not a.startswith("-")]
            command, env = self.launch(argv[1 + len(names):], key)
            return command, {**env, **dict(a.split("=", 1) for a in names)}
        if Path(argv[0]).name == "numactl":
            return self.numactl(argv, key)
        return self.argv(argv, key), self.env

    def view(self, argv: list[str]) -> str | None:
        """What the real cat, find or grep print reading the node's kernel views (None: ``argv`` reads none)."""
        if Path(argv[0]).name == "uname" and argv[1:] == ["-r"]:
            return KERNEL + "\n"
        if Path(argv[0]).name == "grep" and argv[1:] == ["-H", ".", "/proc/uptime"]:
            return f"/proc/uptime:{UPTIME}\n"
        if Path(argv[0]).name not in ("cat", "find", "grep") or not any(a in VIEWS for a in argv[1:]):
            return None
        mapped = [str(self.root / VIEWS[a]) if a in VIEWS else a for a in argv]
        proc = subprocess.run(mapped, capture_output=True, text=True, env=dict(self.env, LC_ALL="C"))
        if proc.returncode not in (0, 1) or proc.stderr:  # grep: 1 is "nothing matched"
            raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
        out = proc.stdout
        for real, inside in VIEWS.items():
            out = out.replace(str(self.root / inside), real)
        if Path(argv[0]).name == "cat":
            return out
        return "".join(sorted(out.splitlines(keepends=True), key=_path_order))

    def run(self, step) -> str:
        """One step's output; its server started first and waited for (its ready line). Exit 0 required."""
        if Path(step.argv[0]).name == "dpkg-query":
            return dpkg_query(step.argv[1:], self.state)
        seen = self.view(step.argv)
        if seen is not None:
            return seen
        server = None
        if step.server:
            command, env = self.launch(step.server, step.key + ":server")
            server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            assert server.stdout is not None
            for line in server.stdout:
                if step.ready is None or step.ready.line is None or step.ready.line in line:
                    break
        command, env = self.launch(step.argv, step.key)
        proc = subprocess.run(command, env=env, capture_output=True, text=True)
        if server is not None:
            server.communicate(timeout=30)
        if step.exit_judged and proc.returncode in (0, 1):  # perftest's failures: exit 1, told on stderr
            return proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(step.argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout


def _path_order(line: str) -> list:
    """A ``path:value`` line's sort key: its path, the numbers in it as numbers (group 2 before group 10)."""
    path = line.split(":", 1)[0]
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def models(profile, recipe: dict, names: tuple[str, ...]) -> dict[str, dict]:
    """Host name -> its hardware model: built for the host (node07 is the rack's 7th node), the recipe's ``model``
    edits, then its faults on that host (``host``, default node07); booting ``KERNEL``."""
    unknown = {f.get("host", NODE) for f in recipe.get("faults") or []} - set(names)
    if unknown:
        raise SystemExit(f"faults on hosts the job does not have: {sorted(unknown)}")
    out = {}
    for i, name in enumerate(names):
        model = hwmodel.build(profile.data, name, NODE_INDEX + i)
        edit(model, recipe.get("model") or {})
        for fault in recipe.get("faults") or []:  # as `provision sim fault NODE KIND --device D --value V` edits it
            if fault.get("host", NODE) == name:
                faults.KINDS[fault["kind"]].apply(model, str(fault["device"]), fault.get("value"))
        release = f"/boot/vmlinuz-{os.uname().release} "  # the node boots KERNEL, not this machine's kernel
        model["kernel_cmdline"] = str(model.get("kernel_cmdline", "")).replace(release, f"/boot/vmlinuz-{KERNEL} ")
        out[name] = model
    return out


def simulate(check_id: str, case: declared.Case, seed: int, clock: float) -> dict[str, str]:
    """Step key -> output of the steps ``case`` captures, run against the simulated tools of its recipe's node(s)."""
    recipe, profile, check = case.sim, case.host_profile(), registry()[check_id]
    # a check gathering a node check's outputs runs them on each of the job's hosts; any other on node07
    names = case.job_hosts(check.scope) if check.gathers else (NODE,)
    state = software(profile.hardware.stack_line)
    edit(state, recipe.get("software") or {})
    world = None
    if "fabric" in recipe:
        world = rack.fabric_world(profile.data, FABRIC_HOSTS, {})
        for fault in recipe["fabric"]:
            faults._apply_fabric(world, fault["host"], fault["kind"], fault["device"], fault.get("value"))
    named = FABRIC_HOSTS if world is not None else names if check.gathers else ()
    hosts = tuple(type("H", (), {"name": h, "address": "127.0.0.1"}) for h in named) or (Node,)
    with tempfile.TemporaryDirectory() as tmp:
        sims = []
        for name, model in models(profile, recipe, names).items():
            (Path(tmp) / name).mkdir()
            sims.append(Sim(Path(tmp) / name, model, state, world, f"{seed}:{check_id}:{case.name}", clock))
        job = target(check, hosts)
        seen = {}
        for used in check.uses:  # the outputs of the checks it uses, from the same node (gpudirect: topology's)
            before = registry()[used].steps(profile, job)
            seen[used] = parse_outputs(registry()[used], before, {s.key: sims[0].run(s) for s in before})
        steps = check.steps(profile, job, seen) if check.uses else check.steps(profile, job)
        return {step.key: sims[step.on if check.gathers else 0].run(step) for step in steps
                if step.key in case.captures}


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
        texts = simulate(check_id, case, seed, clock)
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
