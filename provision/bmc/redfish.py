"""A node's BMC over Redfish, through DMTF's ``redfish`` library (``redfish.redfish_client``, session login).

Only links are followed, from the service root: Systems -> the ``provision_bmc_system`` member (else the first);
its LogServices -> the log whose Id is "SEL" or whose LogEntryType is "SEL", else the one with Id "EventLog",
else the only one; Chassis (the system's Links.Chassis, else the first member) -> Sensors, PowerSubsystem/
PowerSupplies and ThermalSubsystem/Fans (the deprecated Power and Thermal resources where those are missing);
UpdateService/FirmwareInventory; Managers -> the first member. Collections are read page by page
(``Members@odata.nextLink``) and each member that is only a link is fetched. A link that leaves /redfish/v1 on this
BMC is not followed.

What each read returns is the raw document (``raw``: the resources as the BMC answered them, for saving as the
check's raw output) and its parse (``provision.parsers.redfish``). Every failure is a BmcError, one line:
"HOST: BMC ADDRESS: what" (``provision.bmc.http.explain``). See ``provision.bmc.http`` for what the library does
not do that this package does (TLS verification by default, a real timeout, a size cap, a quiet logger).
"""
from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from provision.bmc import http
from provision.bmc.config import BmcConfig
from provision.bmc.reads import ParsedReads

ROOT = "/redfish/v1/"
MAX_PAGES = 1000  # a collection with more pages than this is looping, not long
RESET_TYPES = {"on": "On", "off": "ForceOff", "cycle": "PowerCycle", "reset": "ForceRestart"}
POLL_S = 1.0


class RedfishBmc(ParsedReads):
    """One BMC's Redfish service, logged in (a session) until ``close``."""

    def __init__(self, config: BmcConfig, timeout_s: float, factory=None):
        import redfish
        from redfish.rest.v1 import InvalidCredentialsError, RetriesExhaustedError, SessionCreationError

        http.quiet()
        self.config, self.timeout_s = config, float(timeout_s)
        self.bounded = http.Bounded(self.timeout_s)
        self._cache: dict[str, dict] = {}
        self._root_resp = None
        self._raw: dict[str, str] = {}
        make = factory or redfish.redfish_client
        self.client = make(base_url=config.base_url, username=config.username, password=config.password(),
                           cafile=None if config.insecure else (config.ca_file or http.system_ca_file()),
                           timeout=self.timeout_s, max_retry=0, check_connectivity=False,
                           https_adapter=http.CappedAdapter())
        session = getattr(self.client, "_session", None)
        if session is not None:
            session.trust_env = False  # no proxy, no .netrc (provision.bmc.http)
        self.root = self.get(ROOT)
        self.client.root_resp, self.client.root = self._root_resp, _Obj(self.root)
        sessions = (self.root.get("Links") or {}).get("Sessions") or {}
        self.client.login_url = self._path(sessions.get("@odata.id") or "/redfish/v1/SessionService/Sessions")
        try:
            self.bounded.call(self.client.login, auth="session")
        except InvalidCredentialsError:
            raise config.fail(f"login refused (HTTP 401): wrong username or password for {config.username}") from None
        except SessionCreationError as exc:
            raise config.fail(f"login failed: {str(exc).splitlines()[0][:200]}") from None
        except (RetriesExhaustedError, TimeoutError) as exc:
            raise config.fail(http.explain(exc, self.timeout_s)) from None
        self.client.set_password(None)  # the session token is what is used from here on

    # --- reads -------------------------------------------------------------------------------------------------

    def set_deadline(self, until: float | None) -> None:
        """Bound the reads from now on to end by ``until`` (time.monotonic()), None for no bound but each request's."""
        self.bounded.until = until

    def raw(self, what: str) -> str:
        """The JSON text of what the BMC answered for ``what`` (status, sel, sensors, firmware), read once."""
        if what not in self._raw:
            reader = {"status": self._status_doc, "sel": self._sel_doc, "sensors": self._sensors_doc,
                      "firmware": self._firmware_doc}.get(what)
            if reader is None:
                raise ValueError(f"unknown BMC read {what!r}")
            self._raw[what] = json.dumps({"protocol": "redfish", "what": what, **reader()}, indent=1)
        return self._raw[what]

    def _status_doc(self) -> dict:
        managers = self.members(self.link(self.root, "Managers"), limit=1) if self.root.get("Managers") else []
        return {"system": self.system(), "manager": managers[0] if managers else None}

    def _sel_doc(self) -> dict:
        service = self.log_service()
        self.budget = http.MAX_ANSWER_BYTES
        try:
            entries = self.members(self.link(service, "Entries"))
        finally:
            self.budget = None
        return {"log_service": _bare(service), "entries": entries}

    def _sensors_doc(self) -> dict:
        chassis = self.chassis()
        doc: dict = {"chassis": chassis.get("Id"), "sensors": [], "power_supplies": [], "fans": []}
        if chassis.get("Sensors"):
            doc["sensors"] = self.members(self.link(chassis, "Sensors"))
        if chassis.get("PowerSubsystem"):
            power = self.get(self.link(chassis, "PowerSubsystem"))
            doc["power_supplies"] = self.members(self.link(power, "PowerSupplies")) if power.get("PowerSupplies") \
                else []
        elif chassis.get("Power"):  # deprecated since Redfish 2020.4, still what many BMCs serve
            doc["power_supplies"] = self.get(self.link(chassis, "Power")).get("PowerSupplies") or []
        if chassis.get("ThermalSubsystem"):
            thermal = self.get(self.link(chassis, "ThermalSubsystem"))
            doc["fans"] = self.members(self.link(thermal, "Fans")) if thermal.get("Fans") else []
        elif chassis.get("Thermal"):
            doc["fans"] = self.get(self.link(chassis, "Thermal")).get("Fans") or []
        return doc

    def _firmware_doc(self) -> dict:
        update = self.get(self.link(self.root, "UpdateService"))
        return {"members": self.members(self.link(update, "FirmwareInventory"))}

    # --- navigation --------------------------------------------------------------------------------------------

    def system(self, fresh: bool = False) -> dict:
        path = self.link(self.root, "Systems")
        members = self.members(path)
        if not members:
            raise self.config.fail(f"{path} lists no ComputerSystem")
        if not self.config.system:
            chosen = members[0]
        else:
            named = [m for m in members if m.get("Id") == self.config.system]
            if not named:
                found = ", ".join(str(m.get("Id")) for m in members[:10])
                raise self.config.fail(f"no ComputerSystem {self.config.system} in {path} (found: {found})")
            chosen = named[0]
        return self.get(self._path(chosen["@odata.id"]), fresh=True) if fresh else chosen

    def chassis(self) -> dict:
        linked = ((self.system().get("Links") or {}).get("Chassis") or [])
        if linked and isinstance(linked[0], dict) and linked[0].get("@odata.id"):
            return self.get(self._path(linked[0]["@odata.id"]))
        members = self.members(self.link(self.root, "Chassis"), limit=1)
        if not members:
            raise self.config.fail("/redfish/v1/Chassis lists no chassis")
        return members[0]

    def log_service(self) -> dict:
        services = self.members(self.link(self.system(), "LogServices"))
        chosen = (next((s for s in services if str(s.get("Id", "")).upper() == "SEL"
                        or s.get("LogEntryType") == "SEL"), None)
                  or next((s for s in services if s.get("Id") == "EventLog"), None)
                  or (services[0] if len(services) == 1 else None))
        if chosen is None:
            found = ", ".join(str(s.get("Id")) for s in services) or "none"
            raise self.config.fail(f"no SEL or EventLog among the system's LogServices (found: {found})")
        return chosen

    def link(self, resource: dict, name: str) -> str:
        value = resource.get(name)
        if not isinstance(value, dict) or not isinstance(value.get("@odata.id"), str):
            where = resource.get("@odata.id", "the service root")
            raise self.config.fail(f"{where} has no {name} link")
        return self._path(value["@odata.id"])

    def members(self, path: str, limit: int | None = None) -> list[dict]:
        """Every member of the collection at ``path``, across its pages, each expanded."""
        out: list[dict] = []
        seen: set[str] = set()
        page: str | None = path
        while page and len(seen) < MAX_PAGES and (limit is None or len(out) < limit):
            if page in seen:
                raise self.config.fail(f"{path}: Members@odata.nextLink loops back to {page}")
            seen.add(page)
            body = self.get(page)
            members = body.get("Members")
            if not isinstance(members, list):
                raise self.config.fail(f"{page} is not a Redfish collection (no Members list)")
            for member in members[:None if limit is None else limit - len(out)]:
                out.append(self._expanded(member, page))
            following = body.get("Members@odata.nextLink") or body.get("@odata.nextLink")
            page = self._path(following) if isinstance(following, str) else None
        return out

    def _expanded(self, member, page: str) -> dict:
        if not isinstance(member, dict) or not isinstance(member.get("@odata.id"), str):
            raise self.config.fail(f"{page}: a member without @odata.id")
        if len([k for k in member if not k.startswith("@odata")]) > 0:
            return member  # the service expanded it already
        return self.get(self._path(member["@odata.id"]))

    def _path(self, link: str) -> str:
        parts = urlsplit(link)
        if parts.netloc and parts.hostname != self.config.hostname:
            raise self.config.fail(f"a link leaves this BMC ({parts.netloc}); not followed")
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if not parts.path.startswith("/redfish/v1"):
            raise self.config.fail(f"a link outside /redfish/v1 ({link[:80]}); not followed")
        return path

    # --- HTTP --------------------------------------------------------------------------------------------------

    budget: int | None = None  # bytes left for the read in progress (the SEL), None: no overall cap

    def get(self, path: str, fresh: bool = False) -> dict:
        if path in self._cache and not fresh:
            return self._cache[path]
        response = self._request("GET", path)
        body = self._json(path, response)
        self._cache[path] = body
        return body

    def _request(self, method: str, path: str, body: dict | None = None):
        from redfish.rest.v1 import RetriesExhaustedError

        call = self.client.get if method == "GET" else self.client.post
        try:
            response = self.bounded.call(call, path, **({"body": body} if body is not None else {}))
        except (RetriesExhaustedError, TimeoutError) as exc:
            raise self.config.fail(f"{method} {path}: {http.explain(exc, self.timeout_s)}") from None
        if path == ROOT:
            self._root_resp = response
        size = len(response.read or b"")
        if self.budget is not None:
            self.budget -= size
            if self.budget < 0:
                cap = http.MAX_ANSWER_BYTES // 2**20
                raise self.config.fail(f"the SEL is over the {cap} MiB cap (more than {http.MAX_ANSWER_BYTES} "
                                       f"bytes read by {path}); clear it or read it with the vendor's tool")
        return response

    def _json(self, path: str, response) -> dict:
        status = response.status
        if status == 401:
            raise self.config.fail(f"GET {path}: HTTP 401: the session was refused (wrong password or expired)")
        if status >= 400:
            raise self.config.fail(f"GET {path}: HTTP {status}{_message(response)}")
        kind = (response.getheader("content-type") or "").split(";")[0].strip().lower()
        text = response.read if isinstance(response.read, str) else (response.read or b"").decode("utf-8", "replace")
        if kind == "text/html" or text.lstrip()[:1] == "<":
            raise self.config.fail(f"GET {path}: answered HTML ({kind or 'no content type'}), not Redfish JSON")
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise self.config.fail(f"GET {path}: answered invalid JSON ({str(exc).split(':')[0]})") from None
        if not isinstance(body, dict):
            raise self.config.fail(f"GET {path}: answered JSON that is not an object")
        return body

    # --- power -------------------------------------------------------------------------------------------------

    def power(self, action: str) -> None:
        """on, off, cycle (PowerCycle; ForceOff then On where the BMC does not allow it), reset (ForceRestart)."""
        if action not in RESET_TYPES:
            raise ValueError(f"unknown power action {action!r}")
        system = self.system(fresh=True)
        reset = (system.get("Actions") or {}).get("#ComputerSystem.Reset")
        if not isinstance(reset, dict) or not isinstance(reset.get("target"), str):
            raise self.config.fail("the ComputerSystem has no #ComputerSystem.Reset action")
        allowed = reset.get("ResetType@Redfish.AllowableValues")
        kind = RESET_TYPES[action]
        if action == "cycle" and isinstance(allowed, list) and kind not in allowed:
            self._reset(reset, "ForceOff", allowed)
            self._wait_state("Off")
            kind = "On"
        self._reset(reset, kind, allowed)

    def _reset(self, reset: dict, kind: str, allowed) -> None:
        if isinstance(allowed, list) and kind not in allowed:
            raise self.config.fail(f"Reset {kind} is not among the BMC's allowed reset types ({', '.join(allowed)})")
        target = self._path(reset["target"])
        response = self._request("POST", target, {"ResetType": kind})
        if response.status >= 400:
            raise self.config.fail(f"Reset {kind} refused (HTTP {response.status}){_message(response)}")

    def _wait_state(self, state: str) -> None:
        until = time.monotonic() + self.timeout_s
        while time.monotonic() < until:
            if self.system(fresh=True).get("PowerState") == state:
                return
            time.sleep(POLL_S)
        raise self.config.fail(f"PowerState did not become {state} within {self.timeout_s:g} s after ForceOff")

    def close(self) -> None:
        """Log out (the session's slot on the BMC is freed), bounded by one request's timeout: a deadline a step
        set (``set_deadline``) has passed by now and must not keep the logout from being sent."""
        self.bounded.until = None
        try:
            if not self.bounded.broken:
                self.bounded.call(self.client.logout)
        except Exception:  # noqa: BLE001 - a session left behind expires on the BMC; closing must not fail
            pass
        finally:
            self.bounded.close()


def _message(response) -> str:
    """': MESSAGE' from a Redfish error body (@Message.ExtendedInfo, else error.message), '' without one."""
    try:
        error = json.loads(response.read or b"{}").get("error") or {}
    except (ValueError, AttributeError):
        return ""
    infos = error.get("@Message.ExtendedInfo") if isinstance(error, dict) else None
    text = (infos[0].get("Message") if isinstance(infos, list) and infos and isinstance(infos[0], dict) else None) \
        or (error.get("message") if isinstance(error, dict) else None)
    return f": {' '.join(str(text).split())[:200]}" if text else ""


def _bare(resource: dict) -> dict:
    return {k: v for k, v in resource.items() if k in ("@odata.id", "Id", "Name", "LogEntryType", "MaxNumberOfRecords",
                                                      "OverWritePolicy", "DateTime", "DateTimeLocalOffset")}


class _Obj(dict):
    """The service root as the library reads it (``root.Links.Sessions``), for its login."""

    def __getattr__(self, name):
        value = self.get(name)
        if value is None:
            raise AttributeError(name)
        return _Obj(value) if isinstance(value, dict) else value

