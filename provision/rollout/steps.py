"""One node's steps of ``install --method local|image``, over the burn-in's SSH transport (``provision.engine.ssh``).

Each step is one SSH command (``node_side.py`` on the node, or ``tar``); data goes on the command's standard input
(``SshConnection.feed``), an image comes back on its standard output (``fetch``). A step that fails raises
StepError naming the step and the node's own words; the caller turns it into that host's install error, named as
``push`` names a failed task. Commands run as the inventory's user, through ``sudo -n`` unless it is root (the
roles' ``become: true``).
"""
from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from provision.errors import CommandError
from provision.rollout import bundle as shipped
from provision.rollout.node_side import ANSIBLE_VENV, WHEELS_MARK

STEP_TIMEOUT_S = 600.0  # one transfer or one unpacking; the roles' run has its own (ROLES_TIMEOUT_S)
# The whole install of one node by its own Ansible: the longest push install measured here is minutes, a real node's
# source builds and driver DKMS builds tens of minutes (burnin_tools' nccl-tests build); four hours, as the engine
# gives the longest check.
ROLES_TIMEOUT_S = 4 * 3600.0
STATE_DIR = "/var/lib/provision/install"  # per node: its inventory and ansible-runner's folder (never in an image)
BUILD_DIR = "/var/lib/provision/image-build"  # per node: the image build's stamp and path lists
END = '"provision_end"'


def _plain(value) -> str:
    """An inventory value usable as it is: "" for None or a Jinja template (which only Ansible can render)."""
    text = "" if value is None else str(value)
    return "" if "{{" in text or "{%" in text else text


def _transfer_timeout(size: int) -> float:
    """Seconds for sending ``size`` bytes: STEP_TIMEOUT_S, plus a second per 2 MB (a controller sending to hundreds
    of nodes at once gives each a small share of its link)."""
    return STEP_TIMEOUT_S + size / 2e6


class StepError(Exception):
    """A step failed on a node: ``task`` names the step, the message says why."""

    def __init__(self, task: str, message: str):
        super().__init__(message)
        self.task = task


@dataclass
class Node:
    """One host's connection and what its steps learned: ``probe`` (``node_side.probe``), bytes sent to it."""

    host: Any  # provision.inventory.Host
    conn: Any  # provision.engine.ssh.SshConnection
    probe: dict = field(default_factory=dict)
    sent_bytes: int = 0

    def _argv(self, argv: list[str]) -> list[str]:
        return argv if getattr(self.host, "user", "root") == "root" else ["sudo", "-n", *argv]

    def _check(self, task: str, result) -> str:
        if result.timed_out:
            raise StepError(task, f"timed out after {result.duration_s:.0f} s")
        if result.rc != 0:
            raise StepError(task, f"exit {result.rc}: " + " ".join((result.stderr or result.stdout).split())[-300:])
        return result.stdout

    def feed(self, task: str, argv: list[str], data: bytes, timeout_s: float = STEP_TIMEOUT_S) -> str:
        self.sent_bytes += len(data)
        try:
            return self._check(task, self.conn.feed(self._argv(argv), data, timeout_s))
        except CommandError as exc:
            raise StepError(task, str(exc)) from None

    def side(self, task: str, *args: str, python: str = "/usr/bin/python3", stdin_script: bool = False) -> dict:
        """Run ``node_side.py args`` (from the bundle, or fed on standard input) and read its JSON line."""
        if stdin_script:
            out = self.feed(task, [python, "-", *args], shipped.NODE_SIDE.read_bytes())
        else:
            out = self.feed(task, [python, f"{shipped.BUNDLE_DIR}/node_side.py", *args], b"")
        try:
            return json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise StepError(task, f"node_side.py {args[0]} printed no result: {out[-200:]!r}") from None

    def do_probe(self) -> dict:
        self.probe = self.side("probe the node", "probe", shipped.BUNDLE_DIR, stdin_script=True)
        return self.probe

    def bootstrap(self, wheels: bytes, digest: str) -> bool:
        """Give the node Ansible (``ANSIBLE_VENV``) from ``wheels`` unless it has that set already; True when it
        was installed now: a virtualenv made with the node's Python 3.11+ and a pip install without network. Raises
        StepError naming the Python the node lacks."""
        if digest and self.probe.get("wheels") == digest:
            return False
        python = self.probe.get("python_path")
        if not python:
            raise StepError("install Ansible on the node", f"ansible-core {shipped.wheel_versions()['ansible-core']} "
                            f"needs Python 3.11 or later on the node, which has {self.probe.get('python')} "
                            "(RHEL 9: dnf install python3.11; Ubuntu 22.04: apt install python3.11 python3.11-venv); "
                            "or install it with --method push")
        pins = " ".join(shlex.quote(f"{n}=={v}") for n, v in sorted(shipped.wheel_versions().items()))
        script = (f"set -e; d=$(mktemp -d); tar -xf - -C \"$d\"; rm -rf {ANSIBLE_VENV}; "
                  f"{shlex.quote(python)} -m venv {ANSIBLE_VENV}; "
                  f"{ANSIBLE_VENV}/bin/pip install --quiet --no-index --no-cache-dir --find-links \"$d\" {pins}; "
                  f"echo {digest} > {WHEELS_MARK}; rm -rf \"$d\"")
        self.feed("install Ansible on the node", ["sh", "-c", script], wheels, _transfer_timeout(len(wheels)))
        self.probe["wheels"] = digest
        return True

    def ship_bundle(self, data: bytes, digest: str) -> bool:
        """Unpack the install bundle at ``BUNDLE_DIR`` unless the node holds this one; True when sent now."""
        if self.probe.get("bundle") == digest:
            return False
        target = shipped.BUNDLE_DIR
        script = (f"set -e; rm -rf {target}.new; mkdir -p {target}.new; tar -xzf - -C {target}.new; "
                  f"rm -rf {target}; mv {target}.new {target}")
        self.feed("copy the install bundle", ["sh", "-c", script], data, _transfer_timeout(len(data)))
        self.probe["bundle"] = digest
        return True

    def ship_inventory(self, data: bytes) -> None:
        script = f"set -e; umask 077; mkdir -p {STATE_DIR}; cat > {STATE_DIR}/inventory.yml"
        self.feed("copy the node's inventory", ["sh", "-c", script], data)

    def run_roles(self, ident: str, playbook: str, tags: str | None, cancel,
                  extra: dict | None = None) -> tuple[list[dict], dict]:
        """Run ``playbook`` on the node by its own Ansible, with ``extra`` variables: (the events, the end line).
        ``cancel()`` True stops it. Raises StepError when it could not run or ended without its end line."""
        request = {"run_dir": f"{STATE_DIR}/runner", "ident": ident, "playbook": playbook,
                   "inventory": f"{STATE_DIR}/inventory.yml", "host": self.host.name, "tags": tags or "",
                   "extra": extra or {},
                   "interpreter": "" if self.host.vars.get("ansible_python_interpreter") else "/usr/bin/python3"}
        argv = self._argv([f"{ANSIBLE_VENV}/bin/python", f"{shipped.BUNDLE_DIR}/node_side.py", "run",
                           json.dumps(request)])
        task = "run the roles on the node"
        try:
            proc = self.conn.start(argv, ROLES_TIMEOUT_S)
            while not proc.read_until(END, 2.0):
                if cancel():
                    proc.kill()
                    raise StepError(task, "interrupted")
                if proc.channel.exit_status_ready():
                    break
            result = proc.wait()
        except CommandError as exc:
            raise StepError(task, str(exc)) from None
        events, end = [], {}
        for line in result.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "provision_end":
                end = event
            else:
                events.append(event)
        if not end:
            self._check(task, result)
            raise StepError(task, "ansible-runner ended without a result: "
                            + " ".join(result.stderr.split())[-300:])
        return events, end

    def boot_id(self) -> str:
        """What identifies the node's current boot: the inventory's ``nvidia_driver_boot_time_command`` (the reboot
        module's boot_time_command, as the role's reboot uses it), else the kernel's boot id."""
        command = (_plain(self.host.vars.get("nvidia_driver_boot_time_command"))
                   or "cat /proc/sys/kernel/random/boot_id")
        try:
            return self._check("read the boot id", self.conn.run(self._argv(["sh", "-c", command]), 30)).strip()
        except CommandError as exc:
            raise StepError("read the boot id", str(exc)) from None

    def reboot(self, reconnect, cancel) -> None:
        """Reboot the node as the nvidia_driver role's handler would (``nvidia_driver_reboot_command``, else
        ``shutdown -r now``), then wait, at most ``nvidia_driver_reboot_timeout`` seconds (the role's, 900), until
        it answers with another boot id; ``reconnect()`` gives a new connection."""
        if cancel():
            raise StepError("reboot the node", "interrupted")
        before = self.boot_id()
        command = _plain(self.host.vars.get("nvidia_driver_reboot_command")) or "shutdown -r now"
        try:  # detached: the command outlives this SSH session, which the reboot ends
            self.conn.run(self._argv(["sh", "-c", f"(sleep 1; {command}) >/dev/null 2>&1 </dev/null &"]), 30)
        except CommandError as exc:
            raise StepError("reboot the node", str(exc)) from None
        try:  # the reboot was asked for; from here an interrupt only stops the wait
            self.conn.close()
        except Exception:  # noqa: BLE001 (the reboot may have closed it already)
            pass
        try:
            timeout = float(_plain(self.host.vars.get("nvidia_driver_reboot_timeout")) or 900)
        except ValueError:
            timeout = 900.0  # the role's default; its argument spec refuses such a value under push
        deadline, last = time.monotonic() + timeout, "it did not answer"
        time.sleep(2)
        while time.monotonic() < deadline:
            if cancel():
                raise StepError("reboot the node", "interrupted")
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 (closing a connection the reboot ended)
                pass
            try:
                self.conn = reconnect()
                if self.boot_id() != before:
                    return
                last = "it answered with the same boot id"
            except StepError as exc:
                last = str(exc)
            time.sleep(2)
        raise StepError("reboot the node", f"not back within {timeout:.0f} s: {last}")

    def stamp(self) -> dict:
        return self.side("record the root before the image build", "stamp", BUILD_DIR, stdin_script=True)

    def capture(self, image_id: str, kind: str, excludes: list[str]) -> bytes:
        argv = self._argv(["/usr/bin/python3", f"{shipped.BUNDLE_DIR}/node_side.py", "capture", BUILD_DIR, image_id,
                           kind, *excludes])
        try:
            result, data = self.conn.fetch(argv, STEP_TIMEOUT_S)
        except CommandError as exc:
            raise StepError("capture the image", str(exc)) from None
        if result.rc != 0 or result.timed_out:
            self._check("capture the image", result)
        return data

    def apply_image(self, data: bytes, image_id: str, kind: str) -> None:
        # every extended attribute (file capabilities, SELinux labels), not only tar's default user.* ones
        self.feed("unpack the image", ["tar", "-xzpf", "-", "-C", "/", "--numeric-owner", "--xattrs",
                                       "--xattrs-include=*"], data, _transfer_timeout(len(data)))
        self.side("finish the image", "finish-image")
        self.probe["image"], self.probe["image_kind"] = image_id, kind
