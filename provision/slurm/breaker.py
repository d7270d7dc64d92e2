"""The drain's circuit breaker: one run of the burn-in cannot empty a cluster.

A run drains at most ``share`` of the Slurm nodes (every node ``scontrol show node`` lists, not only the
run's hosts; at least one), and that budget is shared with every run of the last ``window_s`` seconds:
the nodes this tool drained in the window and still drained count against it, so a second run (a retry,
a cron loop, another shard of the same job, another controller) drains nothing more until the window has
passed or an operator has dealt with the first run's nodes. When a run has more failing nodes than its
budget it stops draining, says why in one line, and keeps the list of the nodes it would have drained
(in slurm.txt, with their reasons; drain.txt lists every failing host either way). Resuming is never
held back: it returns nodes to service.

The only way past it is ``--drain-max N``: the operator names how many nodes this run may drain (a bare
``--force`` is not enough); N replaces the share and the window for this run.

The drains are counted where Slurm records them: a node held with a reason starting ``burnin:`` (this
tool's, ``provision.slurm.drain.PREFIX``) and the time of its reason's ``[user@time]`` stamp (slurmctld's
local time, compared with this machine's: a controller and slurmctld in different time zones shift the
window). A node whose reason has no stamp counts as drained in the window (the safe side). A node the
operator resumed, or whose reason they changed, no longer counts: it is theirs.

Defaults, as NVIDIA's NVSentinel caps its fault quarantine (``fault-quarantine.circuitBreaker``:
``percentage: 50``, ``duration: "5m"``: "Maximum percentage of total cluster nodes that can be
quarantined within the time window", counting "unique node cordons within this sliding window";
https://github.com/NVIDIA/NVSentinel/blob/main/docs/configuration/fault-quarantine.md, also
https://docs.nvidia.com/nvsentinel/configuration/fault-quarantine): NVSentinel reacts to health events
within minutes and its default is half the cluster; a burn-in judges many nodes at once with one
configuration, so a wrong reference or a fabric fault fails them together. Hence 10 % per run (the
issue's figure) and a window of 24 hours: a nightly run's budget, and longer than any run (the
acceptance set's stress alone takes 45 minutes per node), so the shards of one job share it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from provision.slurm.scontrol import NodeState

SHARE = 0.10  # of the Slurm nodes, drained by one run at most (issue 23 item 5's default)
WINDOW_S = 24 * 3600.0  # the runs of the last day share one run's budget


@dataclass(frozen=True)
class Breaker:
    """``share`` (0-1] of the Slurm nodes a run may drain, ``window_s`` the seconds over which runs share
    that budget; ``most`` (``--drain-max``) the count the operator named, replacing both."""

    share: float = SHARE
    window_s: float = WINDOW_S
    most: int | None = None

    def budget(self, states: dict[str, NodeState], prefix: str, now: datetime | None = None) -> tuple[int, str]:
        """(how many nodes this run may drain, the words saying why) for the cluster ``states`` (every
        Slurm node), counting the nodes held with a reason starting ``prefix`` set within the window."""
        if self.most is not None:
            return self.most, f"--drain-max {self.most}"
        cap = max(1, int(self.share * len(states) + 1e-9))
        recent = self.recent(states, prefix, now or datetime.now())
        why = (f"at most {cap} per {span(self.window_s)} ({self.share * 100:g} % of {len(states)} Slurm nodes), "
               f"{len(recent)} of them already drained by this tool in that time")
        return max(0, cap - len(recent)), why

    def recent(self, states: dict[str, NodeState], prefix: str, now: datetime) -> list[str]:
        """The nodes held with this tool's reason, set within the window (or with no readable stamp)."""
        start = now - timedelta(seconds=self.window_s)
        return [n for n, s in states.items() if s.held() and s.reason.startswith(prefix) and set_at(s) >= start]


def set_at(state: NodeState) -> datetime:
    """When its reason was set; datetime.max (within any window) when Slurm printed no readable stamp."""
    try:
        return datetime.fromisoformat(state.since) if state.since else datetime.max
    except ValueError:
        return datetime.max


def span(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"
