"""The run store: where a run's files live and how they are named.

Layout of one run folder ``<runs>/<run_id>/``::

    report.json              the Run (provision.results.model), schema report.schema.json
    junit/<host>.xml         one JUnit file per host, junit/all.xml with every suite
    raw/<host>/<check>.txt   a node-scope step's output (<check>.<key>.txt when the check has
                             several steps, .stderr beside it when it printed any)
    raw/<host>/os-release.txt  the node's /etc/os-release, read once per run
    raw/<check>/<job>/<host>.<key>.txt  a multi-host job's outputs (job = its hosts joined by '+')
    ansible/                 ansible-runner's private data dir and artifacts of the install

``<runs>/latest`` points at the newest run. Result rows name their raw files, so nothing
re-parses these names.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

from provision.errors import ProvisionError
from provision.results import reading, schema
from provision.results.model import Run, Scope

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
OS_RELEASE = "os-release.txt"


class RunDir:
    """One run's folder. ``path`` is absolute."""

    def __init__(self, path: Path):
        self.path = path.resolve()

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def report(self) -> Path:
        return self.path / "report.json"

    @property
    def junit(self) -> Path:
        return self.path / "junit"

    @property
    def ansible(self) -> Path:
        return self.path / "ansible"

    def raw_name(self, check: str, scope: Scope, hosts: tuple[str, ...], host: str, key: str, steps: int) -> str:
        """The relative path of one step's output (see the module's layout)."""
        if scope is Scope.NODE:
            return f"raw/{host}/{check}.{key}.txt" if steps > 1 or key else f"raw/{host}/{check}.txt"
        return f"raw/{check}/{'+'.join(hosts)}/{host}{'.' + key if key else ''}.txt"

    def write(self, rel: str, text: str) -> str:
        """Write ``text`` at ``rel`` inside the run; return ``rel``."""
        path = self.inside(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
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
        """Write report.json atomically; unless ``latest`` is False point ``<runs>/latest`` here."""
        data = run.to_dict()
        if os.environ.get(schema.VALIDATE_ENV):
            schema.validate(json.loads(json.dumps(data, default=str)), str(self.report))
        tmp = self.report.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
        tmp.replace(self.report)
        link = self.path.parent / "latest"
        if latest and (link.is_symlink() or not link.exists()):
            link.unlink(missing_ok=True)
            os.symlink(self.path.name, link)
        return self.report

    def load(self) -> Run:
        """The run's report. Raises ProvisionError when it is missing or not a run report."""
        try:
            data = json.loads(self.report.read_text())
        except (OSError, ValueError) as exc:
            raise ProvisionError(f"{self.report}: not a readable run report ({exc})") from None
        return reading.run_from_dict(data, str(self.report))


class RunStore:
    """The folder of runs (``paths.RUNS`` unless given)."""

    def __init__(self, root: Path):
        self.root = root

    def create(self, run_id: str | None = None) -> RunDir:
        """A new run folder named ``run_id`` (or the time), suffixed -2, -3... when it exists.
        Raises ProvisionError for a run id that is not a plain folder name."""
        if run_id is not None and not RUN_ID.fullmatch(run_id):
            raise ProvisionError(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' "
                                 "(a folder name under runs/)")
        run_id = run_id or dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path, n = self.root / run_id, 1
        while path.exists():
            n += 1
            path = self.root / f"{run_id}-{n}"
        path.mkdir(parents=True)
        return RunDir(path)

    def open(self, arg: str) -> RunDir:
        """A run folder given as a path or as a run id under the store (``latest`` too)."""
        path = Path(arg) if Path(arg).is_dir() else self.root / arg
        return RunDir(path)
