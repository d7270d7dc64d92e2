"""What DMTF's ``redfish`` library (3.x) leaves to its caller, done here once for ``provision.bmc.redfish``.

Read in the library's source (redfish/rest/v1.py, ``RestClientBase._rest_request``), and why each matters:

- It verifies TLS only when given ``cafile`` (``verify = False`` otherwise) and silences urllib3's warning about
  it. ``cafile`` is therefore always given: the inventory's ``provision_bmc_ca_file``, else the system trust store
  (``system_ca_file``); verification is off only with ``--insecure-bmc``.
- ``timeout`` is requests' per-socket-operation timeout, not a bound on a request: a BMC that trickles bytes
  never trips it, and ``max_retry`` defaults to 10 retries with a 1 s sleep after each timeout (11 x the timeout
  for a BMC that accepts TCP and never answers). Retries are set to 0 and each call runs in a worker thread the
  caller waits on for at most the timeout (``Bounded``): a hung BMC costs one timeout, then one line.
- It reads each answer whole into memory. ``CappedAdapter`` (mounted through the library's ``https_adapter``)
  streams it instead and stops at ``MAX_ANSWER_BYTES`` (a Content-Length over it is refused before the body).
- Its logger writes whole answers at ERROR (an 8 MiB HTML page to stderr) and headers, session token included,
  at DEBUG; it is silenced (``quiet``): this package says what went wrong in one line of its own.
- requests reads proxies and .netrc credentials from the environment; the BMC is reached directly
  (``trust_env`` off), so a proxy's credentials or a netrc password are never sent to it.
"""
from __future__ import annotations

import logging
import os
import ssl
import threading
import time

import requests
from requests.adapters import HTTPAdapter

MAX_ANSWER_BYTES = 8 * 2**20  # a week of a busy SEL in Redfish JSON is well under 1 MiB; 8 MiB is not a SEL
CHUNK_BYTES = 64 * 1024


class TooLarge(requests.exceptions.RequestException):
    """An answer over ``MAX_ANSWER_BYTES``: ``size`` bytes said or read."""

    def __init__(self, size: int, said: bool):
        super().__init__(f"answer over {MAX_ANSWER_BYTES} bytes")
        self.size, self.said = size, said


class CappedAdapter(HTTPAdapter):
    """Streams every answer and keeps at most ``MAX_ANSWER_BYTES`` of it; raises TooLarge past that."""

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        response = super().send(request, stream=True, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        said = response.headers.get("Content-Length", "")
        if said.isdigit() and int(said) > MAX_ANSWER_BYTES:
            response.close()
            raise TooLarge(int(said), said=True)
        body, size = [], 0
        try:
            for chunk in response.raw.stream(CHUNK_BYTES, decode_content=True):
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise TooLarge(size, said=False)
                body.append(chunk)
        finally:
            response.close()
        response._content = b"".join(body)  # what requests itself sets once it has read the body
        response._content_consumed = True
        return response


class Bounded:
    """Runs each call in a daemon thread and waits at most ``timeout_s`` for it (module docstring). A call that
    outlives it is abandoned (a daemon thread: it never holds the process at exit; its socket timeout ends it)
    and ``TimeoutError`` is raised; nothing more goes to that BMC (``broken``)."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.broken = False
        self.until: float | None = None  # time.monotonic() by which a whole read must end (``set_deadline``)

    def call(self, fn, *args, **kwargs):
        if self.broken:
            raise TimeoutError("an earlier request is still unanswered")
        wait = self.timeout_s if self.until is None else min(self.timeout_s, self.until - time.monotonic())
        if wait <= 0:
            raise TimeoutError("the read's time is up")
        box: dict = {}

        def work() -> None:
            try:
                box["value"] = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as it is
                box["error"] = exc

        worker = threading.Thread(target=work, name="bmc-request", daemon=True)
        worker.start()
        worker.join(wait)
        if worker.is_alive():
            self.broken = True
            raise TimeoutError(f"no answer within {self.timeout_s:g} s")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def close(self) -> None:
        pass


def system_ca_file() -> str:
    """The system's trust store as one PEM file (OpenSSL's default; else certifi's bundle that requests ships)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (os.environ.get(paths.openssl_cafile_env or ""), paths.cafile, paths.openssl_cafile):
        if candidate and os.path.isfile(candidate):
            return candidate
    return requests.certs.where()


def quiet() -> None:
    """Silence the library's logger (module docstring); idempotent."""
    log = logging.getLogger("redfish")
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())
    log.propagate = False
    log.setLevel(logging.CRITICAL + 1)


def tls_reason(text: str) -> str:
    """One line for an SSL verification failure, naming the cause when OpenSSL's message names it."""
    low = text.lower()
    if "certificate has expired" in low:
        return "TLS: the BMC's certificate has expired"
    if "not yet valid" in low:
        return "TLS: the BMC's certificate is not yet valid (check the clocks)"
    if "hostname mismatch" in low or "ip address mismatch" in low or "doesn't match" in low:
        return "TLS: the BMC's certificate does not name this address"
    if "self-signed" in low or "self signed" in low or "unable to get local issuer" in low or "unknown ca" in low:
        return "TLS: the BMC's certificate is not signed by a trusted CA"
    if "certificate verify failed" in low:
        return "TLS: the BMC's certificate could not be verified"
    return "TLS handshake failed"


def explain(exc: BaseException, timeout_s: float) -> str:
    """One line for a failure of a request (the library wraps it in RetriesExhaustedError's ``__cause__``)."""
    cause = exc.__cause__ if exc.__cause__ is not None and not isinstance(exc, requests.RequestException) else exc
    if isinstance(cause, TooLarge):
        how = "says" if cause.said else "sent at least"
        return f"the answer is over the {MAX_ANSWER_BYTES // 2**20} MiB cap (it {how} {cause.size} bytes)"
    if isinstance(cause, requests.exceptions.SSLError):
        return tls_reason(str(cause))
    if isinstance(cause, (requests.exceptions.Timeout, TimeoutError)):
        return f"no answer within {timeout_s:g} s"
    text = str(cause)
    if isinstance(cause, requests.exceptions.ConnectionError):
        if "refused" in text.lower():
            return "connection refused (nothing listens there)"
        if "name or service not known" in text.lower() or "nodename nor servname" in text.lower():
            return "cannot resolve the BMC's name"
        if "timed out" in text.lower():
            return f"no answer within {timeout_s:g} s"
        return "cannot connect: the connection failed or was closed"
    return f"cannot connect: {type(cause).__name__}"
