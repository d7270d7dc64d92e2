"""What differs between ``provision health --mode periodic|prolog|epilog``, and the exit statuses.

=========  =====================================  ==========  ==========================================
mode       run by                                 budget      the health check's own failure
=========  =====================================  ==========  ==========================================
periodic   HealthCheckProgram, cron, a timer      30 s        its exit status (7, or 142 for the budget)
prolog     Slurm's Prolog, before a job           10 s        exit 0: Slurm drains a node whose prolog
                                                              fails, and requeues the job
epilog     Slurm's Epilog, after a job            30 s        exit 0, as the prolog
=========  =====================================  ==========  ==========================================

Budgets: slurmd kills a HealthCheckProgram still running after 60 s (slurm.conf(5), HealthCheckProgram), and NHC's
watchdog cuts its own run at 30 s by default (``TIMEOUT=${TIMEOUT:-30}`` in nhc,
https://github.com/mej/nhc/blob/master/nhc): 30 s is NHC's figure, half of slurmd's. A prolog delays every job on
the node: 10 s keeps that to a few seconds on a healthy node (measured by bench/health.py) with room for a slow
nvidia-smi. A healthy simulated node takes about a second (README, "Between jobs").

Loads: a check that loads a GPU, an HCA or a disk (``Budget.loads``) never runs while a job may hold the node. In the
epilog a check that loads the GPUs (named with ``--checks``) runs only when nvidia-smi lists no compute process on any
GPU; checks that load an HCA or a disk never run here (another job's traffic on the same node cannot be seen).

Exit statuses, as NHC's where NHC has one (``die 1``; its watchdog's 142, "Script timed out"; 143 SIGTERM):
0 healthy; 1 a check failed (the node is unhealthy); 2 bad input (the config file, an option); 7 a check could not
run or judge (a tool missing, nvidia-smi hung past its timeout, ``--ack-xid``'s dmesg): not known to be healthy, not
drained; 142 the budget ran out before every check ended (not drained); 3 the install is broken (a module missing);
130/143 interrupted. A result file that cannot be written (a read-only disk) changes no status (NHC logs it and goes
on): one warning line. In prolog and epilog every status but 1 (and 130/143) is 0, whatever failed before or after
the checks (``provision.cli`` guards the command's import and options too), but for a command line argparse refuses
(2, before any mode applies: the role's wrappers pass fixed arguments).
"""
from __future__ import annotations

from dataclasses import dataclass

OK, UNHEALTHY, BAD_INPUT, UNCHECKED, TIMED_OUT = 0, 1, 2, 7, 142
# After the budget, the time left for scontrol (--drain self: up to five calls, each bounded by what is left): the
# call ends within budget + 10 s (+ Python's start), 40 s at the default, under slurmd's 60 s kill.
SLURM_S = 10.0


@dataclass(frozen=True)
class Mode:
    """``name``; ``budget_s`` its default budget (seconds, the whole call); ``own_errors_pass``: the health check's
    own failures (a check that could not run, the budget) exit 0, so that Slurm never drains for them; ``loads``
    the check loads allowed here (``Budget.loads``), when the GPUs are idle."""

    name: str
    budget_s: float
    own_errors_pass: bool
    loads: tuple[str, ...] = ()


MODES = {m.name: m for m in (Mode("periodic", 30.0, False), Mode("prolog", 10.0, True),
                             Mode("epilog", 30.0, True, loads=("gpu",)))}


def not_finished(mode: Mode, said: str) -> str:
    """The one line of a prolog's or epilog's call that could not finish (exit 0), NHC's form: ``said`` is why."""
    return (f"ERROR:  provision-health:  Health check could not finish:  {' '.join(said.split())[:300]} (exit 0: "
            f"--mode {mode.name})")


def exit_status(mode: Mode, verdict: str, cut: bool) -> int:
    """The call's exit status: ``verdict`` pass|fail|error of this node (``Run.verdicts``), ``cut`` whether the
    budget ended it. A failure wins over everything: a check that failed before the budget ran out judged the node."""
    if verdict == "fail":
        return UNHEALTHY
    if mode.own_errors_pass or (verdict == "pass" and not cut):
        return OK
    return TIMED_OUT if cut else UNCHECKED
