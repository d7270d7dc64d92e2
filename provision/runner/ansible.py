"""The only module that imports ansible_runner: run a playbook, keep its artifacts, type its result.

Artifacts (events, stdout, stats) stay under the run's ``ansible/`` folder. The result gives,
per host, its status (ok, failed, unreachable), its changed count and, per role, the tasks
that failed with their messages.

ansible-runner copies the controller's whole environment into the playbook's and writes it to
``artifacts/<id>/command`` (ansible_runner/config/_base.py, runner.py), and its keyword
arguments to ``env/`` files (utils.dump_artifacts). Run folders are uploaded by CI, so the
playbook gets an allow-listed environment only (``ENV_ALLOWED``), ``env/`` files are not
written (``suppress_env_files``), and the ``ansible/`` folder is 0700 with its files 0600.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import shlex
import subprocess
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ansible_runner.interface import init_runner
from ansible_runner.runner import Runner
from ansible_runner.utils import get_callback_dir

from provision import paths
from provision.errors import RunnerError
from provision.results.events import Listener, PlaybookEnded, TaskResult, TaskStarted


# What the playbook inherits from the controller's environment; everything else is dropped.
# Nothing the nodes need comes from here: the roles run on the nodes with the nodes' own
# environment (a proxy for the nodes is an inventory setting), so proxy variables, which
# may carry credentials, are not passed. ANSIBLE_VAULT_* name password files, not passwords.
ENV_ALLOWED = frozenset({"HOME", "PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME",
                         "SSH_AUTH_SOCK", "ANSIBLE_VAULT_PASSWORD_FILE", "ANSIBLE_VAULT_IDENTITY_LIST",
                         "ANSIBLE_VAULT_IDENTITY"})
# What ansible-runner sets itself (ansible_runner/config/_base.py, config/runner.py, 2.4.3).
ENV_RUNNER = frozenset({"ANSIBLE_STDOUT_CALLBACK", "ANSIBLE_CALLBACK_PLUGINS", "ANSIBLE_RETRY_FILES_ENABLED",
                        "AWX_ISOLATED_DATA_DIR", "ANSIBLE_CACHE_PLUGIN", "ANSIBLE_CACHE_PLUGIN_CONNECTION",
                        "RUNNER_OMIT_EVENTS", "RUNNER_ONLY_FAILED_EVENTS"})
# Host key checking for every connection plugin that reads one (ssh, paramiko), whatever the
# user's environment says: ansible-runner turns it off when ANSIBLE_HOST_KEY_CHECKING is unset.
HOST_KEY_ENV = {"ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_SSH_HOST_KEY_CHECKING": "True",
                "ANSIBLE_PARAMIKO_HOST_KEY_CHECKING": "True"}


@dataclass
class PlaybookHost:
    """One host's install: ``status`` ok|failed|unreachable; ``roles`` role -> {tasks, changed, failed: [..]};
    ``reboot_pending`` when the driver waits for a reboot the inventory opted out of."""

    host: str
    status: str = "ok"
    reboot_pending: bool = False
    changed: int = 0
    roles: dict = field(default_factory=lambda: defaultdict(lambda: {"tasks": 0, "changed": 0, "failed": []}))


@dataclass
class PlaybookResult:
    playbook: str
    rc: int
    status: str
    hosts: dict[str, PlaybookHost]
    artifacts: str


@dataclass(frozen=True)
class PlaybookRequest:
    """One ansible-playbook run: ``playbooks/<playbook>`` against one inventory or several (``-i`` each, later ones
    win), on ``limit``'s hosts (empty: the inventory's), ``tags`` (None: every task), ``extravars``, ``vault_args``
    (ansible-playbook's vault options) and ``forks`` hosts at once (``--forks``; None: ansible.cfg's)."""

    playbook: str
    inventory: Path | Sequence[Path]
    limit: Sequence[str] = ()
    tags: str | None = None
    extravars: dict | None = None
    vault_args: Sequence[str] = ()
    forks: int | None = None


def run_playbook(request: PlaybookRequest, artifacts_dir: Path, progress=print,
                 cancel: Callable[[], bool] | None = None, events: Listener | None = None) -> PlaybookResult:
    """Run ``request`` with ansible-runner, its private folder ``artifacts_dir``. ``cancel`` is polled while it
    runs: True stops ansible-playbook (status ``canceled``); it also keeps ansible-runner from installing its
    own SIGINT/SIGTERM handlers over the caller's. ``events`` (when given) gets a ``TaskStarted``
    per task and a ``TaskResult`` per host and task, in place of a line per role; the lines that
    matter (a host failed or unreachable, a reboot pending) go to ``progress`` either way.
    Raises RunnerError if it could not start."""
    artifacts_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    artifacts_dir.chmod(0o700)
    hosts: dict[str, PlaybookHost] = {}
    playbook = request.playbook
    kwargs = runner_kwargs(request, artifacts_dir)
    kwargs["event_handler"] = _event_handler(hosts, progress, events, len(request.limit or ()))
    kwargs["cancel_callback"] = cancel or (lambda: False)
    try:
        result = prepare(kwargs)
        result.run()
    except Exception as exc:  # ansible-runner raises bare exceptions for a bad private dir
        raise RunnerError(f"ansible-runner could not run {playbook}: {exc}") from None
    finally:
        close_masters(kwargs["envvars"]["ANSIBLE_SSH_CONTROL_PATH_DIR"])
        _owner_only(artifacts_dir)
    if result.status not in ("successful", "failed", "canceled"):
        raise RunnerError(f"ansible-runner: {playbook} ended {result.status} (rc {result.rc}); "
                          f"see {artifacts_dir}/artifacts/{result.config.ident}/stdout")
    return PlaybookResult(playbook, result.rc, result.status, hosts,
                          str(Path(result.config.artifact_dir).relative_to(artifacts_dir.parent)))


def runner_kwargs(request: PlaybookRequest, artifacts_dir: Path) -> dict:
    """The keyword arguments for ansible-runner's ``init_runner`` (no event handler) to run ``request``.

    ansible-runner disables Ansible's host key checking whenever ANSIBLE_HOST_KEY_CHECKING is unset
    (ansible_runner/config/_base.py), so it is set to True here: a changed host key stops the run.
    ``inventory`` goes as a list of absolute paths, which ansible-runner passes as one ``-i`` each.
    """
    envvars = {"ANSIBLE_CONFIG": str(paths.ROOT / "ansible.cfg"), "ANSIBLE_FORCE_COLOR": "0", **HOST_KEY_ENV,
               "PROVISION_PROFILES_DIR": str(paths.PROFILES),
               "ANSIBLE_SSH_CONTROL_PATH_DIR": control_path_dir(artifacts_dir),
               "PATH": f"{Path(paths.tool('ansible-playbook')).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    inventory = request.inventory
    sources = [inventory] if isinstance(inventory, (str, Path)) else list(inventory)
    kwargs = dict(private_data_dir=str(artifacts_dir), playbook=str(paths.PLAYBOOKS / request.playbook),
                  inventory=[str(Path(s).resolve()) for s in sources], project_dir=str(paths.ROOT),
                  envvars=envvars, extravars=request.extravars or {}, quiet=True, json_mode=False,
                  suppress_env_files=True, settings={"suppress_ansible_output": True})
    if request.limit:
        kwargs["limit"] = ",".join(request.limit)
    if request.tags:
        kwargs["tags"] = request.tags
    if request.vault_args:
        kwargs["cmdline"] = shlex.join(request.vault_args)
    if request.forks:
        kwargs["forks"] = request.forks  # ansible-playbook --forks
    return kwargs


# A socket's path is at most 107 bytes and a NUL (sun_path, unix(7)). Ansible names a host's socket
# <dir>/<10 hex digits> (plugins/connection/ssh.py, _create_control_path) and OpenSSH first binds it
# as <path>.<16 random characters>, then renames it (mux.c, muxserver_listen): 28 bytes past the folder.
CONTROL_PATH_MAX_DIR = 107 - 28


def control_path_dir(artifacts_dir: Path) -> str:
    """SSH ControlPersist sockets of this run only: OpenSSH checks a host key when a master
    connection is made, so a master left by an earlier run would carry a changed key past the
    check. Under the temp folder, 0700; under /tmp when the temp folder's path is too long for a
    socket (a Slurm job's TMPDIR can be), since ssh then fails on every host."""
    digest = hashlib.sha256(str(artifacts_dir.resolve()).encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"provision-cp-{digest}"
    if len(str(folder)) > CONTROL_PATH_MAX_DIR:
        folder = Path("/tmp") / folder.name
    folder.mkdir(mode=0o700, exist_ok=True)
    return str(folder)


def close_masters(folder: str) -> None:
    """Stop this run's SSH master connections (``ssh -O exit``, all at once) and remove their folder:
    ControlPersist would keep one ssh process per host on the controller past the run, for nothing
    (the next run makes its own). Best effort: a master that does not answer ends at its ControlPersist."""
    if not Path(folder).is_dir():
        return
    sockets, procs = [s for s in Path(folder).glob("*") if s.is_socket()], []
    for sock in sockets:
        try:
            procs.append(subprocess.Popen(["ssh", "-O", "exit", "-o", f"ControlPath={sock}", "provision-master"],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        except OSError:
            break  # no ssh client, or no process left: the masters end at their ControlPersist
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    if not any(Path(folder).glob("*")):
        Path(folder).rmdir()


def prepare(kwargs: dict) -> Runner:
    """ansible-runner's Runner for ``kwargs``, its environment cut down to ``ENV_ALLOWED``, ours
    (``envvars``) and ansible-runner's own variables. Raises what ansible-runner raises."""
    runner = init_runner(**kwargs)
    ours = kwargs.get("envvars") or {}
    env = {k: v for k, v in runner.config.env.items()
           if k in ours or k in ENV_ALLOWED or k in ENV_RUNNER or k.startswith("LC_")}
    env["ANSIBLE_CALLBACK_PLUGINS"] = get_callback_dir()  # not the user's plugins, not their code
    env.update(HOST_KEY_ENV)
    runner.config.env = env
    return runner


def _owner_only(folder: Path) -> None:
    """``folder`` and the folders in it 0700, its files 0600 (events hold task results)."""
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):  # a link's mode is its target's: leave what it points to alone
                os.chmod(path, 0o700 if name in dirs else 0o600)


_LAST_ROLE = [""]


def host_events(events, progress) -> dict[str, PlaybookHost]:
    """The hosts' results (``PlaybookHost`` by name) from ansible-runner's events (dicts, as its event handler and
    ``ansible-runner -j`` give them, or ``provision.rollout.node_side``'s slimmed ones): the same reading as a
    playbook run here. A failed or unreachable host and a pending reboot go to ``progress``, as here."""
    hosts: dict[str, PlaybookHost] = {}
    for event in events:
        _on_event(event, hosts, progress, role_lines=False)
    return hosts


def _event_handler(hosts: dict[str, PlaybookHost], progress, events: Listener | None = None,
                   total: int = 0) -> Callable[[dict], bool]:
    def handle(event: dict) -> bool:
        _on_event(event, hosts, progress, events)
        if events is not None:
            _emit(event, events, total)
        return True  # ansible-runner writes an event to the artifacts only when its handler returns True
    return handle


_STATUS = {"runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_unreachable": "unreachable",
           "runner_on_skipped": "skipped"}


def _emit(event: dict, events: Listener, total: int) -> None:
    """ansible-runner's event as the progress view's: a task started, a host's result of it."""
    kind, data = event.get("event", ""), event.get("event_data", {})
    if kind == "playbook_on_task_start":
        events(TaskStarted(data.get("role") or "play", data.get("task", ""), total))
    elif kind == "playbook_on_stats":  # Ansible's recap: the playbook's last event
        events(PlaybookEnded())
    elif kind in _STATUS and data.get("host"):
        failed = kind == "runner_on_failed" and not data.get("ignore_errors")
        events(TaskResult(data.get("role") or "play", data["host"], "ok" if kind == "runner_on_failed" and not failed
                          else _STATUS[kind], bool((data.get("res") or {}).get("changed"))))


def _on_event(event: dict, hosts: dict[str, PlaybookHost], progress, events: Listener | None = None,
              role_lines: bool = True) -> None:
    kind, data = event.get("event", ""), event.get("event_data", {})
    if role_lines and kind == "playbook_on_task_start" and data.get("role") and data.get("role") != _LAST_ROLE[0]:
        _LAST_ROLE[0] = data["role"]
        if events is None:
            progress(f"  install role {data['role']}")
    host = data.get("host")
    if not host or kind not in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable", "runner_on_skipped"):
        return
    entry = hosts.setdefault(host, PlaybookHost(host))
    role = data.get("role") or "play"
    row = entry.roles[role]
    row["tasks"] += 1
    res = data.get("res") or {}
    if res.get("changed"):
        row["changed"] += 1
        entry.changed += 1
    if kind == "runner_on_unreachable":
        entry.status = "unreachable"
        row["failed"].append({"task": data.get("task", ""), "msg": _msg(res)})
        progress(f"  install {host:<12} {role}: UNREACHABLE: {_msg(res)}")
    elif kind == "runner_on_failed" and not data.get("ignore_errors"):
        entry.status = "failed"
        row["failed"].append({"task": data.get("task", ""), "msg": _msg(res)})
        progress(f"  install {host:<12} {role}: FAILED '{data.get('task', '')}': {_msg(res)}")
    elif (res.get("ansible_facts") or {}).get("nvidia_driver_reboot_pending") is True:
        # nvidia_driver with nvidia_driver_reboot false: installed, and waits for the operator's reboot.
        entry.reboot_pending = True
        progress(f"  install {host:<12} {role}: reboot pending (nvidia_driver_reboot is false)")


# OpenSSH's own lines when strict host key checking refuses a host (changed or unknown key).
_HOST_KEY_LINE = re.compile(r"(Host key for \S+ has changed[^\r\n]*|No \S+ host key is known for [^\r\n]*|"
                            r"Offending \S+ key in [^\s\\]+)")


def _msg(res: dict) -> str:
    msg = str(res.get("msg") or res.get("stderr") or res.get("reason") or "")
    key_lines = _HOST_KEY_LINE.findall(msg)
    if key_lines:  # ssh's banner would fill the message; its own explanation is what the operator needs
        refusals = "; ".join(dict.fromkeys(k.strip().rstrip(".") for k in key_lines))
        return ("SSH host key check refused the host: " + refusals
                + " (reinstalled node: verify, then update known_hosts)")[:400]
    return " ".join(msg.split())[:300]
