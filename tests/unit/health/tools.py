"""Stand-ins for a node's tools in the unit tests of ``provision health``: executables on a PATH of their own, run by
the real command as local processes (``provision.engine.local``). They print real captures (``tests/data``); the
stand-in ``scontrol`` keeps nodes in a JSON file and prints them as Slurm 22.05's ``scontrol show node -o`` does
(``tests/data/slurm/show_node.22.05.txt``: NodeName=, State=, Reason= with its ``[user@time]`` stamp last); the real
Slurm is tests/integration/test_health_slurm.py's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from provision import paths

DATA = paths.ROOT / "tests" / "data"
SCONTROL = r'''#!PYTHON
import json, sys, datetime
state_file = "STATE"
nodes = json.load(open(state_file))
args = sys.argv[1:]
with open(state_file + ".log", "a") as log:
    log.write(" ".join(args) + "\n")
if nodes.get("__fail__"):
    print("scontrol: error: " + nodes["__fail__"], file=sys.stderr); sys.exit(1)
if args[:3] == ["show", "node", "-o"]:
    names = args[3:] or [n for n in nodes if not n.startswith("__")]
    for name in names:
        if name not in nodes:
            print(f"Node {name} not found", file=sys.stderr); sys.exit(1)
        n = nodes[name]
        reason = f" Reason={n['reason']} [root@{n.get('since', '2026-12-04T21:00:00')}]" if n.get("reason") else ""
        print(f"NodeName={name} Arch=x86_64 CPUTot=1 State={n['state']} Partitions=burn Version=22.05.8{reason}")
    sys.exit(0)
if args[0] == "update":
    fields = dict(a.split("=", 1) for a in args[1:])
    n = nodes[fields["NodeName"]]
    if fields["State"] == "DRAIN":
        n["state"], n["reason"] = "IDLE+DRAIN", fields["Reason"]
        n["since"] = datetime.datetime.now().isoformat(timespec="seconds")
    elif fields["State"] == "RESUME":
        n["state"], n["reason"] = "IDLE", ""
    json.dump(nodes, open(state_file, "w"))
    sys.exit(0)
sys.exit(2)
'''


def tool(folder: Path, name: str, script: str) -> Path:
    """An executable ``name`` in ``folder`` running ``script`` (sh)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


def only(folder: Path, *programs: str) -> Path:
    """A folder of links to this machine's ``programs`` and nothing else (a PATH without its scontrol)."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    for name in programs:
        (folder / name).symlink_to(shutil.which(name))
    return folder


def printing(folder: Path, name: str, capture: Path) -> Path:
    """``name`` printing ``capture``."""
    return tool(folder, name, f"cat {capture}\n")


def scontrol(folder: Path, nodes: dict) -> Path:
    """A stand-in ``scontrol`` over ``nodes`` (name -> {state, reason, since}); returns its state file (its calls go
    to <state file>.log)."""
    state = folder / "slurm.json"
    state.write_text(json.dumps(nodes))
    path = folder / "bin" / "scontrol"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCONTROL.replace("PYTHON", sys.executable).replace("STATE", str(state)))
    path.chmod(0o755)
    return state


def health(bin_dir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``provision health ARGS`` with ``bin_dir`` first on PATH and only the system's folders after it (no
    nvidia-smi, ibstat or scontrol of this machine's)."""
    environ = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", **(env or {})}
    return subprocess.run([sys.executable, "-m", "provision", "health", *args], capture_output=True, text=True,
                          timeout=120, env=environ)
