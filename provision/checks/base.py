"""What a burn-in check is: the declaration each check module makes.

A check module declares ``CHECK = Check(...)``: its id (= module name), the tool it runs, its ``order`` (lower
runs first), two pure functions (below) and three typed parts, each handled by its own stage of the engine:
``Placement`` (where it runs: scope, platform traits, NVLink domain, the checks whose outputs it reads; the
placement stage, ``provision.engine.placement``), ``Budget`` (what it costs and when it is chosen: timeout, expected
time, sets, optional; the selection and each job's timeout) and ``Data`` (what it measures and how that is read and
bounded: metrics, params, default references, hardware peaks, parsers, role; the data stage,
``provision.engine.verdict``). Code two checks share lives in ``provision.checks.common``, never in one of them.

Its ``scope``, the platform traits it needs (``needs``; ``rules`` for a rule
that applies on fewer platforms than its check: ``provision.profiles.PLATFORMS``), its timeout,
the metrics it reports (name -> unit), the JSON Schema of each reference's ``params`` (metric ->
``{"required": [...], "properties": {...}}``: the test parameters its command is built from,
checked against every profile by ``provision.checks.references``), its default reference rows
(``references``: metric -> a row as a profile writes it, with its ``source``; the lowest layer of every profile the
check applies to, under ``site_references.yaml``, the profile's own rows and the inventory's overrides:
``provision.profiles.layers``), the checks whose references it judges against besides its own
(``references_from``: ib_pairs judges by ib_write_bw's row) and two pure functions:

- ``steps(profile, target) -> list[Step]``: argv lists, never shell strings; ``target`` is the
  ``Host`` for node scope, a ``Pair`` or a ``Group`` otherwise. Each step names the parser of
  its output (``Step(key, argv, parser="nvidia-smi-qx")``): a tool name ``provision parse``
  knows (``provision.parsers.PARSERS``), or for a site's check one of its own ``parsers``.
- ``judge(ctx: Context) -> list[Finding]``: ``ctx.parsed`` maps step key -> that step's parse
  result, ``ctx.profile`` is the host's profile, ``ctx.target`` the job's target and
  ``ctx.hosts`` its hosts. A parse or judge raises ParseError when the output cannot be judged.

The engine (``provision.engine``) runs the steps, parses each output with the parser its step
names (``parse_outputs``), and decides the outcome in stages (``provision.engine.verdict``). A
multi-host check may declare the ``role`` it plays in the cluster procedure (``Role``). A node check may build its
steps from earlier checks' outputs on the same node (``uses``: gpudirect pairs each HCA with its nearest GPU from
this run's topology); a group check may judge, without running anything, what a node check gave on each of its
hosts (``gathers``: firmware_fleet compares firmware's versions across a profile's hosts).

``sets`` tags the check with the named sets it belongs to; a set (``CheckSet``, declared in ``SETS``) runs the
checks tagged with its ``tags`` and says what it is for and which IB pair schedule it takes. A check may run
differently in a set (``set_params``: the test parameters of its references and its timeout there, over the
profile's, e.g. gpu_stress's 30 minutes of gpu-burn in ``acceptance``); ``expected_s`` says how long its steps
take on one node when that is more than a moment (the sets' documented time per node,
``provision.checks.sets``). A profile can only leave a check out of a set (``exclude_checks``).

Order bands: 10-29 diagnostics that name a dead part (a GPU off the bus), 30-49 configuration
(stack, links, topology), 50-79 bandwidth, 80-99 stress; multi-host scopes after node scope.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable

from provision.errors import ParseError
from provision.parsers import PARSERS, check_size, parse_tool
from provision.results.model import Finding, Outcome, Reference, Scope

if TYPE_CHECKING:
    from provision.profiles import Profile

__all__ = ["SETS", "Check", "CheckSet", "Context", "Finding", "Group", "InSet", "Outcome", "Pair", "Ready", "Reference",
           "Role", "Scope", "Step", "gathered_steps", "judge_outputs", "parse_outputs", "split_key"]

Parser = Callable[[str], dict]


@dataclass(frozen=True)
class Ready:
    """When a server step is ready for its client: it printed ``line`` (a substring of its
    output) and, when ``port`` is set, its host has a TCP socket listening on that port."""

    line: str | None = None
    port: int | None = None


@dataclass(frozen=True)
class Step:
    """One command of a check. ``key`` names the device or case it covers ('' for the only step);
    ``parser`` the parser of its output (a ``provision parse`` tool name, or one of the check's
    own ``parsers``).

    ``server`` is an argv started first and left running while ``argv`` runs (a perftest
    server); ``ready`` says when it is listening. ``on`` and ``server_on`` index the job's
    hosts: which host runs ``argv`` and which runs ``server`` (0 for node scope).
    """

    key: str
    argv: list[str]
    parser: str
    server: list[str] | None = None
    ready: Ready | None = None
    on: int = 0
    server_on: int = 0
    # The tool's exit status is judged from its output, not taken as "could not run": perftest exits 1 when it
    # cannot register GPU memory (``Couldn't allocate MR``), a fault of the node the parser reads from the text.
    # A timeout or a missing tool (exit 127) is still an error; a parser that finds neither a result nor a known
    # failure raises ParseError, so an unexplained exit is never a pass. Its output is its standard output followed
    # by its standard error (perftest prints its failures there), saved so as one raw file.
    exit_judged: bool = False
    # Where ``argv`` runs: "ssh", on the host (over its transport); "bmc", asked of the host's BMC from the controller,
    # out of band (``provision.bmc.transport``: ``["bmc", WHAT]``, WHAT one of status, sel, sensors, firmware; its
    # output the BMC's answer as JSON). A BMC step of a host whose inventory names no BMC is never built.
    via: str = "ssh"

    def __post_init__(self) -> None:
        if self.via not in ("ssh", "bmc"):
            raise ValueError(f"step {self.key!r}: via {self.via!r} is neither 'ssh' nor 'bmc'")
        if self.via == "bmc" and (self.server or self.argv[:1] != ["bmc"]):
            raise ValueError(f"step {self.key!r}: a BMC step is one query, ['bmc', WHAT], with no server")
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
class Context:
    """What ``judge`` is given: ``parsed`` (step key -> parse result), the host's ``profile``, and
    the job's ``target`` (the Host for node scope, a Pair or a Group)."""

    parsed: dict[str, dict]
    profile: Profile
    target: Any

    @property
    def hosts(self) -> tuple:
        """The job's hosts: the target's, or the node itself."""
        hosts = getattr(self.target, "hosts", None)
        return tuple(hosts) if hosts is not None else (self.target,)


@dataclass(frozen=True)
class CheckSet:
    """A named set of checks (``burnin --check-set NAME``): the checks tagged (``Check.sets``) with any of its
    ``tags`` (its name when none), what it is for, and the IB pair ``schedule`` it runs (``--schedule`` wins)."""

    name: str
    purpose: str
    tags: tuple[str, ...] = ()
    schedule: str = "quick"
    budget_s: float | None = None  # the most a run of it may take on a node (its runner cuts it there); None: no cap

    @property
    def tagged(self) -> tuple[str, ...]:
        """The tags whose checks it runs."""
        return self.tags or (self.name,)


@dataclass(frozen=True)
class InSet:
    """How a check runs in one set, over the profile's: ``params`` (metric -> test parameters laid over its
    reference row's ``params``) and ``timeout_s`` (its timeout there; a site's larger one wins)."""

    params: dict[str, dict] = field(default_factory=dict)
    timeout_s: float | None = None


# The sets: ``quick`` for nightly runs, ``deep`` for every check at the profile's (short) durations, ``acceptance``
# for a new node. A site's own tag on its checks is a set of that name too (``provision.checks.sets``).
LOADS = ("", "gpu", "hca", "disk")  # Budget.loads
SETS = (
    CheckSet("quick", "nightly: each node's configuration, links and HCA bandwidth; no stress, no cluster procedure"),
    CheckSet("deep", "every check at the profiles' durations (gpu-burn 60 s: a smoke test, not a burn-in)"),
    CheckSet("acceptance", "a new node: every check with real durations (gpu-burn 30 min, DCGM level 3)",
             tags=("deep", "acceptance"), schedule="full"),
    # budget_s: provision.health.modes' periodic budget (tests/unit/health/test_modes.py keeps them equal)
    CheckSet("health", "between jobs (`provision health`, run by slurmd): reads of state that end in seconds, "
             "no load on a GPU, HCA or disk; time per node: its budget", budget_s=30.0),
)


@dataclass(frozen=True)
class Placement:
    """Where a check runs, which the engine's placement stage decides before anything runs
    (``provision.engine.placement``, ``provision.engine.jobs``).

    ``scope``: node, pair, group or cluster. ``needs``: the platform traits it needs (``provision.profiles.PLATFORMS``);
    ``rules``: rule (its metric or step) -> the traits it needs besides ``needs``, for a rule that applies on fewer
    platforms than its check (gpu_health's PCIe width: ("pcie_gpu",)). ``per_nvlink_domain``: a group check run once
    per NVLink domain (the hosts sharing ``provision_nvlink_domain``) rather than once per profile; a host of such a job
    with no domain makes the job an error. ``uses``: earlier node checks whose outputs on the same node its steps are
    built from (gpudirect pairs each HCA with its nearest GPU from this run's ``nvidia-smi topo -m``): the engine runs
    them first and calls ``steps(profile, host, seen)`` with ``seen`` = check id -> that check's parsed outputs; a check
    they could not give outputs for is an error of this one; called as ``steps(profile, host)`` (a re-evaluation, a
    plan) it builds the same step keys and parsers from the profile alone. ``gathers``: a group check that runs no
    tool and judges the outputs that node check gave on each of its hosts in this run (firmware_fleet compares
    firmware's versions across a profile's hosts): its steps are that check's steps once per host, keyed
    ``<host>/<step key>`` (``gathered_steps``); a host whose outputs are missing is left out of ``ctx.parsed``, and its
    judge names it; it runs with the node checks (``--scope node`` too), since its source does. ``out_of_band``: a node
    check every step of which is asked of the node's BMC (``Step.via`` "bmc"): it needs no SSH connection, so it runs
    and is judged on a node that does not answer over SSH; on a host with no BMC in the inventory it is skipped."""

    scope: Scope = Scope.NODE
    needs: tuple[str, ...] = ()
    rules: dict[str, tuple[str, ...]] = field(default_factory=dict)
    per_nvlink_domain: bool = False
    uses: tuple[str, ...] = ()
    gathers: str = ""
    out_of_band: bool = False

    def problems(self) -> list[str]:
        """What is wrong with this placement, one phrase each ([] when nothing)."""
        from provision.profiles import FEATURES  # the traits Profile.has answers

        out = []
        unknown = sorted({n for n in self.needs + sum(self.rules.values(), ()) if n not in FEATURES})
        if unknown:  # a misspelt trait would turn the check off everywhere, or fail every run
            out.append(f"unknown platform traits {', '.join(unknown)} (known: {', '.join(FEATURES)})")
        if self.per_nvlink_domain and self.scope is not Scope.GROUP:  # a domain is a group of hosts
            out.append(f"per_nvlink_domain needs scope group, not {self.scope.value}")
        if self.gathers and self.scope is not Scope.GROUP:  # it compares hosts
            out.append(f"gathers needs scope group, not {self.scope.value}")
        if self.uses and self.scope is not Scope.NODE:  # the outputs it uses are its own node's
            out.append(f"uses needs scope node, not {self.scope.value}")
        if self.out_of_band and (self.scope is not Scope.NODE or self.uses or self.gathers):  # one node's own BMC
            out.append("out_of_band needs scope node, with no uses or gathers")
        return out


@dataclass(frozen=True)
class Budget:
    """What a check costs and when it is chosen, which the engine's selection and each job's timeout read
    (``provision.engine.burnin.chosen``, ``provision.targets.Target.timeout_s``, ``provision.checks.sets``).

    ``timeout_s``: how long one of its steps may run (a site's ``provision_check_timeouts`` or a set's may change it).
    ``expected_s``: how long its steps take on one node (profile -> seconds), for a check whose tools run for a set
    time; None: a short check, its timeout bounds it (``provision.checks.sets.time_per_node``). ``sets``: the named
    check sets it belongs to (``burnin --check-set quick``). ``optional``: run only when a set or ``--checks`` names
    it, never in a run of every check (dcgm_mndiag: an hour of stress over a whole NVLink domain). ``set_params``: set
    name -> how it runs there (``InSet``: its test parameters and timeout). ``loads``: what its steps put load on while
    they run, which a job on the node would feel: "gpu" (gpu-burn, NCCL, nvbandwidth, DCGM's diagnostics, CUDA memory
    for GPUDirect), "hca" (RDMA traffic), "disk" (fio); "" for a check that only reads state (a query of nvidia-smi,
    the kernel log, sysfs, lspci, ibstat). ``provision health`` runs only checks that load nothing while a job may hold
    the node (``provision.health``)."""

    timeout_s: float = 120.0
    expected_s: Callable[[Any], float] | None = None
    sets: tuple[str, ...] = ()
    optional: bool = False
    set_params: dict[str, InSet] = field(default_factory=dict)
    loads: str = ""

    def __post_init__(self) -> None:
        if self.loads not in LOADS:
            raise ValueError(f"Budget.loads: {self.loads!r} is not one of {', '.join(map(repr, LOADS))}")


@dataclass(frozen=True)
class Data:
    """What a check measures and how its outputs are read and bounded, which the engine's data stage reads
    (``provision.engine.verdict``, ``provision.checks.references``, ``provision.engine.cluster``).

    ``metrics``: name -> unit. ``params``: metric -> the JSON Schema of its references' ``params`` (``{"required":
    [...], "properties": {...}}``: the test parameters its command is built from, checked against every profile).
    ``references``: its default reference rows (metric -> a row as a profile writes it: value, unit, lower, upper,
    params, source, estimate), for limits that hold on every platform the check applies to: merged into every profile
    it applies to, under site_references.yaml, the profile's own rows and the inventory's
    ``provision_reference_overrides`` (``provision.profiles.layers``). ``references_from``: checks whose references it
    judges against besides its own (ib_pairs judges by ib_write_bw's row). ``peaks``: metric -> the hardware peak it is
    bounded by (a name of ``plausible.HARDWARE_PEAKS`` in the metric's unit: ib_write_bw's ``{"bw_avg_Gbps":
    "hca_port"}``); a rate with none is bounded by a hundred times its reference. ``parsers``: a site's check reading a
    tool no package parser reads: parser name -> parse(text) (the package's checks have none). ``role``: the part a
    multi-host check plays in the fabric-aware cluster procedure (``Role``), which finds its checks by role."""

    metrics: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict] = field(default_factory=dict)
    references: dict[str, dict] = field(default_factory=dict)
    references_from: tuple[str, ...] = ()
    peaks: dict[str, str] = field(default_factory=dict)
    parsers: dict[str, Parser] = field(default_factory=dict)
    role: Role | None = None

    def problems(self) -> list[str]:
        """What is wrong with this declaration, one phrase each ([] when nothing)."""
        from provision.checks.plausible import misdeclared

        out = []
        wrong = misdeclared(self.peaks, self.metrics)
        if wrong:  # a misspelt peak would leave the metric bounded by its reference alone, unnoticed
            out.append(f"peaks {'; '.join(wrong)}")
        shadowed = sorted(set(self.parsers) & set(PARSERS))
        if shadowed:  # one name, one parser: a step's output reads the same wherever it is parsed
            out.append(f"its own parsers {', '.join(shadowed)} are provision parse's names")
        return out


PARTS = {Placement: "placement", Budget: "budget", Data: "data"}


@dataclass(frozen=True, init=False)
class Check:
    """A check: its ``id`` (= module name), the ``tool`` it runs, its ``order`` (lower runs first), its two pure
    functions ``steps`` and ``judge``, and its three typed parts, each read by its own stage of the engine:
    ``placement`` (``Placement``: scope, platform traits, NVLink domain, the checks whose outputs it reads), ``budget``
    (``Budget``: timeout, expected time, sets) and ``data`` (``Data``: metrics, params, default references, hardware
    peaks, parsers, role).

    ``Check(..., scope=Scope.PAIR, timeout_s=60)``, the parts' fields given flat (a site's check written before the
    parts), is the same declaration: each field goes to its part, over the part when it is given too (so that
    ``dataclasses.replace(check, timeout_s=5)`` changes that field). The parts' fields read flat too
    (``check.scope``), for the readers outside the engine. Raises ValueError for a field no part has, or a
    declaration that contradicts itself (``Placement.problems``, ``Data.problems``, a role whose scope is not the
    check's)."""

    id: str
    tool: str
    steps: Callable[..., list[Step]]  # (profile, target) -> steps; (profile, host, seen) for a check that uses others
    judge: Callable[[Context], list[Finding]]
    order: int
    placement: Placement = Placement()
    budget: Budget = Budget()
    data: Data = Data()

    def __init__(self, id: str, tool: str, steps: Callable[..., list[Step]],  # noqa: A002, PLR0913 (the fields)
                 judge: Callable[[Context], list[Finding]], order: int, placement: Placement | None = None,
                 budget: Budget | None = None, data: Data | None = None, **flat: Any) -> None:
        given = {"placement": placement, "budget": budget, "data": data}
        for kind, name in PARTS.items():
            fields = {f.name: flat.pop(f.name) for f in dataclasses.fields(kind) if f.name in flat}
            part = given[name]  # a part and some of its fields flat (dataclasses.replace(check, timeout_s=5)): merged
            given[name] = kind(**fields) if part is None else dataclasses.replace(part, **fields)
        if flat:
            raise ValueError(f"check {id}: no such field {', '.join(sorted(flat))} (fields of Placement, Budget "
                             "and Data, or the parts themselves)")
        for name, value in (("id", id), ("tool", tool), ("steps", steps), ("judge", judge), ("order", order),
                            *given.items()):
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        role, scope = self.data.role, self.placement.scope
        wrong = self.placement.problems() + self.data.problems()
        if role is not None and scope is not role.scope:  # the procedure runs it as its role's jobs
            wrong.append(f"role {role.value} needs scope {role.scope.value}, not {scope.value}")
        if wrong:
            raise ValueError(f"check {self.id}: {'; '.join(wrong)}")

    # The parts' fields, read flat (the engine's stages read the parts themselves).
    scope = property(lambda self: self.placement.scope)
    needs = property(lambda self: self.placement.needs)
    rules = property(lambda self: self.placement.rules)
    per_nvlink_domain = property(lambda self: self.placement.per_nvlink_domain)
    uses = property(lambda self: self.placement.uses)
    gathers = property(lambda self: self.placement.gathers)
    timeout_s = property(lambda self: self.budget.timeout_s)
    expected_s = property(lambda self: self.budget.expected_s)
    sets = property(lambda self: self.budget.sets)
    optional = property(lambda self: self.budget.optional)
    set_params = property(lambda self: self.budget.set_params)
    metrics = property(lambda self: self.data.metrics)
    params = property(lambda self: self.data.params)
    references = property(lambda self: self.data.references)
    references_from = property(lambda self: self.data.references_from)
    peaks = property(lambda self: self.data.peaks)
    parsers = property(lambda self: self.data.parsers)
    role = property(lambda self: self.data.role)

    def not_applicable(self, profile, rule: str | None = None) -> str:
        """Why this check (or its ``rule``) does not apply to ``profile``: the platform traits it needs that the
        profile lacks, each with what the profile says instead; '' when it applies."""
        needs = self.placement.needs
        return profile.lacking(needs + (self.placement.rules[rule] if rule is not None else ()))

    def applies(self, profile, rule: str | None = None) -> bool:
        """Whether this check (or its ``rule``) applies to ``profile`` (see ``not_applicable``)."""
        return not self.not_applicable(profile, rule)

    def parse_output(self, parser: str, text: str) -> dict:
        """``text`` read by the parser named ``parser`` (the check's own, else ``provision parse``'s);
        ParseError when it is not that tool's output or no parser has that name."""
        own = self.data.parsers.get(parser)  # a gathers check holds its source's parsers too (checks.registry)
        if own is None:
            return parse_tool(parser, text)
        check_size(text)  # the bounds parse_tool holds every output to
        return own(text)


def gathered_steps(source: Check, profile, group: Group) -> list[Step]:
    """The steps of a ``gathers`` check over ``group``: ``source``'s node steps once per host, keyed
    ``<host name>/<step key>`` and run ``on`` that host, so each gathered output keeps its parser."""
    out = []
    for i, host in enumerate(group.hosts):
        name = str(getattr(host, "name", host))
        out += [Step(f"{name}/{step.key}", step.argv, step.parser, on=i) for step in source.steps(profile, host)]
    return out


def split_key(key: str) -> tuple[str, str]:
    """(host, step key) of a gathered step key ``<host>/<step key>``."""
    host, _, step = key.partition("/")
    return host, step


def parse_outputs(check: Check, steps: list[Step], texts: dict[str, str]) -> dict[str, dict]:
    """Each output (step key -> text) parsed by the parser its step names. An output of no step
    (a saved run judged by another profile) is read by the check's parser when all its steps
    share one; else ParseError."""
    parser_of = {step.key: step.parser for step in steps}
    only = set(parser_of.values())
    parsed = {}
    for key, text in texts.items():
        parser = parser_of.get(key) or (next(iter(only)) if len(only) == 1 else None)
        if parser is None:
            raise ParseError(f"step {key!r}: {check.id} has no such step (steps: {', '.join(map(repr, parser_of))})")
        parsed[key] = check.parse_output(parser, text)
    return parsed


def judge_outputs(check: Check, profile, target, texts: dict[str, str]) -> list[Finding]:
    """``texts`` (step key -> output) parsed by the parsers their steps name and judged for ``target``:
    the engine's parse and judge without its stages (``provision.engine.verdict``), for benches and tests."""
    return check.judge(Context(parse_outputs(check, check.steps(profile, target), texts), profile, target))
