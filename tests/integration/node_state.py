"""What a simulated node holds after an install, read inside it (nsenter): its packages, holds, the stack's units and
every file under the paths the roles write, by content, mode and owner. Two nodes of one rack installed by different
methods must compare equal (``differences``), less what is each node's own (``OWN``) and each method's own tooling.

This is the test's own oracle, independent of ``provision.rollout``'s list of per-node paths: a path that list wrongly
leaves out of an image shows up here as a difference."""
from __future__ import annotations

import json
import subprocess

from tests.integration.slurm_node import nsenter

# Where the roles write: packages' files (/usr, /etc, /opt), their database, the roles' own state and files.
ROOTS = ("/etc", "/opt", "/usr", "/var/lib/dpkg", "/var/lib/rpm", "/var/lib/provision", "/var/lib/dkms")
# A node's own, by what it is, not by method: its name, keys and machine-id, the simulator's hardware model; and each
# method's tooling (/opt/provision: the bundle and Ansible of local and image; /var/lib/provision/install, image*).
OWN = ("/etc/hostname", "/etc/hosts", "/etc/machine-id", "/etc/ssh/ssh_host_", "/etc/provision-sim",
       "/etc/ssh/sshd_config.d/listen.conf",
       "/opt/provision", "/var/lib/provision/install", "/var/lib/provision/image", "/var/lib/dpkg/lock",
       "/var/lib/dpkg/triggers/Lock", "/var/lib/rpm/.rpm.lock", "/etc/ld.so.cache", "/var/lib/dpkg/status-old",
       "/var/lib/dpkg/diversions-old", "/var/lib/dpkg/statoverride-old")

# Build logs of the burn-in tools' source builds: they hold the build's timings.
LOGS = ("CMakeOutput.log", "CMakeError.log", "CMakeConfigureLog.yaml")

SCRIPT = r"""
import hashlib, json, os, stat, subprocess, sys
roots, own, logs = json.loads(sys.argv[1]), tuple(json.loads(sys.argv[2])), set(json.loads(sys.argv[3]))
files = {}
for root in roots:
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            if path.startswith(own) or name in logs:
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                what = "-> " + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    what = hashlib.sha256(f.read()).hexdigest()
            else:
                continue
            files[path] = [what, oct(st.st_mode), st.st_uid, st.st_gid]
def out(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True).stdout.split("\n")
    except OSError:
        return []
packages = sorted(l for l in out(["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n"]) if l)
packages += sorted(l for l in out(["rpm", "-qa", "--qf", "%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n"]) if l)
units = {}
for folder in ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"):
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.startswith(("nvidia", "dcgm", "provision")) and name.endswith((".service", ".timer")):
            units[name] = [out(["systemctl", "is-enabled", name])[0], out(["systemctl", "is-active", name])[0]]
print(json.dumps({"files": files, "packages": packages, "holds": sorted(l for l in out(["apt-mark", "showhold"]) if l),
                  "units": units}))
"""


def read(node) -> dict:
    """The node's state (``node``: a ``provision.sim.rack.SimNode``)."""
    done = subprocess.run([*nsenter(node), "python3", "-c", SCRIPT, json.dumps(ROOTS), json.dumps(OWN),
                           json.dumps(LOGS)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def differences(a: dict, b: dict) -> list[str]:
    """What differs between two nodes' states, one line each (empty: the same)."""
    lines = []
    for key in ("packages", "holds"):
        lines += [f"{key}: only on the first: {x}" for x in sorted(set(a[key]) - set(b[key]))]
        lines += [f"{key}: only on the second: {x}" for x in sorted(set(b[key]) - set(a[key]))]
    for name in sorted(set(a["units"]) | set(b["units"])):
        if a["units"].get(name) != b["units"].get(name):
            lines.append(f"unit {name}: {a['units'].get(name)} != {b['units'].get(name)}")
    for path in sorted(set(a["files"]) | set(b["files"])):
        if a["files"].get(path) != b["files"].get(path):
            lines.append(f"file {path}: {a['files'].get(path)} != {b['files'].get(path)}")
    return lines
