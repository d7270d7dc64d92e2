"""``provision run|burnin --resume RUN``: a killed run continued in its own folder, with its own inventory and options.

At its start the job writes ``job.json`` into the run folder: the options it was given (``JobOptions``, the inventory
sources as absolute paths) and, per GPU node, what the run judges it as (address, port, user, profile and the judged
variables, those report.json keeps: ``JUDGED_VARS``). ``--resume RUN`` reads them back and selects the hosts again
from the same sources with the same options; a host added, left out or changed since is refused, naming the host and
the field (exit 2): the results kept would be another node's, or judged another way. Then the run goes on as one more
attempt (``Run.attempts``): the results its journal holds are kept and never run again (``BurninRequest.done``), an
interrupted one (a stop's "interrupted" error) runs again, the cluster procedure replays its complete rounds from the
journal and goes on from the first job missing, and each result says which attempt gave it (``CheckResult.attempt``).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from provision import inventory as inv
from provision import paths
from provision.commands._job.options import JobOptions
from provision.engine import recovery
from provision.errors import ProvisionError
from provision.results.model import JUDGED_VARS, CheckResult
from provision.results.store import RunDir, RunStore, atomic_write
from provision.targets import Target

JOB_FILE = "job.json"
VERSION = 1
# What a resumed attempt takes from its own command line rather than from the run: how it shows its progress and how
# long it waits for hosts another run holds. Everything else is the run's own.
THIS_ATTEMPT = ("resume", "verbose", "live", "wait")
# The options that choose hosts, checks or a folder: given with --resume they would make another run
CHOOSING = {"inventory": "-i", "limit": "--limit", "run_id": "--run-id", "retry_failed": "--retry-failed",
            "checks": "--checks", "check_set": "--check-set", "schedule": "--schedule", "shard": "--shard",
            "shard_by": "--shard-by", "local": "--local", "host": "--host", "profile": "--profile",
            "tags": "--tags", "drain": "--drain", "history": "--history", "forks": "--forks"}


def refuse_choices(options: JobOptions) -> None:
    """ProvisionError (exit 2) naming an option given beside ``--resume`` that the resumed run takes from itself."""
    defaults = JobOptions(options.phases)
    given = [flag for name, flag in CHOOSING.items() if getattr(options, name) != getattr(defaults, name)]
    if options.scope != defaults.scope:
        given.append("--scope")
    if given:
        raise ProvisionError(f"--resume {options.resume}: {', '.join(given)}: a resumed run keeps its own inventory "
                             "and options (runs/<id>/job.json); leave them out")


def save(rundir: RunDir, options: JobOptions, targets: list[Target]) -> None:
    """Write ``job.json``: ``options`` (the inventory sources resolved to absolute paths) and each target's identity.
    Raises OSError naming the file."""
    given = dataclasses.asdict(options)
    for name in THIS_ATTEMPT:
        given.pop(name, None)
    given["inventory"] = [str(p) for p in inv.resolve_all(options.inventory)] if options.inventory else []
    atomic_write(rundir.path / JOB_FILE, json.dumps({"version": VERSION, "options": given,
                                                     "hosts": {t.name: identity(t) for t in targets}}, indent=1))


def identity(target: Target) -> dict:
    """What a run judges a host as: its address, port, user, profile and judged variables (plain JSON)."""
    host = target.host
    judged = {k: host.vars[k] for k in JUDGED_VARS if host.vars.get(k) is not None}
    return json.loads(json.dumps({"address": host.address, "port": host.port, "user": host.user,
                                  "profile": host.profile, "vars": judged}, sort_keys=True, default=str))


def load(options: JobOptions) -> tuple[RunDir, JobOptions, dict]:
    """The run ``options.resume`` names, its own options (with this attempt's ``THIS_ATTEMPT`` ones) and its hosts'
    identities. Raises ProvisionError (exit 2) for a run that cannot be resumed: no such run, no job.json (a run
    written before --resume, a merged or re-evaluated run), an unreadable one, or a run of another command."""
    refuse_choices(options)
    rundir = RunStore(paths.RUNS).open(str(options.resume))
    where = rundir.path / JOB_FILE
    try:
        data = json.loads(where.read_text())
        given, hosts = data["options"], data["hosts"]
        if data.get("version") != VERSION or not isinstance(given, dict) or not isinstance(hosts, dict):
            raise ValueError("not a job file of this version")
        vault = given.pop("vault", None) or {}
        plain: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in given.items()}
        saved = JobOptions(**plain,
                           vault=inv.Vault(tuple(vault.get("ids", ())), tuple(vault.get("password_files", ()))))
    except FileNotFoundError:
        raise ProvisionError(f"--resume {options.resume}: {where}: no such file: only a run of provision run or "
                             "burnin from this version on can be resumed") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ProvisionError(f"--resume {options.resume}: {where}: not a readable job file ({exc})") from None
    if saved.phases != options.phases:
        raise ProvisionError(f"--resume {options.resume}: that run was `provision {_command(saved.phases)}`; resume it "
                             f"with `provision {_command(saved.phases)} --resume {options.resume}`")
    # the vault's options may be given again (a password file of this session); else the run's own
    vault_given = options.vault if options.vault != inv.Vault() else saved.vault
    saved = dataclasses.replace(saved, vault=vault_given, run_id=rundir.name,
                                **{k: getattr(options, k) for k in THIS_ATTEMPT})
    return rundir, saved, hosts


def _command(phases: tuple[str, ...]) -> str:
    return "run" if phases == ("install", "burnin") else phases[0]


def changed(saved: dict, targets: list[Target], run_arg: str) -> None:
    """ProvisionError (exit 2) naming the first host added, left out or changed (address, port, user, profile, a
    judged variable) between the run's ``job.json`` and the hosts selected again."""
    now = {t.name: identity(t) for t in targets}
    gone, new = sorted(set(saved) - set(now)), sorted(set(now) - set(saved))
    why = ""
    if gone:
        why = f"host {gone[0]} is no longer selected by its inventory and options"
    elif new:
        why = f"host {new[0]} was not in the run"
    else:
        for name, was in saved.items():
            fields = sorted(k for k in set(was) | set(now[name]) if was.get(k) != now[name].get(k))
            if fields:
                field = fields[0]
                why = f"host {name}: {field} {_shown(was.get(field))} -> {_shown(now[name].get(field))}"
                break
    if why:
        raise ProvisionError(f"--resume {run_arg}: the inventory changed since the run: {why}; a resumed run keeps "
                             "its results, which would not be this inventory's (start a new run)")


def _shown(value) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def kept(rundir: RunDir) -> list[CheckResult]:
    """The results the run's journal holds, in journal order, less those a stop cut short (an "interrupted" error:
    they run again) and those a power cycle superseded: a node ``burnin --recover`` brought back ran its node checks
    again, and its second attempt's results (and its ``node_recovery`` record) are the run's."""
    results = [r for r in rundir.journaled_results() if not (r.run_error and r.message.startswith("interrupted ("))]
    again = {(r.check, tuple(r.hosts)): r.attempt for r in results if len(r.hosts) == 1 and any(
        n.check == recovery.CHECK_ID and n.hosts == r.hosts and n.attempt == r.attempt for n in results)}
    return [r for r in results if r.attempt >= again.get((r.check, tuple(r.hosts)), 0)]
