"""The text view of the InfiniBand fabric (``provision fabric``), from ``view``: ``Fabric.to_dict`` with names.

A summary first (planes, switches, HCA ports and cables; then what is wrong: degraded cables and leaves
missing uplinks, and how many HCA ports have no host name), then per plane the leaves missing uplinks
(each with the spines it lacks cables to), the degraded cables, and the tree: leaves with their hosts and
uplinks, spines with their downlinks. Switches are named by their description where it names one
(``provision.fabric.model.names``: a managed switch's "MF0;<name>:..."), HCA ports by host and device
where the dump says, else by node id; a cable's node ids stay beside the names where a tool needs them.
Lines hold at most ``WIDTH`` characters, lists wrapped between their items (a single name or path
longer than that stays whole).
"""
from __future__ import annotations

import textwrap

from provision.fabric.model import Fabric, missing_uplinks, names

# 100 columns: a terminal's common width with room for a prompt-free paste; the classic 80 would fold
# every leaf's host list to one host a line.
WIDTH = 100


def view(fabric: Fabric, expected: str | None) -> dict:
    """``fabric.to_dict(expected)`` with what an operator reads (``provision fabric``'s text and JSON):
    every switch, far end and HCA port named (``name``, ``to_name``, ``a_name``/``b_name``; host entries
    also carry their ``guid``), ``missing_uplinks`` (``provision.fabric.model.missing_uplinks``, each with
    its plane) and per plane ``unnamed_hcas`` (HCA ports whose host is not known)."""
    out = fabric.to_dict(expected)
    named = {guid: name for plane in fabric.planes for guid, name in names(plane).items()}
    hcas = {(p.name, sw.guid): p.hcas_on(sw.guid) for p in fabric.planes for sw in p.leaves()}
    for sw in out["leaves"] + out["spines"]:
        sw["name"] = named.get(sw["guid"], sw["guid"])
        for end in sw.get("uplinks", []) + sw.get("downlinks", []):
            end["to_name"] = named.get(end["to"], end["to"])
        for entry, hca in zip(sw.get("hosts", []), hcas.get((sw["plane"], sw["guid"]), [])):
            entry.update(guid=hca.guid, name=named[hca.guid])
    for lk in out["degraded_links"]:
        lk.update(a_name=named.get(lk["a"], lk["a"]), b_name=named.get(lk["b"], lk["b"]))
    out["missing_uplinks"] = [{"plane": p.name, **m} for p in fabric.planes for m in missing_uplinks(p, named)]
    for entry, plane in zip(out["planes"], fabric.planes):
        entry["unnamed_hcas"] = sum(1 for h in plane.hcas if not h.host)
    return out


def lines(view: dict, expected: str | None) -> list[str]:
    """The text report of ``view`` (above) against ``expected`` width and speed (None: not judged)."""
    out = summary(view, expected)
    for plane in view["planes"]:
        out += _plane(view, plane, expected)
    return out


def summary(view: dict, expected: str | None) -> list[str]:
    """The first lines: the fabric's size, then its faults counted (degraded cables, leaves missing
    uplinks), then the HCA ports without a host name."""
    planes = view["planes"]
    count = len(planes)
    out = _fit(f"fabric: {count} plane{'s' if count != 1 else ''}, {sum(p['switches'] for p in planes)} switches "
               f"({len(view['leaves'])} leaves, {len(view['spines'])} spines), {sum(p['hcas'] for p in planes)} "
               f"HCA ports, {sum(p['cables'] for p in planes)} cables; expected {expected or '-'}", "  ")
    bad, missing = view["degraded_links"], view.get("missing_uplinks", [])
    out.append(f"  degraded cables: {len(bad)}" if expected else "  degraded cables: - (no expected rate)")
    out.append(f"  leaves missing uplinks: {len(missing)}"
               + (f" ({sum(m['missing'] for m in missing)} uplinks)" if missing else ""))
    unnamed = sum(p.get("unnamed_hcas", 0) for p in planes)
    if unnamed:
        out += _fit(f"  HCA ports without a host name: {unnamed} (a firmware default or no inventory host in "
                    "their node description: shown by node id or description)", "    ")
    return out


def _plane(view: dict, plane: dict, expected: str | None) -> list[str]:
    name = plane["name"]
    leaves = [s for s in view["leaves"] if s["plane"] == name]
    spines = [s for s in view["spines"] if s["plane"] == name]
    bad = [lk for lk in view["degraded_links"] if lk["plane"] == name]
    missing = [m for m in view.get("missing_uplinks", []) if m["plane"] == name]
    counts = (f"{plane['switches']} switches ({len(leaves)} leaves, {len(spines)} spines), {plane['hcas']} HCA "
              f"ports, {plane['cables']} cables ({plane['self_loops']} self-loops); expected {expected or '-'}")
    head = f"plane {name}: {counts}"  # a long name (a dump's path): the counts on a line of their own
    out = [head] if len(head) <= WIDTH else [f"plane {name}:", f"  {counts}"]
    if missing:
        out.append(f"  leaves missing uplinks: {len(missing)}, {sum(m['missing'] for m in missing)} uplinks "
                   f"(the best-cabled leaf has {missing[0]['expected']})")
        for m in missing:
            short = [f"{s['name']} ({s['cables']} of {s['usual']})" for s in m["short_of"]]
            head = f"    {_switch(m['name'], m['leaf'])}: {m['uplinks']} of {m['expected']} uplinks"
            out += _items(head + ("; short of " if short else ""), short, "      ") if short else [head]
    out.append(f"  degraded cables: {len(bad)}" if bad or expected else "  degraded cables: - (no expected rate)")
    for lk in bad:
        out += _fit(f"    {_end_name(lk, 'a')}[{lk['a_port']}] <-> {_end_name(lk, 'b')}[{lk['b_port']}] "
                    f"{lk['width_speed']}{' (its two ends disagree)' if lk['mismatch'] else ''}"
                    + ("" if lk["a_name"] == lk["a"] and lk["b_name"] == lk["b"] else
                       f"; {lk['a']}[{lk['a_port']}] <-> {lk['b']}[{lk['b_port']}]"), "      ")
    for leaf in leaves:
        hosts = [f"{h.get('name') or h['host'] or h.get('guid') or '-'} [{h['port']}] {h['width_speed']}"
                 for h in leaf["hosts"]]
        over = leaf["oversubscription"]
        out += [_header("leaf", leaf), *_items("    hosts: ", hosts or ["-"], "      "),
                *_items("    uplinks: ", [_link(u) for u in leaf["uplinks"]] or ["-"], "      "),
                f"    oversubscription: {over if over is not None else '- (no uplinks)'}"]
    for spine in spines:
        out += [_header("spine", spine),
                *_items("    downlinks: ", [_link(d) for d in spine["downlinks"]] or ["-"], "      ")]
    return out


def _header(role: str, sw: dict) -> str:
    """``leaf NAME S-guid lid N "description"`` for a name taken from the description (a managed switch's);
    ``leaf S-guid lid N "description"`` where the name is the description itself, or the node id."""
    name = sw.get("name") or sw["guid"]
    who = sw["guid"] if name in (sw["guid"], (sw["description"] or "").strip()) else f"{name} {sw['guid']}"
    return f"  {role} {who} lid {sw['lid']} \"{sw['description']}\""


def _switch(name: str, guid: str) -> str:
    return guid if name == guid else f"{name} ({guid})"


def _end_name(link: dict, end: str) -> str:
    return link.get(f"{end}_name") or link[end]


def _link(end: dict) -> str:
    return f"[{end['port']}]->{end.get('to_name') or end['to']}[{end['to_port']}] {end['width_speed']}"


def _items(head: str, items: list[str], indent: str) -> list[str]:
    """``head`` then ``items`` joined by ", ", wrapped between items at ``WIDTH``; continuation lines
    start with ``indent``."""
    out, line = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if line not in (head, indent) and len(line) + 1 + len(piece) > WIDTH:
            out.append(line)
            line = indent
        line += ("" if line in (head, indent) else " ") + piece
    out.append(line)
    return out


def _fit(line: str, indent: str) -> list[str]:
    """``line`` wrapped at spaces to ``WIDTH``, continuation lines starting with ``indent``; a word longer
    than that (a path) stays whole."""
    if len(line) <= WIDTH:
        return [line]
    lead = line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line.lstrip(), WIDTH, initial_indent=lead, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)
