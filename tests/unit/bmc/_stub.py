"""A tiny HTTPS Redfish stub on 127.0.0.1 for the client's error paths only (navigation is tested on DMTF's mockup):
certificates made with ``cryptography`` (a CA, a server certificate for 127.0.0.1, optionally expired or from
another CA), and a server whose answers a test chooses (``Stub.mode``)."""
from __future__ import annotations

import datetime as dt
import http.server
import ipaddress
import json
import socket
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "127.0.0.1"
ROOT = {"@odata.id": "/redfish/v1/", "Id": "RootService", "RedfishVersion": "1.15.0",
        "Systems": {"@odata.id": "/redfish/v1/Systems"}, "Links": {"Sessions": {"@odata.id":
                                                                               "/redfish/v1/SessionService/Sessions"}}}


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def certificates(folder: Path, expired: bool = False, other_ca: bool = False) -> tuple[Path, Path, Path]:
    """(ca.pem the client trusts, server cert.pem, key.pem)."""
    now = dt.datetime.now(dt.timezone.utc)
    ca_key, signer_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("test rack CA")).issuer_name(_name("test rack CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    issuer_key = signer_key if other_ca else ca_key
    issuer = _name("another CA") if other_ca else _name("test rack CA")
    key = ec.generate_private_key(ec.SECP256R1())
    before, after = (now - dt.timedelta(days=30), now - dt.timedelta(days=1)) if expired else \
        (now - dt.timedelta(days=1), now + dt.timedelta(days=30))
    cert = (x509.CertificateBuilder().subject_name(_name(HOST)).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(before).not_valid_after(after)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST))]), critical=False)
            .sign(issuer_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


class Stub:
    """An HTTPS server on 127.0.0.1 (a free port). ``mode``: ok, html, garbage, huge (the SEL entries answer
    ``huge_bytes`` bytes), refuse_reset; ``password`` the one it accepts."""

    def __init__(self, folder: Path, password: str, mode: str = "ok", expired: bool = False, other_ca: bool = False,
                 huge_bytes: int = 10 * 2**20, content_length: bool = True):
        self.ca, cert, key = certificates(folder, expired, other_ca)
        self.mode, self.password, self.huge_bytes, self.content_length = mode, password, huge_bytes, content_length
        self.requests: list[tuple[str, str, str]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                stub.requests.append(("GET", self.path, ""))
                stub.answer_get(self)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                stub.requests.append(("POST", self.path, body))
                stub.answer_post(self, body)

            def do_DELETE(self):
                stub.requests.append(("DELETE", self.path, ""))
                self.send_response(204)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def send(handler, status: int, body, kind: str = "application/json", length: bool = True) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        if length:
            handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def answer_get(self, handler) -> None:
        path = handler.path
        if self.mode == "html":
            return self.send(handler, 200, b"<html><body>Please log in</body></html>", "text/html")
        if self.mode == "garbage" and path == "/redfish/v1/":
            return self.send(handler, 200, b'{"@odata.id": "/redfish/v1/", "Systems": {', "application/json")
        if path == "/redfish/v1/":
            return self.send(handler, 200, ROOT)
        if handler.headers.get("X-Auth-Token") != "token-1234":
            return self.send(handler, 401, {"error": {"message": "no session"}})
        if path == "/redfish/v1/Systems":
            return self.send(handler, 200, {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]})
        if path == "/redfish/v1/Systems/1":
            return self.send(handler, 200, {"@odata.id": "/redfish/v1/Systems/1", "Id": "1", "PowerState": "On",
                                            "LogServices": {"@odata.id": "/redfish/v1/Systems/1/LogServices"},
                                            "Actions": {"#ComputerSystem.Reset": {
                                                "target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"}}})
        if path == "/redfish/v1/Systems/1/LogServices":
            return self.send(handler, 200, {"Members": [{"@odata.id": "/redfish/v1/Systems/1/LogServices/SEL",
                                                         "Id": "SEL", "LogEntryType": "SEL", "Entries": {
                                                             "@odata.id": "/redfish/v1/Systems/1/LogServices/SEL/"
                                                                          "Entries"}}]})
        if path == "/redfish/v1/Systems/1/LogServices/SEL/Entries":
            entry = {"@odata.id": "/x", "Id": "1", "Message": "x" * 200, "Severity": "OK"}
            count = self.huge_bytes // len(json.dumps(entry)) + 1
            return self.send(handler, 200, {"Members": [entry] * count}, length=self.content_length)
        return self.send(handler, 404, {"error": {"message": "not found"}})

    def answer_post(self, handler, body: str) -> None:
        if handler.path == "/redfish/v1/SessionService/Sessions":
            if json.loads(body or "{}").get("Password") != self.password:
                return self.send(handler, 401, {"error": {"@Message.ExtendedInfo": [
                    {"MessageId": "Base.1.8.NoValidSession", "Message": "There is no valid session."}]}})
            handler.send_response(201)
            handler.send_header("X-Auth-Token", "token-1234")
            handler.send_header("Location", "/redfish/v1/SessionService/Sessions/1")
            handler.send_header("Content-Length", "2")
            handler.end_headers()
            handler.wfile.write(b"{}")
            return None
        return self.send(handler, 400, {"error": {"@Message.ExtendedInfo": [
            {"Message": "The request failed due to an internal service error."}]}})


class Silent:
    """A TCP listener on 127.0.0.1 that accepts and never answers (a hung BMC's web server)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self):
        for conn in self.held:
            conn.close()
        self.sock.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]
