"""Host names as Slurm hostlists (``gpu[012,044-046]``), folded by ClusterShell's ``NodeSet``.

Slurm's rules (src/common/hostlist.c; ``scontrol show hostlist`` prints them): a name's trailing
digits are its number, names of the same prefix make one bracketed list of numbers and ranges,
the digits' width is kept (``gpu009,gpu010`` -> ``gpu[009-010]``; ``n9,n10`` -> ``n[9-10]``), names
without trailing digits stay as they are. ``fold_axis=[-1]`` keeps ClusterShell to that last number
only (by default it folds every numeric part: ``gpu-r[01-02]-[001-002]``, which Slurm does not write).
A name whose digits are not last (``n1-ib``, ``gpu01.cluster.local``) is left as it is, as Slurm
leaves it: ClusterShell would fold it (``n[1-2]-ib``), which Slurm 22.05's ``scontrol show hostnames``
refuses ("Invalid hostlist").
"""
from __future__ import annotations

from collections.abc import Iterable

from ClusterShell.NodeSet import NodeSet


def fold(hosts: Iterable[str]) -> str:
    """``hosts`` (plain host names, any order, repeats allowed) as one hostlist, sorted as Slurm
    sorts (prefix, then number); '' for none."""
    names = set(hosts)
    plain = sorted(n for n in names if not n[-1:].isdigit())
    nodes = NodeSet(fold_axis=[-1])
    nodes.updaten(n for n in names if n[-1:].isdigit())
    return ",".join(([str(nodes)] if len(nodes) else []) + plain)


def expand(hostlist: str) -> list[str]:
    """The host names of a hostlist (``fold``'s inverse), sorted as ``fold`` sorts them."""
    return list(NodeSet(hostlist))
