"""Shards of an inventory's GPU nodes, for several controllers (or Slurm array tasks) to share a cluster.

``--shard K/N`` keeps the K-th of N disjoint shards (1 <= K <= N), chosen so that every controller
computes the same split from the same inventory, with nothing shared between them:

- ``by="hash"``: a host goes to shard ``sha256(name) mod N`` + 1: stable for a host whatever else the
  inventory holds, so adding a node moves no other;
- ``by="rack"``: whole racks (the host variable ``provision_rack``, e.g. the rack or leaf switch name)
  go to shards, racks sorted by name and dealt out largest first to the emptiest shard, so a shard's
  cluster procedure tests the cables of its own leaves. A host without ``provision_rack`` is refused.

``provision merge RUN_DIR...`` puts the shards' runs back into one report (``provision.results.merge``).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from provision.errors import InventoryError

SHARD = re.compile(r"(\d+)/(\d+)\Z")
RACK_VAR = "provision_rack"


def parse(text: str) -> tuple[int, int]:
    """"2/4" -> (2, 4). Raises InventoryError (exit 2) for anything else."""
    m = SHARD.match(text.strip()) if text.isascii() else None
    if m is None or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise InventoryError(f"--shard {text[:20]!r}: K/N with 1 <= K <= N, e.g. 1/2")
    return int(m.group(1)), int(m.group(2))


def select(hosts: Sequence, text: str, by: str = "hash") -> list:
    """The hosts (``inventory.Host``) of shard ``text`` ("K/N"), in their inventory order."""
    k, n = parse(text)
    if by == "hash":
        return [h for h in hosts if int(hashlib.sha256(h.name.encode()).hexdigest(), 16) % n == k - 1]
    if by != "rack":
        raise InventoryError(f"--shard-by {by!r}: hash or rack")
    racks: dict[str, list] = {}
    for h in hosts:
        rack = h.vars.get(RACK_VAR)
        if isinstance(rack, bool) or not isinstance(rack, (str, int)) or str(rack) == "":
            raise InventoryError(f"host {h.name}: field '{RACK_VAR}' is needed with --shard-by rack "
                                 "(the rack or leaf switch the node sits under)")
        racks.setdefault(str(rack), []).append(h)
    load = [0] * n
    owner: dict[str, int] = {}
    for rack in sorted(racks, key=lambda r: (-len(racks[r]), r)):
        emptiest = min(range(n), key=lambda i: (load[i], i))
        owner[rack] = emptiest
        load[emptiest] += len(racks[rack])
    return [h for h in hosts if owner[str(h.vars[RACK_VAR])] == k - 1]
