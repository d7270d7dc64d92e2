"""The engine's way to a node's BMC: ``BmcConnection.run(["bmc", WHAT], timeout_s) -> CommandResult``.

WHAT is status, sel, sensors or firmware; stdout is the JSON text the BMC answered (``Bmc.raw``), which the step's
parser (``redfish-WHAT``, provision.parsers.redfish) reads, and which is saved as the step's raw output. A failure is
rc 1 with stderr one line ("HOST: BMC ADDRESS: what"); a BMC that outlives ``timeout_s`` is rc 124, ``timed_out``,
as a tool killed on a node. The connection logs in on the first run and out on ``close``. The whole read, every
page of a SEL included, ends within ``timeout_s`` (``set_deadline``), not only each request.
"""
from __future__ import annotations

import time

from provision.bmc import client
from provision.bmc.config import BmcConfig
from provision.engine.transport import CommandResult
from provision.errors import BmcError, MissingProgramError

TIMED_OUT = 124  # coreutils timeout's status, as the SSH transport reports a tool killed at its timeout


class BmcConnection:
    """One node's BMC as the engine's ``Connection`` (``run`` only; ``start`` is not offered)."""

    def __init__(self, config: BmcConfig, connect=client.connect):
        self.config, self._connect = config, connect
        self.bmc: client.Bmc | None = None

    def run(self, argv: list[str], timeout_s: float) -> CommandResult:
        started = time.monotonic()
        if len(argv) != 2 or argv[0] != "bmc" or argv[1] not in client.WHATS:
            return self._result(argv, 2, "", f"usage: bmc {'|'.join(client.WHATS)}", started)
        try:
            if self.bmc is None:
                self.bmc = self._connect(self.config, timeout_s)
            limit = getattr(self.bmc, "set_deadline", None)
            if limit is not None:
                limit(started + timeout_s)  # the whole read within the step's timeout, not each request
            return self._result(argv, 0, self.bmc.raw(argv[1]), "", started)
        except BmcError as exc:
            text = " ".join(str(exc).split())
            timed_out = " no answer within " in text
            return self._result(argv, TIMED_OUT if timed_out else 1, "", text, started, timed_out)
        except MissingProgramError as exc:  # ipmitool not installed on the controller: the step's tool is missing
            return self._result(argv, 127, "", " ".join(str(exc).split()), started)

    def start(self, argv: list[str], timeout_s: float):
        raise NotImplementedError("a BMC step runs to its end (run)")

    def close(self) -> None:
        if self.bmc is not None:
            self.bmc.close()
            self.bmc = None

    @staticmethod
    def _result(argv, rc, stdout, stderr, started, timed_out=False) -> CommandResult:
        return CommandResult(argv=list(argv), rc=rc, stdout=stdout, stderr=stderr,
                             duration_s=time.monotonic() - started, timed_out=timed_out)
