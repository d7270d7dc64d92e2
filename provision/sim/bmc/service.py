"""One simulated BMC's Redfish service over HTTPS (http.server + ssl), with its faults.

Protocol behavior per DMTF DSP0266: the service root, ``/redfish``, ``$metadata`` and the OData service document
answer without authentication; everything else needs HTTP Basic or a session token (``X-Auth-Token``) from
``POST /redfish/v1/SessionService/Sessions`` (201, ``X-Auth-Token`` and ``Location``; ``DELETE`` on it logs out);
bad or missing credentials get 401 with ``WWW-Authenticate`` and a Redfish error body; responses carry
``OData-Version: 4.0``. The TLS handshake runs in the request's own thread, so a client that never speaks (or a BMC
that never answers: ``bmc_unresponsive``) holds one thread, never the server.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import select
import socket
import socketserver
import ssl
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from provision.sim.bmc import csdl as schemas, tree
from provision.sim.bmc.node import BmcNode
from provision.sim.bmc.resources import RESET_TYPES, ROOT, SYSTEM

USER = "admin"
OPEN = {"/redfish", ROOT, f"{ROOT}/$metadata", f"{ROOT}/odata"}
SESSIONS = f"{ROOT}/SessionService/Sessions"
HANG_S = 600.0  # how long bmc_unresponsive holds a connection it never answers
IO_TIMEOUT_S = 30.0
HTML = b"<!DOCTYPE html><html><head><title>MegaRAC SP-X</title></head><body>Loading...</body></html>\n"
GARBAGE = b'{"@odata.id": "/redfish/v1", "Name": "Root Service", "Systems": {"@odata.id": \x00\x17'


def allow(path: str) -> str:
    """The methods a URI takes (DSP0266 "Allow" response header)."""
    if path in (SESSIONS, SESSIONS + "/Members"):
        return "GET, HEAD, POST"
    if path.startswith(SESSIONS + "/"):
        return "GET, HEAD, DELETE"
    return "POST" if "/Actions/" in path else "GET, HEAD"


def described_by(body: object) -> str | None:
    """The Link header naming a resource's JSON schema (DSP0266 "Link header": rel=describedby); nothing fetches it."""
    kind = body.get("@odata.type", "") if isinstance(body, dict) else ""
    parts = kind.lstrip("#").split(".")
    if len(parts) == 3:
        return f"<https://redfish.dmtf.org/schemas/v1/{parts[0]}.{parts[1]}.json>; rel=describedby"
    return f"<https://redfish.dmtf.org/schemas/v1/{parts[0]}.json>; rel=describedby" if parts[0] else None


def error(code: str, message: str) -> dict:
    return {"error": {"code": f"Base.1.8.{code}", "message": message,
                      "@Message.ExtendedInfo": [{"MessageId": f"Base.1.8.{code}", "Message": message}]}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "BmcServer"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        pass

    def _send(self, status: int, body: object = None, headers: dict | None = None, kind: str = "application/json"):
        data = body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("OData-Version", "4.0")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        if status in (200, 405):
            self.send_header("Allow", allow(self._path()[0]))
        link = described_by(body) if status == 200 else None
        if link:
            self.send_header("Link", link)
            self.send_header("ETag", f'W/"{hashlib.sha256(data).hexdigest()[:16]}"')
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _path(self) -> tuple[str, str]:
        path, _, query = self.path.partition("?")
        path = path.rstrip("/") or "/"
        return path, query

    def parse_request(self) -> bool:
        """Parse the request line and headers, then read the whole body, whatever the method does with it (a body
        left unread would be taken for the next request on the kept-alive connection)."""
        if not super().parse_request():
            return False
        try:
            length = max(0, int(self.headers.get("Content-Length") or 0))
        except ValueError:
            length = 0
        self.raw = self.rfile.read(length) if length else b""
        return True

    def _body(self) -> dict:
        try:
            data = json.loads(self.raw or b"{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _authorized(self) -> bool:
        bmc = self.server.bmc
        token = self.headers.get("X-Auth-Token")
        if token:
            return any(hmac.compare_digest(token, t) for t in list(bmc.sessions))
        scheme, _, value = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(value).decode().partition(":")
        except ValueError:
            return False
        return user == USER and hmac.compare_digest(password.encode(), bmc.password.encode())

    def _faulty(self, faults: dict) -> bool:
        if "bmc_html" in faults:
            self._send(200, HTML, kind="text/html")
        elif "bmc_garbage" in faults:
            self._send(200, GARBAGE)
        else:
            return False
        return True

    def _guard(self, path: str) -> dict | None:
        """The active faults, or None once this request has been answered (a faulty BMC or a 401)."""
        faults = self.server.bmc.faults()
        if self._faulty(faults):
            return None
        if self.headers.get("OData-Version", "4.0") != "4.0":
            self._send(412, error("HeaderInvalid", "Only OData-Version 4.0 is supported."))
            return None
        if path not in OPEN and not path.startswith(schemas.PREFIX) and not self._authorized():
            self._send(401, error("NoValidSession", "There is no valid session established with the implementation."),
                       {"WWW-Authenticate": 'Basic realm="Redfish"'})
            return None
        return faults

    def do_GET(self) -> None:
        path, query = self._path()
        faults = self._guard(path)
        if faults is None:
            return
        if path == "/redfish":
            return self._send(200, {"v1": f"{ROOT}/"})
        if path == f"{ROOT}/$metadata":
            return self._send(200, schemas.metadata().encode(), kind="application/xml")
        if path == f"{ROOT}/odata":
            return self._send(200, schemas.service_document())
        if path.startswith(schemas.PREFIX):
            text = schemas.read(path[len(schemas.PREFIX):])
            if text is None:
                return self._missing()
            return self._send(200, text.encode(), kind="application/xml")
        bmc = self.server.bmc
        body = tree.resource(path, query, bmc.view(faults), list(bmc.sessions.values()))
        if body is None:
            return self._missing()
        return self._send(200, body)

    do_HEAD = do_GET

    def _missing(self) -> None:
        self._send(404, error("ResourceMissingAtURI", f"The resource at the URI {self.path} was not found."))

    def do_POST(self) -> None:
        path, _ = self._path()
        if path in (SESSIONS, SESSIONS + "/Members"):  # logging in needs no credentials but those in the body
            return self._login(self._body())
        faults = self._guard(path)
        if faults is None:
            return
        body = self._body()
        bmc = self.server.bmc
        if path == f"{SYSTEM}/Actions/ComputerSystem.Reset":
            reset_type = str(body.get("ResetType"))
            if reset_type not in RESET_TYPES:
                return self._send(400, error("ActionParameterValueNotInList",
                                             f"The value {reset_type} for the parameter ResetType is not allowed."))
            bmc.reset(reset_type, faults)
            return self._send(204)
        if path == f"{tree.SEL}/Actions/LogService.ClearLog":
            bmc.sel.clear()
            return self._send(204)
        return self._not_allowed(path)

    def _not_allowed(self, path: str) -> None:
        """405 with Allow for a resource that exists, else 404."""
        bmc = self.server.bmc
        if path not in OPEN and tree.resource(path, "", bmc.view(bmc.faults()), list(bmc.sessions.values())) is None:
            return self._missing()
        self._send(405, error("OperationNotAllowed", f"{self.command} is not allowed on {path}."))

    def _login(self, body: dict) -> None:
        bmc = self.server.bmc
        if self._faulty(bmc.faults()):
            return
        password = str(body.get("Password", ""))
        if body.get("UserName") != USER or not hmac.compare_digest(password.encode(), bmc.password.encode()):
            return self._send(401, error("NoValidSession", "Invalid user name or password."),
                              {"WWW-Authenticate": 'Basic realm="Redfish"'})
        token, sid = secrets.token_hex(16), secrets.token_hex(5)
        bmc.sessions[token] = sid
        uri = f"{SESSIONS}/{sid}"
        self._send(201, {"@odata.id": uri, "@odata.type": "#Session.v1_0_0.Session", "Id": sid,
                         "Name": f"Session {sid}", "UserName": USER}, {"X-Auth-Token": token, "Location": uri})

    def do_DELETE(self) -> None:
        path, _ = self._path()
        faults = self._guard(path)
        if faults is None:
            return
        bmc = self.server.bmc
        sid = path.rpartition("/")[2]
        token = next((t for t, s in bmc.sessions.items() if s == sid), None)
        if not path.startswith(SESSIONS + "/") or token is None:
            return self._not_allowed(path)
        del bmc.sessions[token]
        self._send(204)

    def do_PATCH(self) -> None:
        path, _ = self._path()
        if self._guard(path) is not None:
            self._not_allowed(path)

    do_PUT = do_PATCH


class BmcServer(ThreadingHTTPServer):
    """One BMC's HTTPS server on (address, port); ``contexts`` (valid, expired) TLS contexts."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, bmc: BmcNode, address: str, port: int, contexts: tuple[ssl.SSLContext, ssl.SSLContext]):
        self.bmc, self.contexts = bmc, contexts
        super().__init__((address, port), Handler)

    def server_bind(self) -> None:
        """Bind without http.server's ``socket.getfqdn`` (a reverse DNS query: the simulator stays off the network)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    def finish_request(self, request, client_address) -> None:
        faults = self.bmc.faults()
        if "bmc_unresponsive" in faults:
            return _hold(request)
        request.settimeout(IO_TIMEOUT_S)
        try:
            tls = self.contexts["bmc_cert_expired" in faults].wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)  # type: ignore[arg-type]
        except (OSError, ssl.SSLError):
            pass
        finally:
            tls.close()


def _hold(sock: socket.socket) -> None:
    """Keep a connection open, reading nothing back, until the client gives up or ``HANG_S`` passes."""
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], 1.0)
        if ready:
            try:
                if not sock.recv(4096, socket.MSG_PEEK):
                    return
            except OSError:
                return
            time.sleep(1.0)  # data waits unread; poll again for the client's close


def context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx
