"""What a burn-in check is: the declaration each check module makes.

A check module declares ``CHECK = Check(...)``: its id (= module name), the tool it runs,
its ``order`` (lower runs first), its ``scope``, the hardware features it needs, its timeout,
the metrics it reports (name -> unit), the JSON Schema of each reference's ``params`` (metric ->
``{"required": [...], "properties": {...}}``: the test parameters its command is built from,
checked against every profile by ``provision.checks.references``) and three pure functions:
``steps(profile, target) -> list[Step]`` (argv lists, never shell strings; ``target`` is the
``Host`` for node scope, a ``Pair`` or a ``Group`` otherwise), ``parse(text) -> dict`` (one
step's output; raises ParseError) and ``judge(parsed, profile) -> list[Finding]`` (``parsed``
maps step key -> parse result). A multi-host check may declare the ``role`` it plays in the
cluster procedure (``Role``). The engine (``provision.engine``) runs the steps and decides
the outcome in stages (``provision.engine.verdict``).

``sets`` tags the check with the named sets it belongs to (nightly runs: ``quick`` reads the configuration
and the links in minutes; ``deep`` is every check); a profile can only leave a check out (``exclude_checks``).

Order bands: 10-29 diagnostics that name a dead part (a GPU off the bus), 30-49 configuration
(stack, links, topology), 50-79 bandwidth, 80-99 stress; multi-host scopes after node scope.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from provision.errors import ParseError
from provision.results.model import Finding, Outcome, Reference, Scope

__all__ = ["Check", "Finding", "Group", "Outcome", "Pair", "Ready", "Reference", "Role", "Scope", "Step",
           "require_tools"]


@dataclass(frozen=True)
class Ready:
    """When a server step is ready for its client: it printed ``line`` (a substring of its
    output) and, when ``port`` is set, its host has a TCP socket listening on that port."""

    line: str | None = None
    port: int | None = None


@dataclass(frozen=True)
class Step:
    """One command of a check. ``key`` names the device or case it covers ('' for the only step).

    ``server`` is an argv started first and left running while ``argv`` runs (a perftest
    server); ``ready`` says when it is listening. ``on`` and ``server_on`` index the job's
    hosts: which host runs ``argv`` and which runs ``server`` (0 for node scope).
    """

    key: str
    argv: list[str]
    server: list[str] | None = None
    ready: Ready | None = None
    on: int = 0
    server_on: int = 0

    def __post_init__(self) -> None:
        if self.server and self.ready is None:  # a client started after a fixed sleep races its server
            raise ValueError(f"step {self.key!r}: a server step needs `ready` (its listening line or port)")


@dataclass(frozen=True)
class Pair:
    """The two hosts of a pair job: ``server`` is hosts[0], ``client`` hosts[1]."""

    server: Any
    client: Any

    @property
    def hosts(self) -> tuple:
        return (self.server, self.client)


@dataclass(frozen=True)
class Group:
    """The hosts of a group or cluster job; hosts[0] launches the command (mpirun's node)."""

    hosts: tuple


class Role(Enum):
    """The part a multi-host check plays in the fabric-aware cluster procedure (``provision.engine.cluster``),
    which finds its checks by role, never by id, so a site's check with a role joins it like ours.

    ``fabric-discovery`` (cluster scope) reads the fabric on the group's first host: one step per HCA
    (rail), keyed by the HCA's device name, each output parsed to ``ibnetdiscover``'s shape
    (``provision.fabric.discover.planes``). ``pair-evidence`` (pair scope) runs on every pair the schedule
    and the localization choose, ``group-evidence`` (group scope) on every group and probe: their
    findings on a declared metric with a reference are the localizer's ratios (a pair check's per rail,
    a finding's device naming the HCA); they blame no host themselves (``CheckResult.evidence``).
    """

    FABRIC_DISCOVERY = "fabric-discovery"
    PAIR_EVIDENCE = "pair-evidence"
    GROUP_EVIDENCE = "group-evidence"

    @property
    def scope(self) -> Scope:
        """The scope a check playing this role has."""
        return {"fabric-discovery": Scope.CLUSTER, "pair-evidence": Scope.PAIR}.get(self.value, Scope.GROUP)


@dataclass(frozen=True)
class Check:
    id: str
    tool: str
    steps: Callable[[Any, Any], list[Step]]
    parse: Callable[[str], dict]
    judge: Callable[[dict, Any], list[Finding]]
    order: int
    needs: tuple[str, ...] = ()
    scope: Scope = Scope.NODE
    timeout_s: float = 120.0
    metrics: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict] = field(default_factory=dict)
    role: Role | None = None
    sets: tuple[str, ...] = ()  # the named check sets it belongs to (``burnin --check-set quick``)

    def __post_init__(self) -> None:
        if self.role is not None and self.scope is not self.role.scope:  # the procedure runs it as its role's jobs
            raise ValueError(f"check {self.id}: role {self.role.value} needs scope {self.role.scope.value}, "
                             f"not {self.scope.value}")


def require_tools(parsed: dict, expected: dict[str, str]) -> None:
    """Raise ParseError unless each step's output (key -> parse result) is the output of the tool
    ``expected`` names for that step: a multi-step check must not pass on another step's text."""
    for key, result in parsed.items():
        got = (result or {}).get("tool")
        if key not in expected or got != expected[key]:
            want = expected.get(key, "no such step")
            raise ParseError(f"step {key!r}: expected {want} output, got {got or 'nothing'}")
