"""``provision.health.runner``: what the budget's timer makes of a call (the engine replaced by a stand-in that
returns what a real run returns; no timing is asserted)."""
import json
from types import SimpleNamespace

from provision import targets
from provision.health import node as health_node, runner
from provision.results.model import CheckResult, Outcome


def target(tmp_path):
    config = tmp_path / "health.json"
    config.write_text(json.dumps({"host": "node01", "profile": "h100-sxm5-80g-ndr", "slurm_node": "node01",
                                  "vars": {}}))
    return targets.build([health_node.from_config(config).host], "health")[0]


def stand_in(results, stop: str):
    def run(targets_, request, transport, sink):
        if stop:  # the budget's timer (or a signal) fired while the engine was ending its last check
            sink.control.request_stop(stop)
        return SimpleNamespace(results=results)
    return run


def test_checks_that_all_ended_judge_the_node_even_when_the_timer_fired_during_the_last(tmp_path, monkeypatch):
    ended = [CheckResult("xid", ("node01",), Outcome.PASS, "no Xid")]
    monkeypatch.setattr(runner.engine, "run", stand_in(ended, runner.BUDGET_REASON))
    assert runner.run(target(tmp_path), ["xid"], 1.0).cut is False
    interrupted = [CheckResult("xid", ("node01",), Outcome.ERROR, "interrupted (budget) while running")]
    monkeypatch.setattr(runner.engine, "run", stand_in(interrupted, runner.BUDGET_REASON))
    assert runner.run(target(tmp_path), ["xid"], 1.0).cut is True
    monkeypatch.setattr(runner.engine, "run", stand_in(interrupted, "SIGTERM"))  # a signal's stop is not the budget
    assert runner.run(target(tmp_path), ["xid"], 1.0).cut is False
