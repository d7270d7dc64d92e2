"""scontrol's calls bounded by a deadline (``provision health``: the budget and 10 s after the call began)."""
import subprocess
import time

import pytest

from provision.slurm.scontrol import Scontrol, SlurmError


def test_each_call_gets_the_time_left_and_none_once_it_is_gone():
    given = []

    def run(argv, **kw):
        given.append(kw["timeout"])
        return subprocess.CompletedProcess(argv, 0, "NodeName=node01 State=IDLE\n", "")

    Scontrol(run=run, deadline=time.monotonic() + 5).show("node01")
    assert 4 < given[0] <= 5
    assert Scontrol(run=run, timeout_s=30, deadline=time.monotonic() + 100).call("ping") and given[1] == 30
    with pytest.raises(SlurmError, match="scontrol show node: not run: no time left of the call's budget"):
        Scontrol(run=run, deadline=time.monotonic() - 1).show("node01")
    assert len(given) == 2
