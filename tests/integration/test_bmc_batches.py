"""64 simulated nodes power-cycled through their BMCs in batches of 8 with a stagger (issue 37): every node comes
back with a new boot id read over SSH, and at most 8 are off at once, as the simulated BMCs' own logs say
(``<state>/bmc/<node>.log``: each power step with its time, written by the BMC as it switches the node)."""
import json
from datetime import datetime

import pytest

from provision.sim import rack
from tests.integration.conftest import own_rack, provision

pytestmark = pytest.mark.integration
NODES, BATCH, STAGGER_S = 64, 8, 1


def off_intervals(folder) -> list[tuple[datetime, datetime]]:
    """(off, on) per node from its BMC's log: the time of its power_off step and of the power_on that followed."""
    out = []
    for log in sorted((rack.state_dir(folder) / "bmc").glob("node*.log")):
        off = None
        for line in log.read_text().splitlines():
            stamp, _, event = line.partition(" ")
            if event == "power_off":
                off = datetime.fromisoformat(stamp)
            elif event == "power_on" and off is not None:
                out.append((off, datetime.fromisoformat(stamp)))
                off = None
    return out


def most_off_at_once(intervals) -> int:
    events = sorted([(off, 1) for off, _ in intervals] + [(on, -1) for _, on in intervals])
    now = most = 0
    for _, step in events:  # at one instant an "on" (-1) sorts before an "off" (+1): a node back frees its place
        now += step
        most = max(most, now)
    return most


def test_64_nodes_cycle_in_batches_of_8(tmp_path):
    with own_rack(tmp_path / "rack64", nodes=NODES) as folder:
        done = provision("bmc", "power", "cycle", "-i", str(folder), "--batch", str(BATCH), "--stagger",
                         str(STAGGER_S), "--yes", "--json", timeout=1200)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        outcomes = json.loads(done.stdout)["outcomes"]
        assert len(outcomes) == NODES and {o["outcome"] for o in outcomes} == {"done"}
        assert all(o["after_boot_id"] and o["after_boot_id"] != o["before_boot_id"] for o in outcomes)
        intervals = off_intervals(folder)
        assert len(intervals) == NODES  # one off-then-on per node, each from its own BMC's log
        assert most_off_at_once(intervals) <= BATCH
        starts = sorted(off for off, _ in intervals)
        batches = [starts[i:i + BATCH] for i in range(0, NODES, BATCH)]
        for first, second in zip(batches, batches[1:]):  # each batch after the last one's nodes are back, then S more
            assert (second[0] - max(on for off, on in intervals if off in first)).total_seconds() >= STAGGER_S
