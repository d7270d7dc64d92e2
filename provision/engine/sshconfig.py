"""Where and how OpenSSH would connect to a host, asked of OpenSSH itself: ``ssh -G``.

``resolve(host) -> Target`` runs ``ssh -G <options> <address>`` with the options Ansible's ssh
connection passes (``Host.ssh_options``, built by ``provision.inventory.sshargs``) and reads
what OpenSSH would use: HostName, Port, User, IdentityFile(s), CertificateFile(s),
UserKnownHostsFile(s) then GlobalKnownHostsFile(s), HostKeyAlias, IdentityAgent,
IdentitiesOnly, ProxyCommand and ProxyJump, and what decides host trust besides known_hosts
(``_trust``: RevokedHostKeys, KnownHostsCommand, CASignatureAlgorithms, HostKeyAlgorithms,
RequiredRSASize; settings that would trust more are kept to be named in refusals;
CanonicalizeHostname and CheckHostIP on a host name are refused naming the option; README "How
nodes are reached").
ssh_config files are found and matched by OpenSSH (``-F FILE``, else ``~/.ssh/config`` of the
running user and ``/etc/ssh/ssh_config``; Host and Match blocks; first value wins), so no rule
here is ours. ``ssh -G`` prints IdentityFile, CertificateFile, IdentityAgent, ProxyCommand and
RevokedHostKeys unexpanded: their ``~`` and ``%`` tokens are expanded here as ssh_config(5)
TOKENS says.

A ProxyJump ``a,b`` is resolved as OpenSSH's ssh.c builds its ProxyCommand for it: the last hop
``b`` is ``ssh [-l user] [-p port] [-J a] [-F FILE] b`` (the ``-F`` of the node's own command
line, no other option), recursively, so each hop gets its own ssh_config lookup and its own
ProxyJump. Each distinct question is asked once per process (1,250 nodes behind one bastion
resolve the bastion once). ``provision_known_hosts_file``, when set, is checked after the files
OpenSSH names (the simulated rack also passes it to Ansible as UserKnownHostsFile).
Raises CommandError naming the host.
"""
from __future__ import annotations

import functools
import getpass
import os
import re
import shlex
import socket
import subprocess
import threading
from dataclasses import dataclass

from provision import external
from provision.engine import knownhosts
from provision.errors import CommandError, MissingProgramError

SSH = "ssh"
SSH_G_TIMEOUT_S = 30.0  # ssh -G reads files only (and runs Match exec commands)


@dataclass(frozen=True)
class Target:
    """One SSH endpoint as OpenSSH resolves it: ``name`` is the host argument given to ssh
    (inventory address, alias or jump host spec), ``via`` the last jump host before it (its own
    ``via`` the one before), ``identity_agent`` the agent's socket path (None: no agent)."""

    name: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    certificate_files: tuple[str, ...]
    known_hosts_files: tuple[str, ...]
    host_key_alias: str | None
    identity_agent: str | None
    identities_only: bool
    proxy_command: str | None
    via: Target | None
    trust: knownhosts.Policy = knownhosts.STRICT
    host_key_algorithms: tuple[str, ...] | None = None  # set in ssh_config; None: OpenSSH's default list

    @property
    def label(self) -> str:
        """``name (hostname:port)``, as refusals name a hop."""
        return f"{self.name} ({self.hostname}:{self.port})"

    @property
    def key_name(self) -> str:
        """The name its host key is looked up under in known_hosts (HostKeyAlias, else hostname;
        ``[host]:port`` off port 22, per sshd(8) SSH_KNOWN_HOSTS FILE FORMAT)."""
        if self.host_key_alias:
            return self.host_key_alias
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"

    @property
    def unported_name(self) -> str | None:
        """The name OpenSSH looks the key up under again when ``[host]:port`` knows none (no HostKeyAlias)."""
        return None if self.host_key_alias or self.port == 22 else self.hostname

    @property
    def principal(self) -> str:
        """The name a host certificate must list (OpenSSH: HostKeyAlias, else the hostname)."""
        return self.host_key_alias or self.hostname

    def chain(self) -> list[Target]:
        """Its jump hosts, the first one reached first."""
        hops: list[Target] = []
        hop = self.via
        while hop is not None:
            hops.insert(0, hop)
            hop = hop.via
        return hops


MAX_HOPS = 16  # jump hosts in one chain; more is a ProxyJump loop in ssh_config (see _jump)
_HOPS = threading.local()  # the hops being resolved by this thread, outermost first

def resolve(host) -> Target:
    """What OpenSSH would use to reach ``host`` (a ``provision.inventory.Host``). Raises CommandError."""
    options = host.ssh_options or _plain_options(host)
    extra = (os.path.abspath(os.path.expanduser(host.known_hosts_file)),) if host.known_hosts_file else ()
    try:
        return _resolve(tuple(options), host.address, extra)
    except CommandError as exc:
        raise CommandError(f"host {host.name}: {exc}") from None


def _plain_options(host) -> list[str]:
    """A Host built without inventory options (tests, tools): its port, user and key as Ansible passes them."""
    key = ["-o", f'IdentityFile="{host.key_file}"'] if host.key_file else []
    return ["-o", f"Port={host.port}", *key, "-o", f'User="{host.user}"']


@functools.lru_cache(maxsize=8192)
def _resolve(options: tuple[str, ...], name: str, extra_known: tuple[str, ...]) -> Target:
    values = ask(options, name)
    first = {k: v[0] for k, v in values.items()}
    hostname, port, user = first["hostname"], int(first["port"]), first["user"]
    tokens = {"%": "%", "d": os.path.expanduser("~"), "u": getpass.getuser(), "h": hostname, "p": str(port),
              "r": user, "n": name, "l": socket.gethostname().split(".")[0], "L": socket.gethostname(),
              "i": str(os.getuid()), "k": first.get("hostkeyalias") or name}
    known = tuple(_expand(f, tokens) for k in ("userknownhostsfile", "globalknownhostsfile")
                  for line in values.get(k, ()) for f in line.split() if f != "none")
    jump, command = first.get("proxyjump"), first.get("proxycommand")
    proxied = bool(jump and jump != "none") or bool(command and command != "none")
    trust, algorithms = _trust(first, hostname, proxied, tokens)
    return Target(
        name=name, hostname=hostname, port=port, user=user,
        identity_files=tuple(_expand(f, tokens) for f in values.get("identityfile", ())),
        certificate_files=tuple(_expand(f, tokens) for f in values.get("certificatefile", ())),
        known_hosts_files=known + tuple(f for f in extra_known if f not in known),
        host_key_alias=first.get("hostkeyalias"),
        identity_agent=_agent(first.get("identityagent"), tokens),
        identities_only=first.get("identitiesonly") == "yes",
        proxy_command=_expand(command, tokens) if command and command != "none" else None,
        via=_jump(jump, options, extra_known) if jump and jump != "none" else None,
        trust=trust, host_key_algorithms=algorithms)


def _trust(first: dict[str, str], hostname: str, proxied: bool, tokens: dict[str, str]):
    """(knownhosts.Policy, HostKeyAlgorithms or None) from what ``ssh -G`` printed. Raises CommandError
    naming an option that decides trust and that the burn-in does not follow (README "How nodes are reached")."""
    def refuse(option: str, why: str):
        raise CommandError(f"{option} {first.get(option.lower())} is not supported by the burn-in's SSH connection: "
                           f"{why}")

    command = first.get("knownhostscommand", "none")
    if first.get("canonicalizehostname", "false") not in ("false", "no"):
        refuse("CanonicalizeHostname", "it changes the name host keys are looked up under by DNS; give full names")
    if first.get("checkhostip") == "yes" and not proxied and not _is_address(hostname):
        refuse("CheckHostIP", "the burn-in checks the key under the host's name only; set CheckHostIP no")
    lenient = [f"{option} {first[option.lower()]}" for option, weak in _LENIENT if first.get(option.lower()) in weak]
    revoked = first.get("revokedhostkeys")
    policy = knownhosts.Policy(
        revoked_host_keys=_expand(revoked, tokens) if revoked and revoked != "none" else None,
        ca_signature_algorithms=tuple(first["casignaturealgorithms"].split(","))
        if first.get("casignaturealgorithms") else None,
        required_rsa_size=int(first.get("requiredrsasize", 1024)), lenient=tuple(lenient),
        known_hosts_command=tuple(shlex.split(command)) if command != "none" else (),
        tokens=tuple(sorted(tokens.items())) if command != "none" else ())
    algorithms = first.get("hostkeyalgorithms")
    return policy, (tuple(algorithms.split(",")) if algorithms and algorithms != _default_algorithms() else None)


# Settings with which OpenSSH trusts more than known_hosts (unknown keys, DNS, localhost): not followed.
_LENIENT = (("StrictHostKeyChecking", ("false", "no", "off", "accept-new")),
            ("VerifyHostKeyDNS", ("true", "yes", "ask")),
            ("NoHostAuthenticationForLocalhost", ("true", "yes")))


@functools.cache
def _default_algorithms() -> str:
    """OpenSSH's own HostKeyAlgorithms (no ssh_config read): a list equal to it is ordered by known_hosts,
    as OpenSSH orders its default list; one set in ssh_config is used in its own order."""
    return ask(("-F", "/dev/null"), "default.invalid").get("hostkeyalgorithms", [""])[0]


def _is_address(name: str) -> bool:
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in name else socket.AF_INET, name)
    except OSError:
        return False
    return True


def ask(options: tuple[str, ...] | list[str], name: str) -> dict[str, list[str]]:
    """``ssh -G`` as {option (lowercase): [values, in order]}. Raises CommandError."""
    argv = [SSH, "-G", *options, "--", name]
    try:
        done = external.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                            timeout=SSH_G_TIMEOUT_S, check=False)
    except MissingProgramError as exc:  # every host fails alike: a one-line error naming the package
        raise CommandError(str(exc)) from None
    except subprocess.TimeoutExpired:
        raise CommandError(f"ssh -G {name}: no answer in {SSH_G_TIMEOUT_S:.0f} s (a Match exec that hangs?)") from None
    if done.returncode != 0:
        said = "; ".join(s.strip() for s in done.stderr.splitlines() if "Pseudo-terminal" not in s)
        raise CommandError(f"OpenSSH cannot resolve {name} with {' '.join(options) or 'no options'}: "
                           f"{said[:400] or 'ssh -G failed'}")
    values: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        values.setdefault(key.lower(), []).append(value)
    return values


def _jump(spec: str, options: tuple[str, ...], extra_known: tuple[str, ...]) -> Target:
    """The last hop of a ProxyJump list, resolved as ssh.c resolves it (see the module's docstring).
    Raises CommandError for a chain of more than ``MAX_HOPS`` hops: ssh_config blocks whose ProxyJumps
    lead back to themselves (A -> B -> A), which OpenSSH itself would follow until it runs out of processes."""
    *before, last = spec.split(",")
    user, host, port = parse_hop(last)
    config = config_file(options)
    argv = [*(["-l", user] if user else []), *(["-p", port] if port else []),
            *(["-J", ",".join(before)] if before else []), *(["-F", config] if config else [])]
    chain = _HOPS.__dict__.setdefault("chain", [])
    if len(chain) >= MAX_HOPS:
        raise CommandError(f"ProxyJump loop or a chain of more than {MAX_HOPS} hops: "
                           f"{' -> '.join(chain[:6])}{' -> ...' if len(chain) > 6 else ''}")
    chain.append(last.strip())
    try:
        return _resolve(tuple(argv), host, extra_known)
    finally:
        chain.pop()


def parse_hop(spec: str) -> tuple[str | None, str, str | None]:
    """``[user@]host[:port]`` or ``ssh://[user@]host[:port]`` (ssh(1) -J) as (user, host, port)."""
    spec = spec.strip().removeprefix("ssh://")
    user, _, rest = spec.rpartition("@")
    match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:]+)(?::(\d+))?", rest)
    if not match:
        raise CommandError(f"ProxyJump {spec!r} is not [user@]host[:port]")
    host, port = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    return user or None, host, port


def config_file(options: tuple[str, ...] | list[str]) -> str | None:
    """The ``-F FILE`` among ssh options (the last one, as ssh.c keeps it)."""
    found = None
    for i, arg in enumerate(options):
        if arg == "-F" and i + 1 < len(options):
            found = options[i + 1]
        elif arg.startswith("-F") and len(arg) > 2:
            found = arg[2:]
    return found


def _agent(value: str | None, tokens: dict[str, str]) -> str | None:
    """IdentityAgent (ssh_config(5)): unset or SSH_AUTH_SOCK -> $SSH_AUTH_SOCK; none -> no agent;
    ``$VAR`` -> that variable; else a path."""
    if value is None or value == "SSH_AUTH_SOCK":
        return os.environ.get("SSH_AUTH_SOCK") or None
    if value == "none":
        return None
    if value.startswith("$"):
        return os.environ.get(value[1:]) or None
    return _expand(value, tokens)


def _expand(text: str, tokens: dict[str, str]) -> str:
    """``~`` and the ``%`` tokens of ssh_config(5) TOKENS that name paths and hosts."""
    text = os.path.expanduser(text) if text.startswith("~") else text
    return re.sub(r"%(.)", lambda m: tokens.get(m.group(1), m.group(0)), text)
