"""The text view of the InfiniBand fabric (``provision fabric``): per plane its leaves, spines and
degraded cables, from ``provision.fabric.model.Fabric.to_dict``."""
from __future__ import annotations


def lines(view: dict, expected: str | None) -> list[str]:
    """The text report of ``Fabric.to_dict``: per plane its leaves, spines and degraded cables."""
    out = []
    for plane in view["planes"]:
        name = plane["name"]
        leaves = [s for s in view["leaves"] if s["plane"] == name]
        spines = [s for s in view["spines"] if s["plane"] == name]
        bad = [lk for lk in view["degraded_links"] if lk["plane"] == name]
        out.append(f"plane {name}: {plane['switches']} switches ({len(leaves)} leaves, {len(spines)} spines), "
                   f"{plane['hcas']} HCA ports, {plane['cables']} cables ({plane['self_loops']} self-loops); "
                   f"expected {expected or '-'}")
        for leaf in leaves:
            hosts = ", ".join(f"{h['host'] or '?'} {h['device'] or ''}".strip() + f" [{h['port']}] {h['width_speed']}"
                              for h in leaf["hosts"]) or "-"
            ups = ", ".join(f"[{u['port']}]->{u['to']}[{u['to_port']}] {u['width_speed']}" for u in leaf["uplinks"])
            over = leaf["oversubscription"]
            out += [f"  leaf {leaf['guid']} \"{leaf['description']}\" lid {leaf['lid']}",
                    f"    hosts: {hosts}", f"    uplinks: {ups or '-'}",
                    f"    oversubscription: {over if over is not None else '- (no uplinks)'}"]
        for spine in spines:
            downs = ", ".join(f"[{d['port']}]->{d['to']}[{d['to_port']}] {d['width_speed']}"
                              for d in spine["downlinks"])
            out += [f"  spine {spine['guid']} \"{spine['description']}\" lid {spine['lid']}",
                    f"    downlinks: {downs or '-'}"]
        out.append(f"  degraded cables: {len(bad)}" if bad or expected else "  degraded cables: - (no expected rate)")
        out += [f"    {lk['a']}[{lk['a_port']}] <-> {lk['b']}[{lk['b_port']}] {lk['width_speed']}"
                f"{' (its two ends disagree)' if lk['mismatch'] else ''}" for lk in bad]
    return out
