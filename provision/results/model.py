"""The results model: what a run found, typed, with the schema version of report.json.

A run (``Run``) holds per host what the controller knew of it (``HostRecord``: hardware
profile, site overrides, OS target read from the node), its install (``HostInstall``:
per role tasks, changes and failed tasks) and the burn-in's ``CheckResult`` rows. A
result has a ``scope``: node (one host), pair (a server and a client host), group (one
command across several hosts, such as an MPI job) or cluster (every host), and the hosts
it covered. Its ``findings`` are judged facts, each against a ``Reference`` (ReFrame's
semantics: bounds are signed fractions of the value) or an expected value.

``Run.to_dict()`` is report.json; its JSON Schema is ``report.schema.json`` beside this
module (``SCHEMA_VERSION``). ``Run.from_dict`` also reads the version-less reports written
before the model existed (``burnin: {host: [rows]}``, ``profiles: {host: {...}}``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from provision.results.outcome import FABRIC, Outcome  # noqa: F401 (FABRIC re-exported)

if TYPE_CHECKING:
    from provision.results.coverage import Component, RunOutcome

SCHEMA_VERSION = 3  # 1: the version-less report.json before this model; 2: before power_actions (BMC)
READABLE_VERSIONS = (1, 2, 3)  # 2 reads as 3 with no power actions


# Outcome and FABRIC live in the leaf module outcome.py (coverage.py imports them without importing this one).


class Scope(str, enum.Enum):
    """Which hosts one job of a check covers."""

    NODE = "node"
    PAIR = "pair"
    GROUP = "group"
    CLUSTER = "cluster"


@dataclass(frozen=True)
class Reference:
    """One threshold: ``value`` in ``unit``; bounds are fractions (-0.05 = 5% below value),
    None where unbounded; ``params`` the test parameters it holds for; ``source`` where the
    figure comes from; ``estimate`` True where no public measurement or document gives the figure and
    ``source`` says how it was reasoned instead (a finding judged against it says so)."""

    value: float
    lower: float | None
    upper: float | None
    unit: str
    source: str
    params: dict = field(default_factory=dict)
    estimate: bool = False

    def bounds(self) -> tuple[float | None, float | None]:
        """Absolute (low, high) limits in ``unit``; None where unbounded."""
        low = None if self.lower is None else self.value * (1 + self.lower)
        high = None if self.upper is None else self.value * (1 + self.upper)
        return low, high

    def to_dict(self) -> dict:
        low, high = self.bounds()
        row = {"reference": self.value, "lower_bound": low, "upper_bound": high, "params": self.params,
               "source": self.source}
        if self.estimate:  # only where true: a report of measured references reads as before
            row["estimate"] = True
        return row


@dataclass(frozen=True)
class Finding:
    """One judged fact about one device. ``ok`` False makes the check fail.

    ``value`` is in ``unit``; ``reference`` is the profile row it was judged against (None for
    equality facts such as a model name); ``expected`` is the value a fact should have.
    ``fault`` is a code of the fault catalogue (``provision/checks/faults.yaml``) and
    ``action`` what the operator should do when not ok. ``host`` names the host the device is
    in when a result covers several hosts ('' for node scope).
    """

    device: str
    metric: str
    value: object
    ok: bool
    unit: str = ""
    reference: Reference | None = None
    expected: object = None
    fault: str = ""
    action: str = ""
    detail: str = ""
    host: str = ""

    def to_dict(self) -> dict:
        row: dict[str, Any] = {"device": self.device, "metric": self.metric, "value": self.value,
                               "unit": self.unit, "ok": self.ok}
        if self.host:
            row["host"] = self.host
        if self.reference is not None:
            row.update(self.reference.to_dict())
        elif self.expected is not None:
            row["expected"] = self.expected
        if not self.ok:
            row.update(fault=self.fault, action=self.action)
        if self.detail:
            row["detail"] = self.detail
        return row

    def describe(self) -> str:
        """One line: device, metric, measured value against what it should be, fault and action."""
        unit = f" {self.unit}" if self.unit else ""
        where = f"{self.host} " if self.host else ""
        if self.reference is not None:
            low, high = self.reference.bounds()
            params = ", ".join(f"{k}={v}" for k, v in self.reference.params.items())
            text = (f"{where}{self.device}: {self.metric} = {number(self.value)}{unit}, reference "
                    f"{number(self.reference.value)}{unit} bounds [{number(low)}, {number(high)}]{unit}"
                    + (f" ({params})" if params else "") + (f", {ESTIMATE}" if self.reference.estimate else ""))
        elif self.expected is not None:
            text = f"{where}{self.device}: {self.metric} = {self.value!r}{unit}, expected {self.expected!r}{unit}"
        else:
            text = f"{where}{self.device}: {self.metric} = {self.value!r}{unit}"
        if self.detail:
            text += f"; {self.detail}"
        if not self.ok and self.fault:
            text += f" [{self.fault}: {self.action}]"
        return text


ESTIMATE = "judged against an estimate"  # what a finding whose reference is an estimate says


def number(v: object) -> str:
    """A figure as messages print it: '-' for None, floats to at most two decimals."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return str(v)


@dataclass(frozen=True)
class RawOutput:
    """One saved output of a step: ``key`` the step's key ('' for a check's only step),
    ``host`` the host that printed it, ``path`` relative to the run folder; ``stderr`` the
    path of its standard error when it printed any; ``server`` the path of its server's output
    (a perftest server beside its client)."""

    key: str
    host: str
    path: str
    stderr: str = ""
    server: str = ""

    def to_dict(self) -> dict:
        row = {"key": self.key, "host": self.host, "path": self.path}
        if self.stderr:
            row["stderr"] = self.stderr
        if self.server:
            row["server"] = self.server
        return row


@dataclass
class CheckResult:
    """The verdict of one check on one job's hosts (one host for node scope).

    ``run_error`` True: the tool could not run (exit status, timeout, connection), a verdict
    a re-evaluation keeps. ``duration_s`` wall seconds of the job; ``raw`` its saved outputs.
    ``evidence`` True: a test of the cluster procedure (a pair or group test) whose failure
    blames no host by itself; the ``localize`` result that weighs it names the suspects.
    """

    check: str
    hosts: tuple[str, ...]
    outcome: Outcome
    message: str
    scope: Scope = Scope.NODE
    duration_s: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    raw: list[RawOutput] = field(default_factory=list)
    run_error: bool = False
    evidence: bool = False
    attempt: int = 1  # which attempt of a resumed run gave it (``provision burnin --resume``); 1: the first

    @property
    def host(self) -> str:
        """The host of a node-scope result; a multi-host result's hosts joined with '+'."""
        return "+".join(self.hosts)

    def blamed(self) -> tuple[str, ...]:
        """The hosts this result counts against: for a multi-host result that failed, the hosts
        its failing findings name (all its hosts when none is named)."""
        if self.scope is Scope.NODE or self.outcome is not Outcome.FAIL:
            return self.hosts
        if self.evidence:
            return ()
        named = tuple(dict.fromkeys(f.host for f in self.findings if not f.ok and f.host))
        return named or self.hosts

    def to_dict(self) -> dict:
        return {"check": self.check, "scope": self.scope.value, "hosts": list(self.hosts),
                "outcome": self.outcome.value, "message": self.message, "duration_s": self.duration_s,
                "findings": [f.to_dict() for f in self.findings], "raw": [r.to_dict() for r in self.raw],
                "run_error": self.run_error, **({"evidence": True} if self.evidence else {}),
                **({"attempt": self.attempt} if self.attempt > 1 else {})}


@dataclass(frozen=True)
class FailedTask:
    task: str
    msg: str


@dataclass
class RoleResult:
    """One role's tasks on one host: how many ran, changed, and the ones that failed."""

    tasks: int = 0
    changed: int = 0
    failed: list[FailedTask] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"tasks": self.tasks, "changed": self.changed,
                "failed": [{"task": f.task, "msg": f.msg} for f in self.failed]}


@dataclass
class HostInstall:
    """A host's install: ``status`` ok, failed, unreachable or reboot_pending (the driver waits for
    a reboot the inventory opted out of); total changed tasks; per role rows."""

    status: str
    changed: int = 0
    roles: dict[str, RoleResult] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"status": self.status, "changed": self.changed,
                "roles": {name: r.to_dict() for name, r in self.roles.items()}}


@dataclass
class HostRecord:
    """What the run knew of a host: its hardware profile's name, the inventory variables judging
    reads (``JUDGED_VARS``: site reference overrides, site facts such as the storage bond), its
    /etc/os-release fields and the NVIDIA repository folder they map to (``os_target``, None
    until read or for another OS). A re-evaluation judges from these alone."""

    profile: str | None
    vars: dict = field(default_factory=dict)
    os_target: str | None = None
    os_release: dict = field(default_factory=dict)
    kernel: str | None = None  # `uname -r` on the node, None until read (reports before it lack it)

    def to_dict(self) -> dict:
        return {"profile": self.profile, "vars": self.vars, "os_target": self.os_target,
                "os_release": self.os_release,
                **({"kernel": self.kernel} if self.kernel is not None else {})}


# The BMC's: which steps a check asked of it (firmware's inventory), never its credentials; the Xid window
# ``provision health`` judged by (provision.checks.xid.window).
JUDGED_VARS = ("provision_reference_overrides", "provision_storage", "provision_check_timeouts",
               "provision_regression", "provision_bmc_address", "provision_bmc_protocol", "provision_xid_after_s")
REGRESSION = "regression"  # the check id of provision.history.regress's results (judged against history)


@dataclass
class Run:
    """One run: the canonical content of report.json (``to_dict``)."""

    run_id: str
    inventory: str = ""
    phases: list[str] = field(default_factory=list)
    started: str = ""
    finished: str = ""
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    install: dict[str, HostInstall] = field(default_factory=dict)
    results: list[CheckResult] = field(default_factory=list)
    install_wall_s: float | None = None
    burnin_wall_s: float | None = None
    install_artifacts: str | None = None
    evaluated: dict | None = None
    cluster: dict | None = None  # the cluster procedure: per host group its fabric, rounds and suspects
    # When each attempt of a resumed run started (``provision burnin --resume``); None for a run never resumed
    attempts: list[str] | None = None
    # The power actions the run took through the nodes' BMCs (``burnin --recover``: a hung node's power cycle), in
    # the order taken: host, action, outcome (done, not_carried_out, failed, skipped), the boot ids before and after
    # (read over SSH), seconds, the BMC and one line of detail; None when it took none
    power_actions: list[dict] | None = None

    def results_of(self, host: str) -> list[CheckResult]:
        """Every result that covered ``host``, in run order (one pass; ``by_host`` for every host at once)."""
        return [r for r in self.results if host in r.hosts]

    def by_host(self) -> dict[str, list[CheckResult]]:
        """{host: every result that covered it, in run order}, in one pass over the results."""
        out: dict[str, list[CheckResult]] = {}
        for r in self.results:
            for host in r.hosts:
                out.setdefault(host, []).append(r)
        return out

    def verdicts(self) -> dict[str, str]:
        """Host -> pass|fail|error: error if its install did not end ok or a result covering it
        errored, else fail if a result blames it, else pass."""
        out = {}
        covering = self.by_host()
        names = sorted(set(self.hosts) | set(self.install) | set(covering))
        for host in names:
            install = self.install.get(host)
            mine = [r for r in covering.get(host, ()) if not r.evidence]  # evidence is weighed by localize
            if (install and install.status != "ok") or any(r.outcome is Outcome.ERROR for r in mine):
                out[host] = "error"
            elif any(r.outcome is Outcome.FAIL and host in r.blamed() for r in mine):
                out[host] = "fail"
            else:
                out[host] = "pass"
        return out

    def outcome(self) -> RunOutcome:
        """The run's own verdict (``provision.results.coverage``): fail, error, untested or pass, with
        its reasons; what the exit status, the console's last line and Prometheus' run gauges read."""
        from provision.results import coverage
        return coverage.outcome(self)

    def passed(self) -> bool:
        """Whether the run is a full pass: every host passed, no fabric component failed, no coverage gap."""
        return self.outcome().outcome is Outcome.PASS

    def fabric_components(self) -> list[Component]:
        """Every leaf-spine cable and its two switch ports the run judged or could not test
        (``provision.results.coverage.components``)."""
        from provision.results import coverage
        return coverage.components(self)

    def left_out(self) -> dict[str, str]:
        """{host: why} for every host the cluster procedure left out of its tests (failed a node check,
        alone in its group, ...); {} when no cluster test was asked."""
        from provision.results import coverage
        return coverage.left_out(self)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "run_id": self.run_id, "inventory": self.inventory,
            "phases": self.phases, "started": self.started, "finished": self.finished,
            "verdicts": self.verdicts(), "outcome": self.outcome().to_dict(),
            "hosts": {h: r.to_dict() for h, r in self.hosts.items()},
            "install": {h: i.to_dict() for h, i in self.install.items()},
            "results": [r.to_dict() for r in self.results],
        }
        for key in ("install_wall_s", "burnin_wall_s", "install_artifacts", "evaluated", "cluster", "attempts",
                    "power_actions"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out
