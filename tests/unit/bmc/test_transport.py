"""BmcConnection: the engine's ["bmc", WHAT] -> CommandResult with the BMC's JSON, or one line and rc != 0."""
from __future__ import annotations

import json

from provision.bmc.transport import BmcConnection
from provision.errors import BmcError


class Fake:
    def __init__(self, fail: str = ""):
        self.fail, self.closed = fail, False

    def raw(self, what):
        if self.fail:
            raise BmcError(self.fail)
        return json.dumps({"protocol": "redfish", "what": what})

    def close(self):
        self.closed = True


def test_answers_json(bmc_config):
    fake = Fake()
    conn = BmcConnection(bmc_config(), connect=lambda cfg, t: fake)
    result = conn.run(["bmc", "sel"], 10)
    assert result.rc == 0 and json.loads(result.stdout)["what"] == "sel" and not result.timed_out
    conn.close()
    assert fake.closed


def test_failure_is_one_line(bmc_config):
    conn = BmcConnection(bmc_config(), connect=lambda cfg, t: Fake("node01: BMC 127.0.0.1: login refused"))
    result = conn.run(["bmc", "status"], 10)
    assert (result.rc, result.stderr, result.stdout) == (1, "node01: BMC 127.0.0.1: login refused", "")


def test_timeout_is_124(bmc_config):
    def hung(cfg, timeout):
        raise BmcError("node01: BMC 127.0.0.1: GET /redfish/v1/: no answer within 10 s")
    result = BmcConnection(bmc_config(), connect=hung).run(["bmc", "status"], 10)
    assert result.rc == 124 and result.timed_out


def test_unknown_what(bmc_config):
    assert BmcConnection(bmc_config(), connect=lambda c, t: Fake()).run(["bmc", "reboot"], 10).rc == 2


def test_the_whole_read_is_bounded_by_the_step_timeout(bmc_config):
    """A SEL of many pages on a slow BMC: each request within its timeout, the whole read within the step's."""
    import time

    from provision.bmc.redfish import RedfishBmc
    from tests.unit.bmc import _fake
    from tests.unit.bmc.test_redfish_navigation import ENTRIES

    pages = {f"{ENTRIES}?p={i}": {"Members": [], "Members@odata.nextLink": f"{ENTRIES}?p={i + 1}"} for i in range(99)}
    pages[ENTRIES] = {"Members": [], "Members@odata.nextLink": f"{ENTRIES}?p=0"}

    class Slow(_fake.FakeClient):
        def get(self, path, **kw):
            time.sleep(0.05)
            return super().get(path, **kw)

    made: list = []

    def slow(**kw):
        made.append(Slow(pages=pages, **kw))
        return made[-1]

    conn = BmcConnection(bmc_config(), connect=lambda c, t: RedfishBmc(c, t, factory=slow))
    result = conn.run(["bmc", "sel"], 1)
    assert len(made[0].gets) < len(pages), result  # the whole read stopped at its bound, not page by page
    assert result.rc == 124 and result.timed_out and "no answer within 1 s" in result.stderr
