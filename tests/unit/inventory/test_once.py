"""Work once per distinct thing: the stack variables templated once per distinct set of inputs, the
inventory parsed once per run, each host's profile built once per run. Calls are counted (spies), never timed.
Addresses are unused loopback addresses (127.0.9.x): nothing listens there."""
import pytest

from provision import checks
from provision.commands._job import select
from provision import inventory as inv
from provision.inventory import _ansible, playvars
from provision.plan import manifest
from provision.commands._job.options import JobOptions

GROUP = """---
all:
  children:
    gpu:
      vars:
        provision_profile: h100-sxm5-80g-ndr
        provision_os: debian12
        driver_of_rack: "550.127.05"
      hosts:
"""


def inventory(tmp_path, hosts: dict[str, str]):
    """hosts.yml with one group of ``hosts`` (name -> extra YAML flow mapping entries)."""
    lines = [f"        {name}: {{ansible_host: 127.0.9.{i + 1}{', ' + extra if extra else ''}}}"
             for i, (name, extra) in enumerate(hosts.items())]
    (tmp_path / "hosts.yml").write_text(GROUP + "\n".join(lines) + "\n")
    return tmp_path


@pytest.fixture
def renders(monkeypatch):
    """The hosts each stack rendering was made for."""
    made, real = [], playvars._render
    monkeypatch.setattr(playvars, "_render", lambda session, variables, names, given, host, *rest:
                        made.append(host) or real(session, variables, names, given, host, *rest))
    return made


def stacks_uncached(path, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(playvars, "_inputs", lambda *args: None)
        return manifest.stacks([path])


def test_the_stack_is_templated_once_for_hosts_with_the_same_inputs(tmp_path, renders, monkeypatch):
    hosts = {f"n{i:02d}": f"provision_reference_overrides: {{ib_write_bw: {{bw_avg_Gbps: {{value: {360 + i}}}}}}}"
             for i in range(12)}  # each host has variables of its own, none the stack reads
    hosts |= {"d1": 'nvidia_driver_version: "{{ driver_of_rack }}", driver_of_rack: "550.90.07"',
              "d2": 'nvidia_driver_version: "{{ driver_of_rack }}", driver_of_rack: "550.90.07"',
              "d3": 'nvidia_driver_version: "{{ driver_of_rack }}"'}  # its group's value, through a template
    path = inventory(tmp_path, hosts)
    found, problems = manifest.stacks([path])
    assert not problems and renders == ["n00", "d1", "d3"]  # the group's stack, d1 and d2's, d3's
    assert {s.driver for h in ("d1", "d2") for s in found[h]} == {"550.90.07"}
    assert found["d3"][0].driver == "550.127.05" and found["n00"][0].driver != "550.90.07"
    assert found == stacks_uncached(path, monkeypatch)[0]  # the same stacks as templating every host


def test_a_template_reading_hostvars_is_templated_for_each_host(tmp_path, renders, monkeypatch):
    dynamic = 'nvidia_driver_version: "{{ hostvars[inventory_hostname].mine }}"'
    path = inventory(tmp_path, {f"n{i}": f'{dynamic}, mine: "550.{i}.1"' for i in range(4)})
    found, problems = manifest.stacks([path])
    assert not problems and len(renders) == 4
    assert [found[f"n{i}"][0].driver for i in range(4)] == [f"550.{i}.1" for i in range(4)]
    assert found == stacks_uncached(path, monkeypatch)[0]


@pytest.mark.parametrize("text, names", [
    ("{{ a.b | combine((c[d] | default({})).e) }}", {"a", "c", "d"}),
    ("plain text", set()),
    ("{% for x in xs %}{{ x ~ y }}{% endfor %}", {"xs", "x", "y"}),  # x counted too: only a larger key
])
def test_the_names_a_template_reads(text, names):
    assert playvars._names_in(text) == frozenset(names)


@pytest.mark.parametrize("text", ["{{ vars['a' ~ b] }}", "{{ lookup('ansible.builtin.vars', x) }}",
                                  "{{ query('varnames', '^a') }}", "{{ a ", "{{ hostvars[h].a }}"])
def test_a_template_whose_inputs_cannot_be_known_has_no_key(text):
    assert playvars._inputs({"v": text}, ["v"], "debian12", {}) is None


def test_a_run_parses_its_inventory_once(tmp_path, monkeypatch):
    path = inventory(tmp_path, {f"n{i:02d}": "" for i in range(20)})
    sessions, real = [], _ansible.Session.__init__
    monkeypatch.setattr(_ansible.Session, "__init__", lambda self, *a, **k: sessions.append(a) or real(self, *a, **k))
    quiet = lambda *args, **kwargs: None  # noqa: E731
    found = select.gpu_inventory([str(path)], None, inv.Vault(), quiet)
    hosts = select.selected(found, JobOptions(("install", "burnin")), None, quiet)  # plan gate
    registry = checks.registry()  # the quick set over the registry, in run order (its first checks: diagnostics)
    assert select.check_set("quick", hosts, None) == [c for c, check in registry.items() if "quick" in check.sets]
    assert len(hosts) == 20 and len(sessions) == 1


def test_a_run_builds_each_hosts_profile_once(tmp_path, monkeypatch):
    """From the inventory to the engine, each host's profile (its own overrides: no view to share) is built once, by
    the inventory's validation: the targets, the plan gate and the engine take that view (issue 35 item 1)."""
    from provision import profiles, targets
    from provision.engine import burnin
    from provision.engine.control import Control
    from provision.errors import CommandError
    from provision.results.model import HostRecord, Outcome

    overrides = "provision_reference_overrides: {{ib_write_bw: {{bw_avg_Gbps: {{value: {}}}}}}}"
    path = inventory(tmp_path, {f"n{i:02d}": overrides.format(300 + i) for i in range(12)})
    built, real = [], profiles.for_host
    monkeypatch.setattr(profiles, "for_host", lambda name, variables, host, *a, **k:
                        built.append(host) or real(name, variables, host, *a, **k))
    quiet = lambda *args, **kwargs: None  # noqa: E731
    found = select.gpu_inventory([str(path)], None, inv.Vault(), quiet)
    chosen = select.selected(found, JobOptions(("install", "burnin"), check_set="quick"), None, quiet)  # plan gate

    class Refusing:
        def connect(self, host):
            raise CommandError(f"host {host.name}: connection refused")

    outcome = burnin.run(chosen, burnin.BurninRequest(("xid", "ib_write_bw")), Refusing(),
                         burnin.Sink(None, {t.name: HostRecord(t.host.profile) for t in chosen},
                                     Control(progress=quiet)))
    assert {r.outcome for r in outcome.results} == {Outcome.ERROR}  # nothing reached: the engine built nothing
    assert sorted(built) == sorted(t.name for t in chosen) and len(chosen) == 12  # once each, in the validation
    assert [t.profile.reference("ib_write_bw", "bw_avg_Gbps").value for t in chosen] == [300 + i for i in range(12)]
    assert all(t.profile is found.views[t.name] for t in chosen)  # quick tunes no parameter: the view itself
    assert targets.build(found.gpu_hosts, None, found.views)[0].profile is found.views["n00"]


@pytest.mark.parametrize("row, said", [
    ("{ib_write_bw: {bw_avg_Gbps: {params: {bogus: 1}}}}", "params.bogus"),
    ("{nccl_allreduc: {busbw_GBps: {value: 1, lower: -0.1, upper: null, unit: GB/s, source: ours}}}",
     "references.nccl_allreduc: no such check (did you mean nccl_allreduce?)"),
])
def test_a_bad_reference_override_stops_every_shard_naming_its_file_and_host(tmp_path, row, said):
    """A row a site changed or added that does not fit its check is the inventory's error, named at its file and
    line with the host, whichever shard runs (it was once checked only for the shard's own hosts)."""
    from provision.errors import ProvisionError

    path = inventory(tmp_path, {f"gpu{i:02d}": (f"provision_reference_overrides: {row}" if i == 2 else "")
                                for i in range(1, 5)})
    quiet = lambda *args, **kwargs: None  # noqa: E731
    for shard in ("1/2", "2/2"):
        with pytest.raises(ProvisionError) as caught:
            found = select.gpu_inventory([str(path)], None, inv.Vault(), quiet)
            select.selected(found, JobOptions(("burnin",), shard=shard), None, quiet)
        text = str(caught.value)
        assert "hosts.yml" in text and "gpu02" in text and "provision_reference_overrides" in text and said in text
