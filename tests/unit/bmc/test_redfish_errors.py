"""Every way a BMC fails is one line "HOST: BMC ADDRESS: what", through the real library and a real HTTPS
stub on 127.0.0.1 (tests/unit/bmc/_stub.py): wrong password, TLS (expired, unknown CA), refused, hung, HTML,
garbage JSON, a SEL over the cap. No password in any of them."""
from __future__ import annotations


import pytest

from provision.bmc.config import BmcConfig
from provision.bmc.redfish import RedfishBmc
from provision.errors import BmcError
from tests.unit.bmc import _stub
from tests.unit.bmc.conftest import PASSWORD


def config(port: int, password_file: str, ca: str | None, **kw) -> BmcConfig:
    return BmcConfig(host="node01", address=f"127.0.0.1:{port}", protocol="redfish", hostname="127.0.0.1",
                     port=port, username="admin", password_file=password_file, ca_file=ca, **kw)


@pytest.fixture
def stub(tmp_path):
    made = []

    def start(**kw):
        server = _stub.Stub(tmp_path, PASSWORD, **kw)
        made.append(server)
        return server
    yield start
    for server in made:
        server.close()


def failure(cfg: BmcConfig, timeout: float = 5, read=None) -> str:
    with pytest.raises(BmcError) as caught:
        bmc = RedfishBmc(cfg, timeout)
        (read or (lambda b: b.status()))(bmc)
    text = str(caught.value)
    assert "\n" not in text and PASSWORD not in text
    return text


def test_works_against_the_stub(stub, password_file):
    server = stub()
    bmc = RedfishBmc(config(server.port, password_file, str(server.ca)), 5)
    assert bmc.status()["power_state"] == "On"
    bmc.close()
    assert ("DELETE", "/redfish/v1/SessionService/Sessions/1", "") in server.requests
    login = next(r for r in server.requests if r[0] == "POST")
    assert PASSWORD in login[2]  # it went to the BMC, in the session POST's body, and nowhere else


def test_wrong_password(stub, tmp_path, password_file):
    server = stub()
    wrong = tmp_path / "wrong"
    wrong.write_text("not-it\n")
    wrong.chmod(0o600)
    text = failure(config(server.port, str(wrong), str(server.ca)))
    assert text == f"node01: BMC 127.0.0.1:{server.port}: login refused (HTTP 401): wrong username or password " \
                   "for admin"


def test_expired_certificate(stub, password_file):
    server = stub(expired=True)
    assert failure(config(server.port, password_file, str(server.ca))) == \
        f"node01: BMC 127.0.0.1:{server.port}: GET /redfish/v1/: TLS: the BMC's certificate has expired"


def test_unknown_ca(stub, password_file):
    server = stub(other_ca=True)
    assert failure(config(server.port, password_file, str(server.ca))).endswith(
        "TLS: the BMC's certificate is not signed by a trusted CA")


def test_the_system_store_does_not_trust_a_rack_ca(stub, password_file):
    server = stub()
    assert "TLS: the BMC's certificate is not signed by a trusted CA" in failure(
        config(server.port, password_file, None))


def test_insecure_skips_verification(stub, password_file):
    server = stub(expired=True)
    bmc = RedfishBmc(config(server.port, password_file, None, insecure=True), 5)
    assert bmc.status()["power_state"] == "On"


def test_connection_refused(password_file, tmp_path):
    port = _stub.closed_port()
    assert failure(config(port, password_file, None)) == \
        f"node01: BMC 127.0.0.1:{port}: GET /redfish/v1/: connection refused (nothing listens there)"


def test_a_hung_bmc_costs_one_timeout(password_file):
    silent = _stub.Silent()
    try:
        text = failure(config(silent.port, password_file, None), timeout=1)
        assert len(silent.held) == 1  # one connection, not the library's default of 11 tries (bench/bmc_timeouts.py)
        assert text.endswith("GET /redfish/v1/: no answer within 1 s")
    finally:
        silent.close()


def test_html(stub, password_file):
    server = stub(mode="html")
    assert failure(config(server.port, password_file, str(server.ca))).endswith(
        "GET /redfish/v1/: answered HTML (text/html), not Redfish JSON")


def test_garbage_json(stub, password_file):
    server = stub(mode="garbage")
    assert failure(config(server.port, password_file, str(server.ca))).endswith(
        "GET /redfish/v1/: answered invalid JSON (Expecting property name enclosed in double quotes)")


@pytest.mark.parametrize("length", [True, False])
def test_a_10_MB_sel_is_refused(stub, password_file, length):
    server = stub(content_length=length)
    text = failure(config(server.port, password_file, str(server.ca)), read=lambda b: b.log())
    assert "GET /redfish/v1/Systems/1/LogServices/SEL/Entries: the answer is over the 8 MiB cap" in text


def test_reset_refused(stub, password_file):
    server = stub()
    text = failure(config(server.port, password_file, str(server.ca)), read=lambda b: b.power("off"))
    assert text.endswith("Reset ForceOff refused (HTTP 400): The request failed due to an internal service error.")
