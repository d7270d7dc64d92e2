"""The run store: where a run's files live and how they are named.

Layout of one run folder ``<runs>/<run_id>/``::

    report.json              the Run (provision.results.model), schema report.schema.json
    results.jsonl            each result as its job ended: what a killed run keeps (RunDir.record)
    junit/<host>.xml         one JUnit file per host, junit/all.xml with every suite
    burnin.prom              the run for node_exporter's textfile collector (provision.report.prometheus)
    drain.txt                after a burn-in: `<host> <reason>` per failing host (provision.slurm.drain)
    slurm.txt                with --drain slurm: what was drained, resumed and left alone
    report.html              `provision report`'s page (report/hosts/<host>.html beside it above 64 hosts)
    raw/<host>/<check>.txt   a node-scope step's output (<check>.<key>.txt when the check has
                             several steps, .stderr beside it when it printed any)
    raw/<host>/os-release.txt  the node's /etc/os-release, read once per run
    raw/<check>/<job>/<host>.<key>.txt  a multi-host job's outputs (job = its hosts joined by '+')
    raw/<check>/roundN/<job>/...      the same for a round of the cluster procedure (jobs rerun on the same hosts)
    ansible/                 ansible-runner's private data dir and artifacts of the install

``<runs>/latest`` points at the newest run. Result rows name their raw files, so nothing
re-parses these names. Run folders are 0700 and their files 0600: raw outputs and ansible-runner
artifacts describe a cluster's nodes.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import math
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from provision.errors import OutputError, ProvisionError
from provision.results import reading, schema
from provision.results.model import FABRIC, SCHEMA_VERSION, CheckResult, HostRecord, Run, Scope

# A report with more findings than this is written without indentation: json indents only in its pure-Python
# encoder, and uses the C one only when indent is None (CPython Lib/json/encoder.py, JSONEncoder.iterencode);
# 20,000 findings is about 50 hosts of a full burn-in.
COMPACT_FINDINGS = 20_000
# The journal's fsync, batched (``RunDir.record``): after this many results or this many seconds (the bound
# that matters: a power loss loses at most the last second's results; the count only caps a burst).
JOURNAL_SYNC_EVERY = 1000
JOURNAL_SYNC_S = 1.0
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
LATEST = "latest"
HISTORY = "history.db"  # the history database's default place, beside the runs (provision.history.db)
RESERVED = (LATEST, HISTORY)  # names under runs/ that are not runs
OS_RELEASE = "os-release.txt"
# The names of a run folder's files (the layout above): nothing outside the store spells them.
REPORT = "report.json"
JOURNAL = "results.jsonl"
JUNIT = "junit"
RAW = "raw"
ANSIBLE = "ansible"
PROMETHEUS = "burnin.prom"  # node_exporter's textfile collector reads *.prom
DRAIN = "drain.txt"
SLURM = "slurm.txt"
HTML = "report.html"


class RunDir:
    """One run's folder. ``path`` is absolute."""

    def __init__(self, path: Path):
        self.path = path.resolve()
        self._journal_lock = threading.Lock()
        self._unsynced, self._synced_at = 0, time.monotonic()

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def junit(self) -> Path:
        return self.path / JUNIT

    @property
    def ansible(self) -> Path:
        return self.path / ANSIBLE

    @property
    def prometheus(self) -> Path:
        return self.path / PROMETHEUS

    @property
    def drain(self) -> Path:
        return self.path / DRAIN

    @property
    def slurm(self) -> Path:
        return self.path / SLURM

    @property
    def html(self) -> Path:
        return self.path / HTML

    def os_release(self, host: str) -> str:
        """The relative path of ``host``'s saved /etc/os-release."""
        return f"{RAW}/{host}/{OS_RELEASE}"

    def raw_name(self, check: str, scope: Scope, hosts: tuple[str, ...], host: str, key: str, steps: int,
                 tag: str = "") -> str:
        """The relative path of one step's output (see the module's layout); ``tag`` (a round, for
        jobs that may run again on the same hosts) adds a folder level. Raises ProvisionError for a
        name that is not a plain file name (the inventory refuses those; this is the second line)."""
        for name in (check, host, *hosts, *([key] if key else []), *([tag] if tag else [])):
            safe_name(name, "a raw output's name")
        if scope is Scope.NODE:
            return f"{RAW}/{host}/{check}.{key}.txt" if steps > 1 or key else f"{RAW}/{host}/{check}.txt"
        return f"{RAW}/{check}/{tag + '/' if tag else ''}{'+'.join(hosts)}/{host}{'.' + key if key else ''}.txt"

    def write(self, rel: str, text: str) -> str:
        """Write ``text`` at ``rel`` inside the run (mode 0600); return ``rel``."""
        path = self.inside(rel)
        for folder in reversed(path.relative_to(self.path).parents[:-1]):  # each level 0700, not only the last
            (self.path / folder).mkdir(mode=0o700, exist_ok=True)
        atomic_write(path, text, sync=False)
        return rel

    def read(self, rel: str, origin: str) -> str:
        """The text of a saved file. Raises ProvisionError if it is outside the run or missing."""
        path = self.inside(rel, origin)
        if not path.is_file():
            raise ProvisionError(f"{origin}: raw output {rel} is missing ({path})")
        return path.read_text(errors="replace")

    def inside(self, rel: str, origin: str = "the run") -> Path:
        """``rel`` resolved inside the run folder. Raises ProvisionError when it leaves it."""
        path = (self.path / rel).resolve()
        if self.path not in path.parents:
            raise ProvisionError(f"{origin}: path {rel!r} is outside the run folder {self.path}")
        return path

    def save(self, run: Run, latest: bool = True) -> Path:
        """Write report.json atomically and durably (temp file, fsync, rename); unless ``latest``
        is False point ``<runs>/latest`` here (a symlink replaced by rename, never removed)."""
        self.sync_journal()
        data = run.to_dict()
        if os.environ.get(schema.VALIDATE_ENV):
            schema.validate(json.loads(json.dumps(data, default=str)), str(self.report))
        large = sum(len(r.findings) for r in run.results) > COMPACT_FINDINGS
        atomic_write(self.report, dumps(data, indent=None if large else 1))
        link = self.path.parent / LATEST
        if latest and latest_is_ours(link):  # never a file, a folder or a link someone else made (RunStore.create)
            tmp = self.path.parent / f".{LATEST}.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            os.symlink(self.path.name, tmp)
            os.replace(tmp, link)
        return self.report

    def record(self, result: CheckResult) -> None:
        """Append one finished result to ``results.jsonl``: what a killed run keeps.

        The guarantee, exactly: when ``record`` returns, the result's whole line is in the kernel
        (``write(2)`` looped until every byte is taken; a short write is continued, an error raised),
        so a run killed in any way that leaves the machine up (SIGKILL, the OOM killer, a second
        Ctrl-C, a crash of Python) keeps every result recorded before it: the page cache outlives
        the process. Against a power loss or a kernel crash the journal is fsynced by the first
        ``record`` that comes ``JOURNAL_SYNC_S`` or more after the last fsync or is the
        ``JOURNAL_SYNC_EVERY``-th since it, and by ``sync_journal`` (the job calls it when the
        burn-in ends, and ``save`` does): such a crash loses at most the results recorded since
        the last fsync. One fsync per result cost 20.4 s of 1,250 hosts x 15 checks (issue 20).
        A write that fails part-way (a full disk) leaves a cut line; the next line starts on a
        fresh line, so the cut line is all that is lost. Raises OSError naming the journal."""
        self._append(dumps(result.to_dict(), indent=None).encode())

    def begin(self, run: Run) -> None:
        """Journal ``run`` without its results (``{"run": ...}``: hosts and their profiles, start,
        install), so that a run whose report.json is lost can be rebuilt from the journal alone
        (``load``). Raises OSError naming the journal."""
        header = {k: v for k, v in run.to_dict().items() if k not in ("results", "verdicts")}
        self._append(dumps({"run": header}, indent=None).encode())

    def _append(self, line: bytes) -> None:
        with self._journal_lock:
            try:
                fd = os.open(self.journal, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
                try:
                    end = os.fstat(fd).st_size
                    if end and os.pread(fd, 1, end - 1) != b"\n":  # a line cut by an earlier failed write
                        line = b"\n" + line
                    write_all(fd, line)
                    self._unsynced += 1
                    now = time.monotonic()
                    if self._unsynced >= JOURNAL_SYNC_EVERY or now - self._synced_at >= JOURNAL_SYNC_S:
                        os.fsync(fd)
                        self._unsynced, self._synced_at = 0, now
                finally:
                    os.close(fd)
            except OSError as exc:
                raise _named(exc, self.journal) from None

    def sync_journal(self) -> None:
        """fsync ``results.jsonl`` when results were recorded since its last fsync."""
        with self._journal_lock:
            if not self._unsynced:
                return
            fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND)
            try:
                os.fsync(fd)
                self._unsynced, self._synced_at = 0, time.monotonic()
            finally:
                os.close(fd)

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    def journaled_results(self) -> list[CheckResult]:
        """Every result the journal holds, in the order they were recorded (a cut line left out): what a resumed
        run keeps (``provision burnin --resume``)."""
        return self._journaled()[1]

    def load(self, rebuild: Callable[[str], None] | None = None, warn: Callable[[str], None] | None = None) -> Run:
        """The run's report, with any result the journal holds that the report lacks (a run
        killed before its last save). With ``rebuild``, a report.json that is missing, cut or
        unreadable is rebuilt from the journal (its run header and every whole result line), and
        ``rebuild`` gets one line saying so. ``warn`` (else ``rebuild``) gets a line per journal line of the
        wrong shape, left out (``_journaled``). Raises ProvisionError when it is not a run report."""
        warn = warn or rebuild
        try:
            data = json.loads(self.report.read_text())
        except (OSError, ValueError) as exc:
            run = self._rebuilt(rebuild, exc, warn) if rebuild is not None else None
            if run is None:
                raise ProvisionError(f"{self.report}: not a readable run report ({exc})") from None
            return run
        run = reading.run_from_dict(data, str(self.report))
        seen = {(r.check, r.hosts) for r in run.results}
        for result in self._journaled(warn)[1]:
            if (result.check, result.hosts) not in seen:
                run.results.append(result)
                seen.add((result.check, result.hosts))
        return run

    def _journaled(self, warn: Callable[[str], None] | None = None) -> tuple[dict | None, list[CheckResult]]:
        """(the last run header, every result) of the journal's whole lines; a line cut by a kill or a
        full disk is left out. A journal written before lines started afresh may hold a cut line with
        the next result glued to it: that result is kept. A whole JSON line of the wrong shape (neither a run
        header nor a result: valid JSON, so no cut write made it) is left out too, and ``warn`` gets one line
        naming the journal, the line's number and what is wrong; a cut line is not warned about (the last
        one is a kill's, normal; an earlier one's write raised, naming the journal, when it failed)."""
        header: dict | None = None
        results: list[CheckResult] = []
        if not self.journal.is_file():
            return header, results
        # bytes split at '\n' only: the numbers are the file's lines (read_text and splitlines also break at '\r')
        for number, line in enumerate(self.journal.read_bytes().decode(errors="replace").split("\n"), 1):
            row = _journal_row(line)
            if row is _CUT:
                continue
            if isinstance(row, dict) and isinstance(row.get("run"), dict):
                header = row["run"]
                continue
            try:
                results.append(reading.result_from_dict(row))  # type: ignore[arg-type]
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                if warn is not None:
                    why = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                    warn(f"{self.journal}:{number}: not a result nor a run header ({_short(why)}); line left out")
        return header, results

    def _rebuilt(self, say: Callable[[str], None], why: Exception,
                 warn: Callable[[str], None] | None = None) -> Run | None:
        """The run rebuilt from the journal alone; None when it holds no result."""
        header, results = self._journaled(warn)
        if not results:
            return None
        base = header or {"schema_version": SCHEMA_VERSION, "run_id": self.name}
        # the header is a report without its results: read it as one (the read-back schema check needs them)
        run = reading.run_from_dict({"results": [], "verdicts": {}, **base}, str(self.journal))
        run.results = results
        for host in (h for r in results for h in r.hosts if h != FABRIC):
            run.hosts.setdefault(host, HostRecord(None))
        reason = why.strerror if isinstance(why, OSError) and why.strerror else "cut or not JSON"
        say(f"{self.report}: {reason}; rebuilt from {self.journal.name} ({len(results)} results"
            f"{'' if header else '; no run header: hosts without profile or start time'})")
        return run


RESULT_START = '{"check": '  # how a journal line of a result begins (CheckResult.to_dict's first key)
_CUT = object()  # a journal line that is not JSON (cut by a kill or a failed write), nor ends in a result


def _journal_row(line: str) -> object:
    """One journal line's JSON value: the whole line's, else (a result glued to a cut line by an older
    journal) the value from its last ``RESULT_START`` on; ``_CUT`` when neither is JSON (an empty line too)."""
    for text in (line, line[line.rfind(RESULT_START):] if line.rfind(RESULT_START) > 0 else ""):
        try:
            return json.loads(text)
        except ValueError:
            continue
    return _CUT


def _short(text: str, most: int = 200) -> str:
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def latest_is_ours(link: Path) -> bool:
    """Whether ``<runs>/latest`` may be pointed at a run: nothing there, or a symlink naming a folder
    beside it by its plain name (what ``save`` writes). A file, a folder, or a link elsewhere is
    someone's, and stays."""
    if not link.is_symlink():
        return not link.exists()
    target = os.readlink(link)
    return bool(RUN_ID.fullmatch(target)) and target not in RESERVED


SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")  # 200 at most: <name>.xml's temporary twin fits NAME_MAX


def safe_name(name: str, what: str) -> str:
    """``name`` when it is a plain file name (letters, digits, '.', '_', '-', not starting with '.'
    or '-'); else ProvisionError: host and check names become file names in the run folder."""
    if not SAFE.fullmatch(name) or ".." in name:
        raise ProvisionError(f"{what}: {name[:80]!r}{'...' if len(name) > 80 else ''} is not a plain name "
                             "(letters, digits, '.', '_', '-', at most 200 characters)")
    return name


def dumps(data: object, indent: int | None = 1) -> str:
    """Strict JSON (RFC 8259 has no NaN or Infinity): a non-finite float that got this far is
    written as its string ("inf"), so the report stays readable by every JSON parser."""
    try:
        return json.dumps(data, indent=indent, default=str, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(_finite(data), indent=indent, default=str, allow_nan=False) + "\n"


def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write_all(fd: int, data: bytes) -> None:
    """``data`` written whole to ``fd``: ``write(2)`` may take fewer bytes than given (a signal, a
    filling disk); the rest is written again until every byte is taken. Raises OSError (ENOSPC when
    the file system takes nothing more)."""
    view = memoryview(data)
    while view:
        taken = os.write(fd, view)
        if taken <= 0:  # a regular file takes at least one byte or fails; never loop on nothing
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[taken:]


def atomic_write(path: Path, text: str, sync: bool = True, mode: int = 0o600) -> None:
    """Write ``path`` (``mode``) through a temp file renamed over it; fsync file and folder when ``sync``.
    Complete or nothing: on any error (a full disk, a read-only file system) the temp file is removed,
    the file at ``path`` is left as it was, and OSError is raised naming ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            write_all(fd, text.encode())
            if mode != 0o600:
                os.fchmod(fd, mode)  # os.open's mode is filtered by the umask
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:  # KeyboardInterrupt too: no temp file outlives the write
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _named(exc, path) from None
        raise
    if sync:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` (an error of write(2) on a descriptor names no file)."""
    if exc.filename is None or str(exc.filename).endswith(".tmp"):
        exc.filename = str(path)
    return exc


class RunStore:
    """The folder of runs (``paths.RUNS`` unless given)."""

    def __init__(self, root: Path):
        self.root = root

    def create(self, run_id: str | None = None, warn: Callable[[str], None] | None = None) -> RunDir:
        """A new run folder named ``run_id`` (or the time), suffixed -2, -3... when it exists; ``warn``
        gets one line when ``latest`` is not ours to point here (``latest_is_ours``). Raises ProvisionError
        for a run id that is not a plain folder name, OutputError when the runs folder cannot take it."""
        if run_id is not None and (not RUN_ID.fullmatch(run_id) or run_id in RESERVED or len(run_id) > 100):
            raise ProvisionError(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' "
                                 f"(a folder name under runs/, at most 100 characters, not {' or '.join(RESERVED)})")
        run_id = run_id or dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path, n = self.root / run_id, 1
        while path.exists():
            n += 1
            path = self.root / f"{run_id}-{n}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)
        except OSError as exc:  # read-only, not ours, not a folder: the machine's state, not a bug
            raise OutputError(f"runs folder {self.root}: cannot make the run folder {path.name} in it: "
                              f"{exc.strerror or exc} (PROVISION_RUNS_DIR names another)") from None
        link = self.root / LATEST
        if warn and not latest_is_ours(link):
            kind = f"a symlink to {os.readlink(link)!r}" if link.is_symlink() else \
                "a folder" if link.is_dir() else "a file"
            warn(f"provision: warning: {link} is {kind}, not the link provision writes: left as it is, so it "
                 f"will not name this run (remove it and the next run makes it)")
        return RunDir(path)

    def open(self, arg: str) -> RunDir:
        """A run folder given as a path or as a run id under the store (``latest`` too). Raises
        ProvisionError for an empty one (``''`` is no run: never the current folder)."""
        if not arg.strip():
            raise ProvisionError(f"{arg!r}: not a run: name a run folder or a run id under {self.root}")
        path = Path(arg) if Path(arg).is_dir() else self.root / arg
        return RunDir(path)
