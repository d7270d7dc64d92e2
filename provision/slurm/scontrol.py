"""Slurm's ``scontrol`` on this machine, through subprocess with argv lists (never a shell) and timeouts.

Which Slurm it talks to is scontrol's business: ``SLURM_CONF`` (default ``/etc/slurm/slurm.conf``) or
configless DNS records, as for any Slurm client. The caller needs Slurm's operator rights (root,
``SlurmUser`` or an account with ``AdminLevel=Operator``) to update nodes.

Sources: scontrol(1), https://slurm.schedmd.com/scontrol.html (``show node -o``: one line per node of
``Key=value`` fields, ``Reason=`` last and followed by `` [user@time]``; ``update NodeName= State=DRAIN
Reason=``, ``State=RESUME``); node states in slurm.conf(5), https://slurm.schedmd.com/slurm.conf.html
and sinfo(1), https://slurm.schedmd.com/sinfo.html (``NODE STATE CODES``). Output read from
slurm-wlm 22.05.8 (Debian 12); ``tests/data/slurm/`` holds the captures the parser is tested on.
"""
from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

from provision import external
from provision.errors import CommandError

# Bound on one scontrol call. Measured with 22.05.8 here: 0.04 s for an answer, 9 s to give up on a
# slurmctld that does not listen (MessageTimeout's default is 10 s); a missing slurm.conf makes it
# retry for 60 s, which this bound cuts short.
TIMEOUT_S = 30.0
# State words (base state or '+' flags, as `scontrol show node` prints them; sinfo's long names too)
# under which a node is out of service by someone's decision: an operator's, Slurm's, or this tool's.
HELD = frozenset({"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING"})
_NAME = re.compile(r"(?:^|\s)NodeName=(\S+)")
_STATE = re.compile(r"\sState=(\S+)")
# The reason runs to its " [user@time]" stamp (or the line's end: later versions may print fields after it).
# The stamp's time is when the reason was set (slurmctld's local time, ISO 8601 without a zone).
_REASON = re.compile(r"\sReason=(.*?)(?: \[[^\]\s]*@([0-9T:-]+)\]|$)")


class SlurmError(CommandError):
    """scontrol could not be run, timed out, or refused (its message, one line)."""


@dataclass(frozen=True)
class NodeState:
    """One Slurm node as ``scontrol show node -o`` prints it: ``state`` such as ``IDLE+DRAIN``,
    ``reason`` without its `` [user@time]`` suffix ('' when none), ``since`` that suffix's time: when the
    reason was set ('' when none was printed)."""

    name: str
    state: str
    reason: str = ""
    since: str = ""

    @property
    def words(self) -> frozenset[str]:
        """The base state and flags, upper case: {'IDLE', 'DRAIN'} for ``IDLE+DRAIN``."""
        return frozenset(w.strip("*~#!%$@^-").upper() for w in self.state.split("+") if w)

    def held(self) -> bool:
        """Down, drained, draining or failed: out of service by someone's decision."""
        return bool(self.words & HELD)


def parse_show_node(text: str) -> dict[str, NodeState]:
    """NodeName -> NodeState from ``scontrol show node -o`` output (one node a line). Lines without
    ``NodeName=`` (``Node x not found``, blank) are ignored. Raises ValueError naming a node whose line
    has no ``State=``: deciding on a guessed state is not safe."""
    nodes = {}
    for line in text.splitlines():
        name = _NAME.search(line)
        if not name:
            continue
        state = _STATE.search(line)
        if not state:
            raise ValueError(f"scontrol show node: no State= for node {name.group(1)}")
        reason = _REASON.search(line)
        nodes[name.group(1)] = NodeState(name.group(1), state.group(1), reason.group(1).strip() if reason else "",
                                         (reason.group(2) or "") if reason else "")
    return nodes


Runner = Callable[..., subprocess.CompletedProcess]


class Scontrol:
    """``scontrol`` (``command``: its argv prefix) with a timeout per call; ``run`` is subprocess.run
    (a test passes a fake)."""

    def __init__(self, command: tuple[str, ...] = ("scontrol",), timeout_s: float = TIMEOUT_S,
                 run: Runner = subprocess.run, deadline: float | None = None):
        self.command, self.timeout_s, self._run, self.deadline = command, timeout_s, run, deadline

    def call(self, *args: str) -> str:
        """Run scontrol with ``args``; return its standard output. Raises SlurmError (one line) when it
        cannot start, times out or exits non-zero, or when ``deadline`` (time.monotonic()) has passed: each call's
        timeout is the time left until it, at most ``timeout_s``."""
        argv = [*self.command, *args]
        timeout = self.timeout_s
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout < 0.5:
                raise SlurmError(f"{' '.join(argv[:3])}: not run: no time left of the call's budget")
        try:
            proc = self._run(argv, capture_output=True, text=True, errors="replace", timeout=timeout, check=False,
                             stdin=subprocess.DEVNULL)  # an operator's reason in Latin-1 is read, not a crash
        except FileNotFoundError:
            raise SlurmError(str(external.missing(argv[0]))) from None
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{' '.join(argv[:3])} timed out after {timeout:g} s") from None
        except OSError as exc:
            raise SlurmError(f"{argv[0]}: {exc.strerror or exc}") from None
        if proc.returncode != 0:
            said = " ".join((proc.stderr or proc.stdout or "").split())[:300] or f"exit status {proc.returncode}"
            raise SlurmError(f"{' '.join(argv[:3])}: {said}")
        return proc.stdout

    def show(self, node: str | None = None) -> dict[str, NodeState]:
        """Every node (or ``node`` alone; {} when Slurm does not know it). Raises SlurmError."""
        try:
            text = self.call("show", "node", "-o", *([node] if node else []))
        except SlurmError as exc:
            if node and f"Node {node} not found" in str(exc):
                return {}
            raise
        try:
            return parse_show_node(text)
        except ValueError as exc:
            raise SlurmError(str(exc)) from None

    def drain(self, node: str, reason: str) -> None:
        """``scontrol update NodeName=<node> State=DRAIN Reason=<reason>``: one argv element each, so
        no character of the reason reaches a shell. Raises SlurmError."""
        self.call("update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")

    def resume(self, node: str) -> None:
        """``scontrol update NodeName=<node> State=RESUME``. Raises SlurmError."""
        self.call("update", f"NodeName={node}", "State=RESUME")
