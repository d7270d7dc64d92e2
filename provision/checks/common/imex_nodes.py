"""A host's entry in an IMEX domain's node list (``nvidia-imex-ctl -N``, parser ``provision.parsers.imex_ctl``), as
imex finds the node's own entry and imex_domain finds every tray's.
"""
from __future__ import annotations


def names_of(host) -> set[str]:
    """The names an IMEX list may give a host: its inventory name and address, and the name's short form."""
    names = {str(n) for n in (getattr(host, "name", None), getattr(host, "address", None)) if n}
    return names | {n.split(".", 1)[0] for n in names if not n[:1].isdigit()}  # short names; never cut an address


def entry_of(nodes: list[dict], host) -> dict | None:
    """``host``'s entry in a domain's node list: its hostName (``-H``) or address equal to the host's inventory
    name or address (or the name's short form)."""
    names = names_of(host)
    for node in nodes:
        if node["hostname"] in names or node["host"] in names:
            return node
    return None
