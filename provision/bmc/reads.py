"""What every BMC backend reads the same way: its raw JSON documents (``raw(what)``, the backend's own) parsed by
``provision.parsers.redfish`` (the same parsers the ``bmc`` check's steps use), so that ``provision bmc``, the
burn-in and a re-evaluation read one answer one way."""
from __future__ import annotations

from datetime import datetime

from provision.parsers import redfish as parse


class ParsedReads:
    """``status``, ``log``, ``firmware`` and ``sensors`` over the backend's ``raw(what)``."""

    def raw(self, what: str) -> str:
        raise NotImplementedError

    def status(self) -> dict:
        return parse.status(self.raw("status"))

    def log(self, since: datetime | None = None, limit: int | None = None) -> list[dict]:
        """The event log's entries (oldest first), those from ``since`` on, the last ``limit`` of them."""
        entries = parse.sel(self.raw("sel"))["entries"]
        if all(parse.instant(e.get("created")) for e in entries):  # oldest first, whatever order the BMC lists
            entries = sorted(entries, key=lambda e: parse.sort_key(e.get("created")))
        if since is not None:
            entries = [e for e in entries if parse.after(e["created"], since)]
        return entries[-limit:] if limit else entries

    def firmware(self) -> list[dict]:
        return parse.firmware(self.raw("firmware"))["firmware"]

    def sensors(self) -> dict:
        return parse.sensors(self.raw("sensors"))
