from provision.engine.jobs import target
from provision.engine.verdict import verdict
from provision.inventory import Host


def hosts_of(check, names, profile=None, addresses=None):
    """The target ``check`` runs for on the hosts ``names`` (stand-ins addressed by their names, or by
    ``addresses``: name -> address)."""
    name = getattr(profile, "name", None)
    return target(check, tuple(Host(n, (addresses or {}).get(n, n), 22, "root", None, None, name) for n in names))


def judge(host: str, check, profile, texts: dict[str, str], hosts: tuple[str, ...] = (), addresses=None):
    """The engine's verdict on saved outputs (step key -> text) of one job: on ``host`` alone, or on
    ``hosts`` for a pair or group check; ``addresses`` (name -> address) where a host is not addressed by name."""
    names = hosts or (host,)
    return verdict(check, names, check.scope, profile, texts, hosts_of(check, names, profile, addresses))
