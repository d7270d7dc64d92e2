"""One host's fields, templated as Ansible templates them, and checked before anything runs.

``build(session, ansible_host) -> Host`` raises ``Problem`` (file, host, field, text). A host
without ``provision_profile`` is not a GPU node: it is built, not refused.

Inventory values never become paths or code. Host and group names must be ``SAFE_NAME``
(they name raw output files and JUnit suites); ``provision_profile`` is the name of a bundled
profile, never a path; ``provision_check_timeouts`` maps check ids to positive finite seconds, each
id one the registry knows (a misspelt id would leave its check at the default timeout unnoticed).
A host's BMC variables (``provision_bmc_*``, ``provision_boot_id_path``) are templated and checked for every host
that sets them (``bmcvars``): protocol, address, username, one password source, its file's mode, the CA file.

A GPU node's host key is always checked. Refused: an ``ansible_host_key_checking`` (or the
ssh or paramiko plugin's own variable) that is false; ssh args that disable strict checking,
accept new keys unseen or send known hosts nowhere (``WEAK_SSH``, as written in the inventory);
the same settings as OpenSSH resolves them for the host (``ssh -G`` with Ansible's options: Host
and Match blocks, Include, -F, the user's and the system's ssh_config); and any connection but
OpenSSH (``CONNECTIONS``): ``local`` would run the roles, reboot handler included, on this
machine, and paramiko's host key policy is its own, not OpenSSH's known_hosts with strict checking.
"""
from __future__ import annotations

import difflib
import math
import os
import re
import subprocess
from pathlib import Path

from ansible.module_utils.parsing.convert_bool import boolean

from provision import checks, external, profiles
from provision.checks import references
from provision.errors import MissingProgramError, ProfileError
from provision.profiles import Profile
from provision.inventory import bmcvars, sshargs
from provision.inventory.model import NVLINK_DOMAIN_VAR, PROFILE_NAME, SAFE_NAME, Host, Problem  # noqa: F401
from provision.inventory._ansible import INTERNAL_VARS, AnsibleError, Session, one_line, origin

ADDRESS = ("ansible_host", "ansible_ssh_host")
PORT = ("ansible_port", "ansible_ssh_port")
USER = ("ansible_user", "ansible_ssh_user")
KEY_FILE = ("ansible_ssh_private_key_file", "ansible_private_key_file")
HOST_KEY_CHECKING = ("ansible_host_key_checking", "ansible_ssh_host_key_checking",
                     "ansible_paramiko_host_key_checking")
SSH_ARGS = ("ansible_ssh_args", "ansible_ssh_common_args", "ansible_ssh_extra_args",
            "ansible_sftp_extra_args", "ansible_scp_extra_args")
# OpenSSH's values that do not refuse an unknown key (ssh_config(5): no, off, accept-new; its
# parser also takes false), and known hosts files that hold nothing.
WEAK_SSH = re.compile(r"StrictHostKeyChecking\s*[= ]\s*[\"']?(no|off|false|accept-new)\b|"
                      r"UserKnownHostsFile\s*[= ]\s*[\"']?(/dev/null|none)\b", re.IGNORECASE)
SSH = "ssh"
CONNECTIONS = ("ssh", "ansible.builtin.ssh", "smart")  # smart is ssh (ansible-core 2.19)
CHECK_ID = re.compile(r"[a-z][a-z0-9_]*\Z")
SITE_FACTS = profiles.SITE_FACTS  # site.schema.json's facts: one list, the profiles' (provision_firmware included)
TEMPLATED = ("provision_reference_overrides", "provision_check_timeouts") + SITE_FACTS


class Fields:
    """A host's variables; ``get`` templates one field, ``problem`` names the file it came from."""

    def __init__(self, session: Session, host):
        self.session, self.name = session, host.name
        try:
            self.vars = session.host_vars(host)
        except AnsibleError as exc:
            where = session.undecryptable_file(host) if "vault" in str(exc).lower() else None
            text = f"cannot decrypt it: {one_line(exc).rstrip('.')} (give --vault-password-file or --vault-id)"
            raise Problem(where or _defined_in(host), host.name, None, text if where else one_line(exc)) from None
        self.templar = session.templar(self.vars)
        self.templated: dict[str, object] = {}

    def get(self, names: tuple[str, ...], default=None):
        """(field name, templated value) of the first of ``names`` the host has, else (names[0], default).
        Each field is templated once per host; a scalar that holds no Jinja delimiter is taken as it is."""
        for name in names:
            if name in self.vars:
                if name not in self.templated:
                    self.templated[name] = self._template(name)
                return name, self.templated[name]
        return names[0], default

    def _template(self, name: str):
        raw = self.vars[name]
        if raw is None or isinstance(raw, (bool, int, float)) or (
                isinstance(raw, str) and not any(mark in raw for mark in ("{{", "{%", "{#"))):
            return plain(raw)
        try:
            return plain(self.templar.template(raw))
        except AnsibleError as exc:
            raise self.problem(name, f"field '{name}' cannot be templated: {one_line(exc)}") from None

    def problem(self, name: str, text: str) -> Problem:
        return Problem(origin(self.vars.get(name)) or self.vars.get("inventory_file") or "?", self.name, name, text)


def build(session: Session, ansible_host) -> tuple[Host, Profile | None]:
    """The Host for one of Ansible's hosts, and the view of its profile that validated it (``profiles.for_host``:
    overrides merged, site facts; None for a host that is not a GPU node). Raises Problem."""
    name = ansible_host.name
    _check_names(ansible_host)
    f = Fields(session, ansible_host)
    field, address = f.get(ADDRESS, name)  # Ansible's default: the inventory name is the address
    if not isinstance(address, str) or not address:
        raise f.problem(field, f"field '{field}' must be a host name or address, got {address!r}")
    field, port = f.get(PORT, 22)
    if isinstance(port, bool) or not str(port).isascii() or not str(port).isdigit() or not 1 <= int(port) <= 65535:
        raise f.problem(field, f"field '{field}' is not a port number (1-65535): {port!r}")
    profile = _profile(f)
    host_vars = {k: v for k, v in f.vars.items() if k not in INTERNAL_VARS}
    host_vars.update({k: f.get((k,))[1] for k in TEMPLATED + bmcvars.VARIABLES if k in f.vars})
    bmcvars.check(f, host_vars)
    view = None
    if profile is not None:
        view = _check_profile(f, profile, host_vars)
        _check_timeouts(f, host_vars.get("provision_check_timeouts"))
        _check_nvlink_domain(f, host_vars)
        _check_host_keys(f)
        _check_connection(f)
    groups = tuple(sorted(g.name for g in ansible_host.get_groups() if g.name != "all"))
    return Host(name=name, address=address, port=int(port), user=str(f.get(USER, "root")[1]),
                key_file=f.get(KEY_FILE)[1], known_hosts_file=f.get(("provision_known_hosts_file",))[1],
                profile=profile, groups=groups, ssh_options=_ssh_options(f) if profile else (), vars=host_vars), view


def _ssh_options(f: Fields) -> tuple[str, ...]:
    """What Ansible's ssh connection passes to ssh for this GPU node (``sshargs.py``; other hosts
    are never burned in)."""
    values = {n: f.get((n,))[1] for n in sshargs.variable_names() if n in f.vars}
    try:
        return sshargs.options(values)
    except ValueError as exc:  # shlex: an unbalanced quote in ssh args
        field = next((n for n in SSH_ARGS if n in values and not _splits(values[n])), SSH_ARGS[0])
        raise f.problem(field, f"field '{field}' cannot be split into ssh arguments: {exc}") from None
    except AnsibleError as exc:
        raise f.problem(next(iter(values), "ansible_ssh_args"), f"ssh connection options: {one_line(exc)}") from None


def _splits(text) -> bool:
    try:
        sshargs.split(text)
    except ValueError:
        return False
    return True


def plain(value):
    """``value`` as plain Python types (Ansible hands back tagged str/int/dict subclasses)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    for kind in (bool, str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


def _profile(f: Fields) -> str | None:
    field, name = f.get(("provision_profile",))
    if name is None or name == "":
        return None
    if not isinstance(name, str) or not PROFILE_NAME.match(name) or name.endswith((".yaml", ".yml")):
        raise f.problem(field, f"field '{field}' must be the name of a bundled profile, not a path "
                               f"(known: {', '.join(profiles.names())}); got {name!r}")
    try:
        profiles.load(str(name))  # read and validated once per profile, however many hosts name it
    except ProfileError as exc:
        raise f.problem(field, f"field '{field}': {exc}") from None
    return str(name)


def _check_profile(f: Fields, profile: str, host_vars: dict) -> Profile:
    """The host's view of its profile (``profiles.for_host``: overrides merged and the result
    validated, site facts against site.schema.json), built once per distinct overrides and site
    facts; an error names the file and line of the field it comes from."""
    try:
        view = profiles.for_host(profile, host_vars, f.name)
        references.validate(view)  # a row the site added must fit its check: named at its file and line here
        return view
    except ProfileError as exc:
        text = str(exc).removeprefix(f"host {f.name}: ")
        if text.startswith("provision_reference_overrides"):
            raise f.problem("provision_reference_overrides", text) from None
        field = next((k for k in SITE_FACTS if text.startswith(k)), next((k for k in SITE_FACTS if k in host_vars),
                                                                          "provision_profile"))
        raise f.problem(field, text) from None


def _check_nvlink_domain(f: Fields, host_vars: dict) -> None:
    """``provision_nvlink_domain`` (templated), where given: a domain name, letters, digits and ``._-`` (it names
    the domain in results and groups the trays of one NVLink domain for its group checks and the IMEX role)."""
    if NVLINK_DOMAIN_VAR not in f.vars:
        return
    value = f.get((NVLINK_DOMAIN_VAR,))[1]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not re.fullmatch(r"[A-Za-z0-9._-]{1,64}",
                                                                                      str(value)):
        raise f.problem(NVLINK_DOMAIN_VAR, f"field '{NVLINK_DOMAIN_VAR}' must be an NVLink domain name (letters, "
                                           f"digits, '.', '_', '-'; at most 64), got {str(value)[:40]!r}")
    host_vars[NVLINK_DOMAIN_VAR] = str(value)


def _check_host_keys(f: Fields) -> None:
    """Ansible's own switches, then what OpenSSH itself would do for this host: ``ssh -G`` with the
    options Ansible passes (and, for sftp and scp, their extra ``-o``/``-F`` options), so that Host and
    Match blocks, Include, the user's and the system's ssh_config all count, as they count for ssh."""
    for name in HOST_KEY_CHECKING:
        field, value = f.get((name,))
        if value is not None and not boolean(value, strict=False):
            raise f.problem(field, f"field '{field}' turns host key checking off; a GPU node's host key is "
                                   "always checked (remove it, and add the node's key to known_hosts)")
    for name in SSH_ARGS:  # written in the inventory: refused even where an earlier value overrides it today
        field, value = f.get((name,))
        found, _ = _weak_ssh(value, files=False) if value is not None else (None, "")
        if found:
            raise f.problem(field, f"field '{field}' turns host key checking off "
                                   f"({found.group(0)}); a GPU node's host key is always checked")
    address = str(f.get(ADDRESS, f.name)[1])
    options = _ssh_options(f)
    runs = [(None, options)] + [(n, options + _config_words(f.get((n,))[1])) for n in SSH_ARGS[3:] if n in f.vars]
    for only, argv in runs:
        weak = _weak_ssh_g(f, argv, address, only)
        if weak:
            _refuse_weak(f, weak, only, address)


def _config_words(value) -> tuple[str, ...]:
    """The ``-o``/``-F`` options among sftp's or scp's extra arguments (the rest are theirs, not ssh's)."""
    words, out = sshargs.split(value), []
    for i, w in enumerate(words):
        if w in ("-o", "-F") and i + 1 < len(words):
            out += [w, words[i + 1]]
        elif w.startswith(("-o", "-F")) and len(w) > 2:
            out.append(w)
    return tuple(out)


def _weak_ssh_g(f: Fields, options, address: str, field: str | None) -> str:
    """What in ``ssh -G``'s answer lets an unknown or changed host key through ('' when nothing)."""
    argv = [SSH, "-G", *options, "--", address]
    try:
        done = external.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30, check=False)
    except (MissingProgramError, subprocess.TimeoutExpired) as exc:
        raise f.problem(field or SSH_ARGS[0],
                        f"cannot ask OpenSSH (ssh -G) whether host keys are checked: {exc}") from None
    if done.returncode != 0:
        return ""  # ssh refuses these options for every connection, and says why when the host is resolved
    got: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        got.setdefault(key.lower(), []).append(value)
    strict = got.get("stricthostkeychecking", ["true"])[0]
    if strict in ("false", "no", "off", "accept-new"):
        return f"StrictHostKeyChecking {strict}"
    if got.get("nohostauthenticationforlocalhost", ["no"])[0] == "yes":
        return "NoHostAuthenticationForLocalhost yes"
    files = [p for line in got.get("userknownhostsfile", []) for p in line.split()]
    if files and all(p in ("none", "/dev/null") for p in files):
        return f"UserKnownHostsFile {' '.join(files)}"
    return ""


def _refuse_weak(f: Fields, weak: str, only: str | None, address: str) -> None:
    """Name the field (and the -F file and line) that sets ``weak``, else say that an ssh_config does."""
    for name in ([only] if only else SSH_ARGS):
        field, value = f.get((name,))
        found, where = _weak_ssh(value) if value is not None else (None, "")
        if found:
            raise f.problem(field, f"field '{field}' turns host key checking off{where} "
                                   f"({found.group(0)}); a GPU node's host key is always checked")
    raise f.problem(only or next((n for n in SSH_ARGS if n in f.vars), "ansible_host"),
                    f"OpenSSH (ssh -G {address}, with this host's ssh options) says {weak}: an ssh_config "
                    "(a -F file, ~/.ssh/config, /etc/ssh/ssh_config, an Include or a Match block) turns host key "
                    "checking off for it; a GPU node's host key is always checked")


def _weak_ssh(value, files: bool = True) -> tuple[re.Match | None, str]:
    """A setting of ``WEAK_SSH`` in ssh arguments, read as the shell words ssh gets (quotes removed:
    a quoted ``'StrictHostKeyChecking'=VALUE`` is the plain option to ssh), or in an ssh_config file
    they name with ``-F`` (any line but comments: the file is given for these hosts). The match and
    where it was found ('' in the arguments, " in FILE line N")."""
    text = str(value)
    try:
        words = sshargs.split(text)
    except ValueError:  # unbalanced quotes: refused on their own when the options are built
        words = []
    unquoted = " ".join(w.replace("'", "").replace('"', "") for w in words)  # ssh's own -o parser unquotes too
    weak = WEAK_SSH.search(text) or WEAK_SSH.search(" ".join(words)) or WEAK_SSH.search(unquoted)
    if weak or not files:
        return weak, ""
    named = [w[2:] or (words[i + 1] if i + 1 < len(words) else "") for i, w in enumerate(words) if w.startswith("-F")]
    for name in filter(None, named):
        try:
            lines = Path(name).expanduser().read_text(errors="replace").splitlines()
        except OSError:
            continue  # OpenSSH says so when the host is resolved (ssh -G), naming the file
        for number, line in enumerate(lines, 1):
            weak = None if line.lstrip().startswith("#") else WEAK_SSH.search(line)
            if weak:
                return weak, f" in {name} line {number}"
    return None, ""


def _check_names(ansible_host) -> None:
    """Host and group names: ``SAFE_NAME`` (names become file names; Ansible itself accepts '-' and '.'
    in group names with a warning, and refuses little else in YAML)."""
    name = ansible_host.name
    rule = "letters, digits, '.', '_', '-', not starting with '.' or '-', at most 200 characters"
    if not SAFE_NAME.match(name):
        raise Problem(_defined_in(ansible_host), ascii(name), "inventory_hostname",
                      f"host name {ascii(name)} is not a safe name ({rule}): it names the host's files")
    for group in ansible_host.get_groups():
        if not SAFE_NAME.match(group.name):
            raise Problem(_defined_in(ansible_host), name, "group_names",
                          f"group name {ascii(group.name)} is not a safe name ({rule})")


def _check_timeouts(f: Fields, timeouts) -> None:
    """``provision_check_timeouts``: check id (snake_case) -> seconds, a positive finite number."""
    field = "provision_check_timeouts"
    if timeouts is None:
        return
    if not isinstance(timeouts, dict):
        raise f.problem(field, f"field '{field}' must map check ids to seconds, got {type(timeouts).__name__}")
    for check, seconds in timeouts.items():
        if not CHECK_ID.match(check):
            raise f.problem(field, f"field '{field}': {ascii(check)} is not a check id (snake_case)")
        try:
            value = float(seconds) if not isinstance(seconds, bool) else math.nan
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise f.problem(field, f"field '{field}': {check}: {seconds!r} is not a positive finite "
                                   "number of seconds")
        known = _known_checks(os.environ.get(checks.CHECK_PATH_ENV, ""))
        if check not in known:
            raise f.problem(field, f"field '{field}': unknown check {check}{closest(check, known)}")


def closest(name: str, known: tuple[str, ...]) -> str:
    """' (did you mean X?)' when difflib finds a close known name, else ' (known: ...)'."""
    near = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {near[0]}?)" if near else f" (known: {', '.join(known)})"


_KNOWN: dict[str, tuple[str, ...]] = {}


def _known_checks(check_path: str) -> tuple[str, ...]:
    """The registry's ids, read once per ``PROVISION_CHECK_PATH`` (not once per host)."""
    if check_path not in _KNOWN:
        _KNOWN[check_path] = tuple(checks.ids())
    return _KNOWN[check_path]


def _check_connection(f: Fields) -> None:
    field, connection = f.get(("ansible_connection",))
    if connection is None or connection in CONNECTIONS:
        return
    why = {"local": "would run the roles, reboot handler included, on this machine, not on the node",
           "paramiko": "paramiko's host key policy is not OpenSSH's strict checking against known_hosts"}
    kind = "paramiko" if "paramiko" in str(connection) else str(connection).rsplit(".", 1)[-1]
    raise f.problem(field, f"field '{field}' is {str(connection)!r}: "
                           f"{why.get(kind, 'GPU nodes are installed and burned in over OpenSSH only')} "
                           "(remove it, or set it to ssh)")


def _defined_in(host) -> str:
    """The inventory source that added ``host``, as Ansible recorded it."""
    return str(host.vars.get("inventory_file") or "?")
