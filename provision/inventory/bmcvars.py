"""A node's BMC as the inventory names it: ``BmcConfig``, built from the host variables and checked before anything
connects (the inventory's preflight, ``check``, for every host; ``provision.bmc.config`` re-exports it for the
client, which sits above the inventory in the layers).

Variables (per host, group_vars allowed):

- ``provision_bmc_address``: ``HOST``, ``HOST:PORT`` or ``https://HOST[:PORT]`` (Redfish, port 443); for IPMI
  ``HOST[:PORT]`` (UDP 623). Plain ``http://`` is refused: the login would cross the network in clear.
- ``provision_bmc_protocol``: ``redfish`` (default) or ``ipmi``.
- ``provision_bmc_username``: required with an address.
- ``provision_bmc_password_file`` (an absolute path; the password is its first line; the file must not be readable
  by group or others, as OpenSSH asks of a private key) or ``provision_bmc_password_env`` (the NAME of an
  environment variable): exactly one. The password is read when a connection is made (``password()``), never kept
  in the config, so that no repr, JSON, log line or error holds it.
- ``provision_bmc_ca_file``: a PEM bundle the BMC's certificate must chain to (default: the system's trust store).
- ``provision_bmc_system``: the Redfish ComputerSystem Id (default: the first member of /redfish/v1/Systems).
- ``provision_boot_id_path``: the file read over SSH for the node's boot id (default /proc/sys/kernel/random/boot_id).

Errors are ``VarProblem(field, text)``; ``check`` turns the first into a ``Problem`` naming the file, host and field.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
import stat
from dataclasses import dataclass
from urllib.parse import urlsplit

from provision.errors import BmcError

ADDRESS, PROTOCOL, USERNAME = "provision_bmc_address", "provision_bmc_protocol", "provision_bmc_username"
PASSWORD_FILE, PASSWORD_ENV = "provision_bmc_password_file", "provision_bmc_password_env"
CA_FILE, SYSTEM, BOOT_ID_PATH = "provision_bmc_ca_file", "provision_bmc_system", "provision_boot_id_path"
VARIABLES = (ADDRESS, PROTOCOL, USERNAME, PASSWORD_FILE, PASSWORD_ENV, CA_FILE, SYSTEM, BOOT_ID_PATH)
PROTOCOLS = ("redfish", "ipmi")
DEFAULT_PORT = {"redfish": 443, "ipmi": 623}
DEFAULT_BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
MAX_PASSWORD_BYTES = 4096  # a password file is one line; a larger file is not one
# Whether the files the BMC variables name are looked at (``shapes_only``: not on a node that reaches no BMC)
_FILES: contextvars.ContextVar[bool] = contextvars.ContextVar("bmc_files", default=True)
MAX_CA_BYTES = 4 * 2**20  # the system bundle is about 200 KiB
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
_SYSTEM_ID = re.compile(r"[A-Za-z0-9._-]{1,64}\Z")
_PATH = re.compile(r"/[^\x00-\x1f\x7f]{0,4095}\Z")


class VarProblem(ValueError):
    """One bad BMC variable: ``field`` and one line ``text`` (the inventory adds file and host)."""

    def __init__(self, field: str, text: str):
        super().__init__(text)
        self.field, self.text = field, text


@dataclass(frozen=True)
class BmcConfig:
    """One node's BMC: ``host`` the inventory name, ``address`` as the inventory wrote it, ``hostname`` and ``port``
    what is connected to; ``insecure`` true only with ``--insecure-bmc``. Holds no password (``password()``)."""

    host: str
    address: str
    protocol: str
    hostname: str
    port: int
    username: str
    password_file: str | None = None
    password_env: str | None = None
    ca_file: str | None = None
    system: str | None = None
    boot_id_path: str = DEFAULT_BOOT_ID_PATH
    insecure: bool = False

    @property
    def base_url(self) -> str:
        """``https://HOST[:PORT]`` (Redfish); an IPv6 literal in brackets."""
        name = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"https://{name}" + ("" if self.port == 443 else f":{self.port}")

    def fail(self, what: str) -> BmcError:
        """The one-line error of this BMC: "HOST: BMC ADDRESS: what"."""
        return BmcError(f"{self.host}: BMC {self.address}: {what}")

    def password(self) -> str:
        """The password, read now from the file's first line or the environment. Raises BmcError naming the
        file or variable (never the value)."""
        if self.password_env:
            value = os.environ.get(self.password_env, "")
            if not value:
                raise self.fail(f"environment variable {self.password_env} ({PASSWORD_ENV}) is not set or empty")
            return value
        path = str(self.password_file)
        problem = password_file_problem(path)
        if problem:
            raise self.fail(f"{PASSWORD_FILE} {problem}")
        try:
            with open(path, "rb") as handle:
                first = handle.read(MAX_PASSWORD_BYTES).split(b"\n", 1)[0].rstrip(b"\r")
        except OSError as exc:
            raise self.fail(f"{PASSWORD_FILE} {path}: cannot read: {exc.strerror or exc}") from None
        if not first:
            raise self.fail(f"{PASSWORD_FILE} {path}: its first line is empty")
        return first.decode("utf-8", "replace")


@contextlib.contextmanager
def shapes_only():
    """Within it, the BMC variables are checked for their shape alone, not for their files (the password and CA
    files): for an inventory read on a node (``burnin --local``), which reaches no BMC and holds none of the
    controller's files."""
    token = _FILES.set(False)
    try:
        yield
    finally:
        _FILES.reset(token)


def from_vars(host: str, variables: dict, insecure: bool = False) -> BmcConfig | None:
    """The BmcConfig of ``host`` from its (templated) variables; None without ``provision_bmc_address``.
    Raises VarProblem (field, text) for the first bad variable (its files too, outside ``shapes_only``)."""
    address = variables.get(ADDRESS)
    if address in (None, ""):  # group_vars may give every host the account; only an address makes a BMC
        _boot_id_path(variables)
        return None
    protocol = variables.get(PROTOCOL) or "redfish"
    if protocol not in PROTOCOLS:
        raise VarProblem(PROTOCOL, f"field '{PROTOCOL}' must be one of {', '.join(PROTOCOLS)}, got {_shown(protocol)}")
    hostname, port = _address(str(address) if isinstance(address, str) else "", protocol)
    username = variables.get(USERNAME)
    if not isinstance(username, str) or not username.strip() or any(c in username for c in "\r\n\x00"):
        raise VarProblem(USERNAME, f"field '{USERNAME}' is required with {ADDRESS} (the BMC account to log in as)")
    password_file, password_env = _password_source(variables)
    return BmcConfig(host=host, address=str(address), protocol=str(protocol), hostname=hostname, port=port,
                     username=username, password_file=password_file, password_env=password_env,
                     ca_file=_ca_file(variables, protocol), system=_system(variables),
                     boot_id_path=_boot_id_path(variables), insecure=bool(insecure))


def _address(text: str, protocol: str) -> tuple[str, int]:
    """(host name or address, port) of ``provision_bmc_address``. Raises VarProblem."""
    rule = "HOST, HOST:PORT or https://HOST[:PORT]" if protocol == "redfish" else "HOST or HOST:PORT"
    bad = VarProblem(ADDRESS, f"field '{ADDRESS}' must be {rule}, got {_shown(text)}")
    if not text or any(c.isspace() for c in text):
        raise bad
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if protocol != "redfish" or scheme != "https":
            why = "plain http would send the BMC password in clear" if scheme == "http" else rule
            raise VarProblem(ADDRESS, f"field '{ADDRESS}' must be {rule} ({why}), got {_shown(text)}")
    try:
        parts = urlsplit(text if "://" in text else f"//{text}")
        port = parts.port
    except ValueError:
        raise bad from None
    if parts.username or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise bad  # a user or password in the address would end up in logs; a path is not a BMC
    name = parts.hostname or ""
    if not (_HOST.match(name) or (":" in name and re.fullmatch(r"[0-9A-Fa-f:.]+", name))):
        raise bad
    if port is not None and not 1 <= port <= 65535:
        raise bad
    return name, port or DEFAULT_PORT[protocol]


def _password_source(variables: dict) -> tuple[str | None, str | None]:
    file, env = variables.get(PASSWORD_FILE), variables.get(PASSWORD_ENV)
    if file not in (None, "") and env not in (None, ""):
        raise VarProblem(PASSWORD_ENV, f"give one of {PASSWORD_FILE} and {PASSWORD_ENV}, not both")
    if file in (None, "") and env in (None, ""):
        raise VarProblem(PASSWORD_FILE, f"{ADDRESS} needs {PASSWORD_FILE} (a file holding the password) or "
                                        f"{PASSWORD_ENV} (the name of an environment variable holding it)")
    if env not in (None, ""):
        if not isinstance(env, str) or not _ENV_NAME.match(env):
            raise VarProblem(PASSWORD_ENV, f"field '{PASSWORD_ENV}' must be the NAME of an environment variable "
                                           "(letters, digits, '_'), not the password")
        return None, env
    if not isinstance(file, str) or not _PATH.match(file):
        raise VarProblem(PASSWORD_FILE, f"field '{PASSWORD_FILE}' must be an absolute path")
    problem = password_file_problem(file) if _FILES.get() else ""
    if problem:
        raise VarProblem(PASSWORD_FILE, f"field '{PASSWORD_FILE}' {problem}")
    return file, None


def password_file_problem(path: str) -> str:
    """Why ``path`` cannot hold a BMC password ('' when it can): missing, not a regular file, unreadable, or
    readable by group or others (chmod 600 it, as OpenSSH asks of a private key)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"{path}: not a regular file"
    if info.st_mode & 0o077:
        return (f"{path}: readable by group or others (mode {stat.S_IMODE(info.st_mode):04o}); "
                "chmod 600 it (a password file is the owner's only)")
    if not os.access(path, os.R_OK):
        return f"{path}: not readable by this user"
    return ""


def _ca_file(variables: dict, protocol: str) -> str | None:
    value = variables.get(CA_FILE)
    if value in (None, ""):
        return None
    if protocol != "redfish":
        raise VarProblem(CA_FILE, f"field '{CA_FILE}' is for Redfish over HTTPS; IPMI has no certificate")
    if not isinstance(value, str) or not _PATH.match(value):
        raise VarProblem(CA_FILE, f"field '{CA_FILE}' must be an absolute path to a PEM bundle")
    if not _FILES.get():
        return value
    try:
        info = os.stat(value)
        has_pem = _holds_pem(value, info.st_mtime_ns, info.st_size)
    except OSError as exc:
        raise VarProblem(CA_FILE, f"field '{CA_FILE}' {value}: {exc.strerror or exc}") from None
    if not has_pem:
        raise VarProblem(CA_FILE, f"field '{CA_FILE}' {value}: holds no PEM certificate")
    return value


@functools.lru_cache(maxsize=64)
def _holds_pem(path: str, mtime_ns: int, size: int) -> bool:
    """Whether the file holds a PEM certificate; read once per version of the file, not once per host."""
    with open(path, "rb") as handle:
        return b"-----BEGIN CERTIFICATE-----" in handle.read(MAX_CA_BYTES)


def _system(variables: dict) -> str | None:
    value = variables.get(SYSTEM)
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not _SYSTEM_ID.match(value):
        raise VarProblem(SYSTEM, f"field '{SYSTEM}' must be a Redfish ComputerSystem Id (letters, digits, '._-'), "
                                 f"got {_shown(value)}")
    return value


def _boot_id_path(variables: dict) -> str:
    value = variables.get(BOOT_ID_PATH)
    if value in (None, ""):
        return DEFAULT_BOOT_ID_PATH
    if not isinstance(value, str) or not _PATH.match(value):
        raise VarProblem(BOOT_ID_PATH, f"field '{BOOT_ID_PATH}' must be an absolute path, got {_shown(value)}")
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check(f, host_vars: dict) -> None:
    """Raise ``f.problem(field, text)`` (a ``Problem``: file, host, field) for the first bad BMC variable of a host
    that sets any of them. Nothing connects; the password itself is never read here."""
    if not any(name in host_vars for name in VARIABLES):
        return
    try:
        from_vars(f.name, host_vars)
    except VarProblem as exc:
        raise f.problem(exc.field, exc.text) from None
