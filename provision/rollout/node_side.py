"""What a node runs for ``install --method local|image``: standard library only, Python 3.9+ (the node's own).

The controller sends this file once, inside the install bundle (``/opt/provision/bundle/node_side.py``), and
feeds it on standard input for the first probe (``python3 - probe``). Subcommands, each printing one JSON
line (``run`` one per Ansible event, then its end):

- ``probe BUNDLE_DIR``: the node's Python, machine, OS (``/etc/os-release`` ID and VERSION_ID), kernel, the
  digest of its package list (``dpkg-query -W`` or ``rpm -qa``, sorted), the bundle and Ansible it holds, the
  image it last received.
- ``stamp DIR``: before an image build, the list of every path of the root file system (``find / -xdev``) and a
  stamp file: ``capture`` later takes what changed after it.
- ``capture DIR IMAGE_ID KIND EXCLUDES...``: after the build, a gzip'd tar of every path whose inode changed after
  the stamp (ctime: dpkg, pip, the roles' copies and chmods all set it; nothing sets it back), minus the per-node
  paths ``EXCLUDES``; the paths that were there before and are gone go into the image's
  ``/opt/provision/image/manifest.json`` too. The tar goes to standard output.
- ``finish-image``: on a node that received the image: removes what the build removed, records the image.
- ``run REQUEST_JSON`` (``run``'s request): ``ansible-runner`` (its Python API, in
  the node's Ansible virtualenv) runs the playbook on this node alone, ``-c local``; each event goes to standard
  output as one compact JSON line, cut down to what the controller reads (``provision.runner.ansible``), then
  ``{"event": "provision_end", ...}`` with ansible-runner's status and exit status.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys

IMAGE_DIR = "/opt/provision/image"  # the image's own manifest, inside the image
IMAGE_MARK = "/var/lib/provision/image.json"  # which image this node last received (per node, never in an image)
ANSIBLE_VENV = "/opt/provision/ansible"
WHEELS_MARK = ANSIBLE_VENV + "/.provision-wheels"  # the digest of the wheel set the virtualenv was made from
# What an event keeps of Ansible's result (provision.runner.ansible reads these).
RES_KEYS = ("changed", "msg", "stderr", "reason", "rc")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def _os_release() -> dict:
    out = {}
    for line in _read("/etc/os-release").splitlines():
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip().strip('"')
    return out


def package_digest() -> str:
    """sha256 of the node's sorted package list with versions ("" when neither dpkg nor rpm answers)."""
    for argv in (["dpkg-query", "-W", "-f", "${Package}=${Version} ${db:Status-Abbrev}\n"],
                 ["rpm", "-qa", "--qf", "%{NAME}=%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\n"]):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip():
            lines = sorted(line for line in done.stdout.splitlines() if line.strip())
            return hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return ""


# ansible-core 2.19 runs its controller side (ansible-playbook, here on the node) on Python 3.11 or later
# (its Requires-Python); modules still run on the node's /usr/bin/python3 (3.8+).
PYTHONS = ("python3.13", "python3.12", "python3.11", "python3")


def controller_python() -> tuple[str, str]:
    """(path, "X.Y") of the newest Python of ``PYTHONS`` on this node that is 3.11 or later, else ("", "X.Y") of
    python3."""
    found = ""
    for name in PYTHONS:
        for folder in ("/usr/bin", "/usr/local/bin"):
            path = os.path.join(folder, name)
            if not os.access(path, os.X_OK):
                continue
            done = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, check=False)
            version = done.stdout.strip()
            if done.returncode == 0 and tuple(map(int, version.split("."))) >= (3, 11):
                return path, version
            found = found or version
    return "", found or "%d.%d" % sys.version_info[:2]


def probe(bundle_dir: str) -> dict:
    osr = _os_release()
    python_path, python = controller_python()
    return {"python": python, "python_path": python_path, "machine": platform.machine(),
            "os": f"{osr.get('ID', '')}{osr.get('VERSION_ID', '')}", "kernel": platform.release(),
            "packages": package_digest(), "bundle": _read(os.path.join(bundle_dir, "DIGEST")),
            "wheels": _read(WHEELS_MARK), **_image_mark()}


def _image_mark() -> dict:
    try:
        mark = json.loads(_read(IMAGE_MARK) or "{}")
    except ValueError:
        mark = {}
    mark = mark if isinstance(mark, dict) else {}
    return {"image": str(mark.get("id", "")), "image_kind": str(mark.get("kind", ""))}


# File systems an install writes to: the root's and any other local disk's mounted below it (/boot, /boot/efi, a
# separate /var or /opt), never pseudo or network ones (proc(5) /proc/self/mountinfo: field 5 the mount point,
# the file system type after the " - " separator).
LOCAL_FS = ("ext2", "ext3", "ext4", "xfs", "btrfs", "vfat", "f2fs", "jfs", "reiserfs", "zfs")


def roots() -> list[str]:
    """"/" and the local disk file systems mounted below it, from /proc/self/mountinfo."""
    out = ["/"]
    for line in _read("/proc/self/mountinfo").splitlines():
        head, _, tail = line.partition(" - ")
        fields = head.split()
        if len(fields) > 4 and tail.split()[:1] and tail.split()[0] in LOCAL_FS and fields[4] != "/":
            out.append(fields[4].replace("\\040", " "))
    return sorted(set(out))


def _find(*args: str) -> list[bytes]:
    """Every path of ``roots()`` (``find ROOT -xdev ARGS -print0``), each once."""
    found: list[bytes] = []
    for root in roots():
        done = subprocess.run(["find", root, "-xdev", *args, "-print0"], capture_output=True, check=True)
        found += [p for p in done.stdout.split(b"\0") if p]
    return list(dict.fromkeys(found))


def stamp(folder: str) -> dict:
    os.makedirs(folder, mode=0o700, exist_ok=True)
    with open(os.path.join(folder, "before.list"), "wb") as out:
        out.write(b"\0".join(_find()))
    open(os.path.join(folder, "stamp"), "w").close()
    return {"stamp": os.path.join(folder, "stamp"), "packages": package_digest()}


def _excluded(path: str, excludes: list[str]) -> bool:
    return any(path == e or path.startswith(e.rstrip("/") + "/") for e in excludes)


def capture(folder: str, image_id: str, kind: str, excludes: list[str]) -> int:
    """Write the image's tar (gzip) to standard output; 0, or tar's exit status."""
    stamp_path = os.path.join(folder, "stamp")
    with open(os.path.join(folder, "before.list"), "rb") as f:
        before = set(f.read().split(b"\0"))
    after = set(_find())
    removed = sorted(p.decode(errors="surrogateescape") for p in before - after if p)
    removed = [p for p in removed if not _excluded(p, excludes)]
    changed = _find("-cnewer", stamp_path)
    paths = sorted(p for p in (c.decode(errors="surrogateescape") for c in changed if c)
                   if p != "/" and not _excluded(p, excludes))
    os.makedirs(IMAGE_DIR, exist_ok=True)
    manifest = {"id": image_id, "kind": kind, "removed": removed, "paths": len(paths)}
    with open(os.path.join(IMAGE_DIR, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    paths += [IMAGE_DIR, IMAGE_DIR + "/manifest.json"]
    listing = os.path.join(folder, "capture.list")
    with open(listing, "wb") as f:
        f.write(b"\0".join(p.lstrip("/").encode(errors="surrogateescape") for p in dict.fromkeys(paths)))
    sys.stdout.flush()
    # A file a service rewrote or removed while tar read it is tar's exit 1 (GNU tar: "some files differ"): the
    # image keeps what tar read; 2 is a real failure.
    rc = subprocess.run(["tar", "-C", "/", "--null", "--no-recursion", "--numeric-owner", "--xattrs",
                         "--xattrs-include=*", "--ignore-failed-read", "--warning=no-file-changed",
                         "--warning=no-file-removed", "-czf", "-", "-T", listing], stdout=sys.stdout.buffer,
                        check=False).returncode
    if rc in (0, 1):  # the builder holds its image as every node it goes to will
        _mark(image_id, kind)
        return 0
    return rc


def _mark(image_id: str, kind: str) -> None:
    os.makedirs(os.path.dirname(IMAGE_MARK), exist_ok=True)
    with open(IMAGE_MARK, "w") as f:
        json.dump({"id": image_id, "kind": kind}, f)


def finish_image() -> dict:
    with open(os.path.join(IMAGE_DIR, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    gone = 0
    for path in reversed(manifest.get("removed", [])):  # children before their folders
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
            gone += 1
        except FileNotFoundError:
            pass
        except OSError:
            pass  # a folder the node filled itself: left
    _mark(manifest["id"], manifest.get("kind", ""))
    subprocess.run(["systemctl", "daemon-reload"], capture_output=True, check=False)
    return {"id": manifest["id"], "removed": gone}


def _slim(event: dict) -> dict | None:
    kind = event.get("event", "")
    if kind not in ("playbook_on_task_start", "runner_on_ok", "runner_on_failed", "runner_on_unreachable",
                    "runner_on_skipped", "playbook_on_stats"):
        return None
    data = event.get("event_data") or {}
    res = data.get("res") or {}
    out = {k: res[k] for k in RES_KEYS if k in res}
    reboot = (res.get("ansible_facts") or {}).get("nvidia_driver_reboot_pending")
    if reboot is not None:
        out["ansible_facts"] = {"nvidia_driver_reboot_pending": reboot}
    keep = {k: data[k] for k in ("host", "role", "task", "ignore_errors") if k in data}
    if kind == "playbook_on_stats":
        keep = {k: data.get(k) for k in ("changed", "failures", "ok", "dark")}
    return {"event": kind, "event_data": {**keep, "res": out}}


def run(request: dict) -> int:
    """``request``: run_dir, ident, playbook, inventory, host, tags ("" for every task), extra (a dict of extra
    variables, or none), interpreter ("" when the inventory names one)."""
    import ansible_runner  # the node's Ansible virtualenv

    run_dir, tags, extra, interpreter = request["run_dir"], request.get("tags"), request.get("extra"), \
        request.get("interpreter")

    bundle = os.path.dirname(os.path.abspath(__file__))
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    cmdline = "-c local -e ansible_connection=local"
    if interpreter:  # the inventory names none: the node's system Python, which has apt's and dnf's bindings
        cmdline += " -e ansible_python_interpreter=" + shlex.quote(interpreter)
    if tags:
        cmdline += " --tags " + shlex.quote(tags)
    if extra:
        cmdline += " -e " + shlex.quote(json.dumps(extra))

    def emit(event: dict) -> bool:
        slim = _slim(event)
        if slim is not None:
            sys.stdout.write(json.dumps(slim, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        return False  # ansible-runner then keeps no event file on the node's disk

    # Modules inherit ansible-playbook's PATH, and the commands they start (python3 -m venv, pip) must find the
    # node's own programs, as under push: so PATH is root's default behind a folder holding only ansible-playbook
    # (ansible-runner finds it on PATH), never the virtualenv's bin with its python3.
    only = os.path.join(ANSIBLE_VENV, "path")
    os.makedirs(only, exist_ok=True)
    if not os.path.lexists(os.path.join(only, "ansible-playbook")):
        os.symlink(os.path.join(ANSIBLE_VENV, "bin", "ansible-playbook"), os.path.join(only, "ansible-playbook"))
    env = {"ANSIBLE_CONFIG": os.path.join(bundle, "ansible.cfg"),
           "PROVISION_PROFILES_DIR": os.path.join(bundle, "provision", "profiles"),
           "PATH": only + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ANSIBLE_FORCE_COLOR": "0"}
    try:
        result = ansible_runner.run(private_data_dir=run_dir, ident=request["ident"], playbook=request["playbook"],
                                    project_dir=os.path.join(bundle, "playbooks"), inventory=request["inventory"],
                                    limit=request["host"], cmdline=cmdline, envvars=env, quiet=True,
                                    event_handler=emit, suppress_env_files=True, rotate_artifacts=3)
    finally:  # the node's variables (vault-decrypted ones too) do not stay on its disk past the run
        try:
            os.unlink(request["inventory"])
        except OSError:
            pass
    sys.stdout.write(json.dumps({"event": "provision_end", "status": result.status, "rc": result.rc}) + "\n")
    return 0 if result.status in ("successful", "failed") else 1


def main(argv: list[str]) -> int:
    cmd, args = argv[0], argv[1:]
    if cmd == "probe":
        print(json.dumps(probe(args[0])))
    elif cmd == "stamp":
        print(json.dumps(stamp(args[0])))
    elif cmd == "capture":
        return capture(args[0], args[1], args[2], args[3:])
    elif cmd == "finish-image":
        print(json.dumps(finish_image()))
    elif cmd == "run":
        return run(json.loads(args[0]))
    else:
        print(json.dumps({"error": f"unknown subcommand {cmd}"}))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
