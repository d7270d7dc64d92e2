"""Platform applicability (issue 24 item 4): every check and every narrower rule declares the platform traits it needs
(``Check.needs``, ``Check.rules``), the traits are derived from the profile (``Profile.has``), and a check that cannot
apply is skipped with the reason, never passed or failed. The false-positive fixtures themselves are cases of
tests/data/<check>/cases.yaml (test_check_data.py); these are the properties over the registry and the profiles."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from provision import checks, profiles, targets
from provision.checks import plausible
from provision.checks.base import Check
from provision.profiles import install_facts
from provision.engine.verdict import not_applicable
from provision.results.model import Finding, Outcome, Reference

from tests.unit.checks.declared import variant

ROOT = Path(__file__).resolve().parents[3]
PROFILES = {name: profiles.load(name) for name in profiles.names()}


def test_the_traits_of_the_bundled_profiles_come_from_their_facts():
    traits = {name: set(p.traits()) for name, p in PROFILES.items()}
    assert traits["gb200-nvl72"] == {"gpu", "hca", "nvlink", "ecc", "nvlink_domain", "imex", "c2c_gpu", "grace_host",
                                     "mndiag"}
    assert traits["b200-hgx"] == traits["h100-sxm5-80g-ndr"] == {"gpu", "hca", "nvlink", "ecc", "nvswitch", "pcie_gpu"}
    assert traits["a100-pcie-40g-hdr"] == {"gpu", "hca", "ecc", "pcie_gpu"}  # links: 0, no NVSwitch
    assert traits["rtx4090-pcie"] == {"gpu", "pcie_gpu"}
    for name, profile in PROFILES.items():  # a GPU reaches its host one way
        assert profile.has("pcie_gpu") != profile.has("c2c_gpu"), name
    gb200 = PROFILES["gb200-nvl72"]
    no_imex = variant(gb200, "gb200-no-imex", {"nvlink_domain.imex": False})
    assert no_imex.has("nvlink_domain") and not no_imex.has("imex")
    assert gb200.gpu.host_link == "c2c" and gb200.host is not None and (gb200.host.cpu, gb200.host.arch) == (
        "Grace", "aarch64") and "c2c_mode" in gb200.host.source + Path(gb200.path).read_text()


def test_an_unknown_trait_is_refused_by_profile_and_check():
    with pytest.raises(ValueError, match="unknown feature 'nvswtich'"):
        PROFILES["b200-hgx"].has("nvswtich")
    with pytest.raises(ValueError, match="check x: unknown platform traits c2c, nvswtich"):
        Check(id="x", tool="t", steps=lambda p, t: [], judge=lambda c: [], order=1, needs=("gpu", "nvswtich"),
              rules={"r": ("c2c",)})


def test_every_check_and_rule_declares_known_traits_and_shows_them():
    table = checks.markdown_table()
    for check in checks.registry().values():
        declared = check.needs + sum(check.rules.values(), ())
        assert set(declared) <= set(profiles.FEATURES), check.id
        assert f"| {checks.platforms(check)} |" in table, check.id
    assert "| `gpu_health` | node | nvidia-smi -q -x | gpu; rule pcie: pcie_gpu |" in table
    assert "| `nvlink` | node | nvidia-smi nvlink -s | gpu, nvlink |" in table


def _site_check(folder: Path, name: str, needs: tuple[str, ...]) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(f'''\
        """{name}: a site's check that needs {', '.join(needs)}."""
        from provision.checks.base import Check, Step

        CHECK = Check(id="{name}", tool="true", order=48, needs={needs!r},
                      steps=lambda profile, host: [Step("", ["true"], parser="nvidia-smi-driver")],
                      judge=lambda ctx: [])
        '''))


def test_no_check_needing_an_nvlink_domain_applies_where_there_is_none(tmp_path, monkeypatch):
    """IMEX "unhealthy" on nodes with no NVLink domain: a check that needs one (the imex check, a site's) is skipped
    on every profile without one, saying so, and applies on the GB200 tray."""
    _site_check(tmp_path, "site_imex", ("nvlink_domain",))
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    registry = checks.registry()
    for check in registry.values():  # the imex check (issue 24) and any other reading the IMEX daemon declares it
        if "imex" in check.id or "imex" in check.tool:
            assert {"nvlink_domain", "imex"} & set(check.needs), check.id
    needing = [c for c in registry.values() if {"nvlink_domain", "imex"} & set(c.needs)]
    assert {"site_imex", "imex"} <= {c.id for c in needing}  # imex: the check of issue 24
    for name, profile in PROFILES.items():
        for check in needing:
            skipped = not_applicable(check, ("n1",), check.scope, profile)
            if profile.nvlink_domain is None:
                assert skipped is not None and skipped.outcome is Outcome.SKIPPED, (name, check.id)
                assert f"not applicable to profile {name}: needs " in skipped.message
                assert "NVLink domain" in skipped.message
            else:
                assert skipped is None, (name, check.id)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_each_check_is_judged_only_where_it_applies(name):
    """The engine's first stage on every bundled profile: a check whose traits the profile lacks is SKIPPED with each
    missing trait named; one it has runs (its steps build)."""
    profile = PROFILES[name]
    for check in checks.registry().values():
        skipped = not_applicable(check, ("n1",), check.scope, profile)
        missing = [need for need in check.needs if not profile.has(need)]
        assert (skipped is None) == (not missing), (check.id, missing)
        for need in missing:
            assert f"needs {need}: {profiles.PLATFORMS[need]}" in skipped.message  # type: ignore[union-attr]


def test_fabric_manager_is_wanted_only_on_an_nvswitch_board():
    """Fabric Manager "inactive" on GB200 (leptonai/gpud#1106: GB200 skips fabric-manager activeness): the roles'
    switch (install_facts.switches, which playbooks/group_vars/all.yml hands them) is the profile's nvswitch trait, so
    a GB200 tray (nvlink_domain, gpu.nvswitch false) installs and starts no host Fabric Manager, an HGX B200 does."""
    for name, profile in PROFILES.items():
        assert install_facts.switches(profile.data)["fabricmanager"] == profile.has("nvswitch"), name
    assert not PROFILES["gb200-nvl72"].has("nvswitch") and PROFILES["b200-hgx"].has("nvswitch")
    stack = checks.registry()["stack"]  # the stack check asks for no Fabric Manager package anywhere
    for step in stack.steps(PROFILES["gb200-nvl72"], None):
        assert not any("fabricmanager" in arg or "fabric-manager" in arg for arg in step.argv)


def test_a_c2c_gpu_runs_no_pcie_gpu_step_and_its_h2d_is_not_bounded_by_pcie():
    pcie_link = checks.registry()["pcie_link"]
    assert [s.key for s in pcie_link.steps(PROFILES["gb200-nvl72"], None)] == ["hca"]
    assert [s.key for s in pcie_link.steps(PROFILES["b200-hgx"], None)] == ["gpu", "hca"]
    assert "needs pcie_gpu: GPUs on a PCIe host link" in pcie_link.not_applicable(PROFILES["gb200-nvl72"], "gpu")
    # NVLink-C2C carries host<->device copies at up to 450 GB/s a direction (GB200: 900 GB/s bidirectional): the
    # PCIe Gen5 x16 ceiling (63 GB/s) is no bound there; on a PCIe-hosted B200 it is.
    ref = Reference(value=300.0, lower=-0.1, upper=None, unit="GB/s", source="test")
    h2d = Finding(device="GPU0", metric="h2d_GBps", value=400.0, ok=True, unit="GB/s", reference=ref)
    nvbandwidth = checks.registry()["nvbandwidth"]
    assert plausible.ceiling(nvbandwidth, h2d, PROFILES["b200-hgx"])[0] < 64  # type: ignore[index]
    assert plausible.beyond(nvbandwidth, [h2d], PROFILES["gb200-nvl72"]) == []


DOMAIN_CHECK = '''
"""site_domain: a site's check of the NVLink domain (a test)."""
from provision.checks.base import Check, Step
from provision.checks.rules import expect


def parse(text):
    return {"tool": "domain", "said": text.strip()}


CHECK = Check(id="site_domain", tool="domain", order=47, needs=("nvlink_domain",), parsers={"domain": parse},
              steps=lambda profile, host: [Step("", ["python3", "-c", "print('ok')"], parser="domain")],
              judge=lambda ctx: [expect("node", "said", ctx.parsed[""]["said"], "ok", "SITE_DOMAIN", "ask")])
'''


def test_the_burnin_skips_a_check_where_its_platform_is_not_and_runs_it_where_it_is(tmp_path, monkeypatch):
    """Through the engine (a local transport): on an HGX H100 the domain check is skipped saying which trait is
    missing, on a GB200 tray it runs and passes; neither is a failure."""
    from provision.engine import burnin
    from provision.engine.control import Control
    from provision.inventory import Host
    from provision.results.model import HostRecord, Run
    from provision.results.store import RunStore
    from tests.unit.engine.local import LocalTransport

    (tmp_path / "site_domain.py").write_text(DOMAIN_CHECK)
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    hosts = [Host(n, "127.0.0.1", 22, "root", None, None, p) for n, p in (("n1", "h100-sxm5-80g-ndr"),
                                                                         ("n2", "gb200-nvl72"))]
    rundir = RunStore(tmp_path / "runs").create("platforms")
    run = Run(run_id="platforms", phases=["burnin"], hosts={h.name: HostRecord(h.profile) for h in hosts})
    results = {r.host: r for r in burnin.run(targets.build(hosts), burnin.BurninRequest(["site_domain"]),
                                                      LocalTransport(), burnin.Sink(rundir, run.hosts, Control(
                                                          progress=lambda line: None))).results}
    assert results["n1"].outcome is Outcome.SKIPPED and results["n1"].message.startswith(
        "not applicable to profile h100-sxm5-80g-ndr: needs nvlink_domain: a multi-node NVLink domain")
    assert results["n2"].outcome is Outcome.PASS, results["n2"].message
