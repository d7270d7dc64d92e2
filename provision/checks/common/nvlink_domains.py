"""An NVLink domain as the checks of one name it (nvlink_domain's all-reduce, nvlink_clique's cliques)."""
from __future__ import annotations


def domain_name(hosts) -> str:
    """The domain's name as the inventory gives it (its first host's ``provision_nvlink_domain``), else its hosts."""
    named = getattr(hosts[0], "nvlink_domain", None) if hosts else None
    return f"NVLink domain {named}" if named else \
        f"NVLink domain of {'+'.join(str(getattr(h, 'name', h)) for h in hosts)}"
