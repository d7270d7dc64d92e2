"""Bench: what makes ``--method push`` cheaper: Mitogen for Ansible, Ansible's settings, the ansible-core release.

Prints figures, never passes or fails. A rack of ``--nodes`` simulated nodes is installed once by ``--method image``
(the fastest way to an installed rack), then the install playbook runs again as a no-op (nothing changes: every
task's per-host overhead, which is what these settings act on) by ``ansible-playbook`` itself, once per variant:

- ``baseline``: ansible.cfg as it is (ansible-core of the project's virtualenv);
- ``mitogen``: Mitogen for Ansible's ``mitogen_linear`` strategy (``--mitogen``, default 0.3.54, the newest on PyPI on
  2026-12-05; its ansible_mitogen code has 2.19- and 2.20-specific paths, ``mixins.py``, ``transport_config.py``), in a
  virtualenv of its own with the same ansible-core;
- ``poll-5ms``: ``internal_poll_interval`` 0.005 (Ansible's default 0.001: how often the main process polls its
  workers' results);
- ``free``: the ``free`` strategy (each host runs ahead on its own);
- ``core-2.18``: the baseline under ansible-core ``--older`` (default 2.18.10) in a virtualenv of its own: ansible-core
  2.19 rewrote templating (its porting guide, "Data Tagging"), and public reports say it is slower.

For each: wall seconds, the CPU seconds of ansible-playbook and its children (the controller's), per host, and the
recap's changed and failed counts (a variant that changes something or fails is not a faster no-op: said).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from install_scale import free_base  # noqa: E402
from install_noop import ROOT, timed  # noqa: E402

PY = sys.executable


def venv(folder: Path, packages: list[str]) -> Path:
    """A virtualenv at ``folder`` with ``packages`` (pip, from the configured index); its bin folder."""
    if not (folder / "bin/ansible-playbook").exists():
        subprocess.run([PY, "-m", "venv", str(folder)], check=True)
        subprocess.run([str(folder / "bin/pip"), "install", "--quiet", *packages], check=True)
    return folder / "bin"


def noop(inv: Path, bindir: Path, env: dict, forks: int) -> tuple[float, float, dict]:
    """(wall s, CPU s of ansible-playbook and its children, recap totals) of the install playbook as a no-op."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run([str(bindir / "ansible-playbook"), "-i", str(inv), str(ROOT / "playbooks/site.yml"),
                           "--forks", str(forks)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=7200)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    recap = {"changed": 0, "failed": 0, "unreachable": 0, "rc": done.returncode}
    for line in done.stdout.splitlines():
        if ": ok=" in line:
            fields = dict(w.split("=", 1) for w in line.split(":", 1)[1].split() if "=" in w)
            for key in ("changed", "failed", "unreachable"):
                recap[key] += int(fields.get(key, 0))
    if done.returncode != 0:
        recap["tail"] = (done.stdout + done.stderr)[-600:]
    return wall, cpu, recap


def main() -> None:
    from importlib import metadata

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--mitogen", default="0.3.54")
    p.add_argument("--older", default="2.18.10")
    p.add_argument("--variants", default="baseline,mitogen,poll-5ms,free,core-2.18")
    args = p.parse_args()
    core = metadata.version("ansible-core")
    work = Path(tempfile.mkdtemp(prefix="bench-push-"))
    inv = work / "rack"
    shutil.copytree(ROOT / "inventory/sim/group_vars", inv / "group_vars")
    own = Path(PY).parent
    env = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "PROVISION_PROFILES_DIR": str(ROOT / "provision/profiles"),
           "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp")}
    variants = {
        "baseline": (own, {}),
        "mitogen": None,
        "poll-5ms": (own, {"ANSIBLE_INTERNAL_POLL_INTERVAL": "0.005"}),
        "free": (own, {"ANSIBLE_STRATEGY": "free"}),
        "core-2.18": None,
    }
    try:
        _, up = timed([PY, "-m", "provision", "sim", "up", "--nodes", str(args.nodes), "--inventory", str(inv),
                       "--address-base", free_base(args.nodes)])
        if up.returncode != 0:
            sys.exit(up.stderr[-2000:])
        wall, first = timed([PY, "-m", "provision", "install", "-i", str(inv), "--method", "image", "--run-id", "i"],
                            {"PROVISION_RUNS_DIR": str(work / "runs"), "PROVISION_CACHE_DIR": str(work / "cache")})
        print(f"# {os.cpu_count()} CPUs, {args.nodes} nodes installed by --method image in {wall:.0f} s "
              f"(exit {first.returncode}); then the install playbook again, a no-op, by ansible-playbook, --forks "
              f"{args.nodes}")
        print(f"{'variant':<10} {'ansible-core':<12} {'wall s':>7} {'CPU s':>7} {'CPU/host':>8} {'changed':>7} "
              f"{'failed':>6}  load 1/5/15 min")
        for name in args.variants.split(","):
            version = core
            if name == "mitogen":
                bindir = venv(work / "venv-mitogen", [f"ansible-core=={core}", f"mitogen=={args.mitogen}"])
                site = next((bindir.parent / "lib").glob("python3*/site-packages"))
                extra = {"ANSIBLE_STRATEGY_PLUGINS": str(site / "ansible_mitogen/plugins/strategy"),
                         "ANSIBLE_STRATEGY": "mitogen_linear"}
                version = f"{core}+m{args.mitogen}"
            elif name == "core-2.18":
                bindir = venv(work / "venv-older", [f"ansible-core=={args.older}"])
                extra, version = {}, args.older
            else:
                bindir, extra = variants[name]  # type: ignore[misc]
            shutil.rmtree(work / "cp", ignore_errors=True)
            (work / "cp").mkdir()
            wall, cpu, recap = noop(inv, bindir, {**env, **extra}, args.nodes)
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"{name:<10} {version:<12} {wall:>7.1f} {cpu:>7.1f} {cpu / args.nodes:>8.2f} {recap['changed']:>7} "
                  f"{recap['failed'] + recap['unreachable']:>6}  {load}", flush=True)
            if recap.get("tail"):
                print(f"#   {name}: exit {recap['rc']}: " + json.dumps(recap["tail"]))
            subprocess.run(["sh", "-c", f"for s in {work}/cp/*; do ssh -O exit -o ControlPath=$s x; done"],
                           capture_output=True, check=False)
    finally:
        timed([PY, "-m", "provision", "sim", "down", "--inventory", str(inv)])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
