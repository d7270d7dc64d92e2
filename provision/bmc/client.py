"""``connect(config, timeout_s) -> Bmc``: one node's BMC, over Redfish or IPMI as its inventory says.

A ``Bmc`` answers ``status()``, ``power(action)``, ``log(since, limit)``, ``firmware()``, ``sensors()``,
``raw(what)`` (the JSON text the BMC answered: never the password or a session token) and ``close()``. Every
failure is a BmcError, one line "HOST: BMC ADDRESS: what"; an answer the parsers refuse is one too.
"""
from __future__ import annotations

from datetime import datetime
from typing import Protocol

from provision.bmc.config import BmcConfig
from provision.errors import BmcError, ParseError

DEFAULT_TIMEOUT_S = 30.0  # one request; a BMC's web server answers in well under a second when it works
WHATS = ("status", "sel", "sensors", "firmware")


class Bmc(Protocol):
    config: BmcConfig

    def status(self) -> dict: ...

    def power(self, action: str) -> None: ...

    def log(self, since: datetime | None = None, limit: int | None = None) -> list[dict]: ...

    def firmware(self) -> list[dict]: ...

    def sensors(self) -> dict: ...

    def raw(self, what: str) -> str: ...

    def set_deadline(self, until: float | None) -> None: ...

    def close(self) -> None: ...


class Checked:
    """A backend whose parse errors become BmcErrors naming the BMC (what it answered is not what it should be)."""

    def __init__(self, backend):
        self.backend, self.config = backend, backend.config

    def __getattr__(self, name: str):
        method = getattr(self.backend, name)
        if name in ("close", "raw", "config", "set_deadline"):
            return method

        def checked(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            except ParseError as exc:
                raise self.config.fail(f"{name}: {' '.join(str(exc).split())[:200]}") from None
        return checked

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.backend.close()


def connect(config: BmcConfig, timeout_s: float = DEFAULT_TIMEOUT_S) -> Bmc:
    """Log in to ``config``'s BMC (Redfish: a session; IPMI: nothing until the first command). Raises BmcError."""
    if config.protocol == "ipmi":
        from provision.bmc.ipmi import IpmiBmc

        return Checked(IpmiBmc(config, timeout_s))
    from provision.bmc.redfish import RedfishBmc

    try:
        return Checked(RedfishBmc(config, timeout_s))
    except BmcError:
        raise
    except ImportError as exc:  # the library is a dependency; its absence is a broken install, said in one line
        raise config.fail(f"DMTF's redfish library is not installed ({exc.name})") from None
