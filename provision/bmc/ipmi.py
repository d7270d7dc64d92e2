"""A node's BMC over IPMI 2.0 (RMCP+), through ``ipmitool -I lanplus``: the fallback for BMCs without Redfish.

ipmitool is the reference IPMI client every BMC vendor tests against. The password goes to it in the environment
of the child only (``-E`` reads ``IPMI_PASSWORD``), never on its command line (which ``ps`` shows to every user);
``-Z`` prints the SEL's times in UTC. Each command is killed at the timeout. What it reads:

- status: ``chassis status`` (power, faults) and ``mc info`` (the BMC's firmware revision);
- log: ``sel elist`` (the SEL with sensor names from the SDR); sensors: ``sensor`` (threshold sensors);
- power: ``chassis power on|off|cycle|reset`` (cycle of a node that is off is ``on``: IPMI refuses it);
- firmware: IPMI has no firmware inventory (BmcError saying so).
The raw documents hold ipmitool's text as printed; ``provision.parsers.redfish`` parses them.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

from provision import external
from provision.bmc.config import BmcConfig
from provision.bmc.reads import ParsedReads

MAX_OUTPUT_CHARS = 8 * 2**20
RETRIES = 2  # ipmitool's own per-request retries (-R; its default 4 makes a dead BMC take 5 timeouts per request)


class IpmiBmc(ParsedReads):
    """One BMC over IPMI; each call runs ipmitool once (``run`` replaceable for tests)."""

    def __init__(self, config: BmcConfig, timeout_s: float, run=None):
        self.config, self.timeout_s = config, float(timeout_s)
        self._password = config.password()  # read once, handed to each child in its environment only
        self._run = run or external.run
        self._raw: dict[str, str] = {}
        self.until: float | None = None

    def set_deadline(self, until: float | None) -> None:
        """Bound the commands from now on to end by ``until`` (time.monotonic()); None: each its own timeout."""
        self.until = until

    def argv(self, *command: str) -> list[str]:
        argv = ["ipmitool", "-I", "lanplus", "-H", self.config.hostname, "-p", str(self.config.port),
                "-U", self.config.username, "-E", "-Z", "-R", str(RETRIES), *command]
        return argv

    def tool(self, *command: str, ok_empty: bool = False) -> str:
        """ipmitool's stdout for ``command``. Raises BmcError (one line) when it fails or outlives the timeout."""
        env = {**os.environ, "IPMI_PASSWORD": self._password}
        wait = self.timeout_s if self.until is None else min(self.timeout_s, self.until - time.monotonic())
        try:
            if wait <= 0:
                raise subprocess.TimeoutExpired(command, 0)
            done = self._run(self.argv(*command), capture_output=True, text=True, errors="replace",
                             stdin=subprocess.DEVNULL, env=env, timeout=wait, check=False)
        except subprocess.TimeoutExpired:
            raise self.config.fail(f"ipmitool {' '.join(command)}: no answer within {self.timeout_s:g} s") from None
        if len(done.stdout) > MAX_OUTPUT_CHARS:
            raise self.config.fail(f"ipmitool {' '.join(command)}: over {MAX_OUTPUT_CHARS // 2**20} MiB of output")
        if done.returncode != 0:
            raise self.config.fail(f"ipmitool {' '.join(command)}: {self._reason(done.stderr or done.stdout)}")
        if not done.stdout.strip() and not ok_empty:
            raise self.config.fail(f"ipmitool {' '.join(command)}: printed nothing")
        return done.stdout

    def _reason(self, text: str) -> str:
        said = [line.strip() for line in text.splitlines() if line.strip()]
        last = (said[-1] if said else "exited non-zero with no message").replace(self._password, "***")
        if "unable to establish ipmi v2" in text.lower() or "rakp" in text.lower():
            return f"cannot log in over IPMI (wrong username or password, or IPMI over LAN disabled): {last[:160]}"
        return last[:200]

    def raw(self, what: str) -> str:
        if what not in self._raw:
            if what == "status":
                doc = {"chassis_status": self.tool("chassis", "status"), "mc_info": self.tool("mc", "info")}
            elif what == "sel":
                doc = {"sel_elist": self.tool("sel", "elist", ok_empty=True)}
            elif what == "sensors":
                doc = {"sensor": self.tool("sensor")}
            elif what == "firmware":
                raise self.config.fail("IPMI has no firmware inventory (give the node a Redfish BMC, "
                                       "provision_bmc_protocol: redfish, to read its firmware versions)")
            else:
                raise ValueError(f"unknown BMC read {what!r}")
            self._raw[what] = json.dumps({"protocol": "ipmi", "what": what, **doc}, indent=1)
        return self._raw[what]

    def power(self, action: str) -> None:
        if action not in ("on", "off", "cycle", "reset"):
            raise ValueError(f"unknown power action {action!r}")
        if action == "cycle" and "is off" in self.tool("chassis", "power", "status").lower():
            action = "on"  # IPMI refuses a cycle of a chassis that is off ("not supported in present state")
        self.tool("chassis", "power", action)

    def close(self) -> None:
        self._password = ""
