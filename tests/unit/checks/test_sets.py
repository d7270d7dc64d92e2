"""The check sets: chosen by name, each check's part in them declared on the check, their parameters laid into the
hosts' variables, and README's table (time per node included) the computed one."""
import re
from pathlib import Path
import pytest

from provision import checks, profiles, targets
from provision.checks import gpu_stress, references, sets
from provision.checks.base import SETS, Check, Scope
from provision.commands._job import select
from provision.inventory import Host

README = Path(__file__).resolve().parents[3] / "README.md"
H100 = "h100-sxm5-80g-ndr"


def host(name="n1", profile=H100, **hostvars):
    return Host(name, "127.0.0.1", 22, "root", None, None, profile, vars=hostvars)


def in_set(name, *hosts):
    """The hosts' targets in set ``name``, each checked against what a re-evaluation builds again from the variables
    the report keeps: the same profile."""
    built = targets.build(list(hosts), name)
    for target in built:
        assert target.profile.data == profiles.for_host(str(target.host.profile), target.host.vars, target.name).data
    return built


def test_readme_sets_table_is_the_computed_one():
    block = re.search(r"<!-- sets:begin[^>]*-->\n(.*?)<!-- sets:end -->", README.read_text(), re.S)
    assert block, "README.md lost its sets:begin/sets:end markers"
    assert block.group(1) == sets.markdown_table(checks.registry()), \
        "README.md's sets table is stale: paste `provision checks --sets`"


def test_time_per_node_is_the_checks_durations_and_timeouts():
    registry = checks.registry()
    profile = profiles.load(H100)
    node = host()
    quick = sum(len(registry[c].steps(profile, node)) * registry[c].timeout_s for c in sets.members("quick", registry)
                if registry[c].scope is Scope.NODE  # firmware_fleet (group) runs no tool: no time on the node
                and all(profile.has(need) for need in registry[c].needs))  # imex needs an IMEX NVLink domain: not H100
    assert sets.time_per_node("quick", registry) == quick  # no check of quick runs for a set time: its timeouts
    smoke = profile.required_reference("gpu_stress", "gflops").params["duration_s"]
    assert gpu_stress.CHECK.expected_s(profile) == smoke + 15 * 60  # DCGM level 3: ~15 min (dcgmi-diag(1))
    # acceptance is deep's checks with 30 minutes of gpu-burn instead of the profile's smoke test
    gap = sets.time_per_node("acceptance", registry) - sets.time_per_node("deep", registry)
    assert gap == gpu_stress.ACCEPTANCE_BURN_S - smoke == 1740
    assert sets.minutes(sets.time_per_node("acceptance", registry)) == "1 h 25 min"  # bmc: 3 queries x 60 s
    assert sets.minutes(59) == "1 min" and sets.minutes(3600) == "1 h 0 min"


def test_the_sets_are_chosen_by_name():
    registry = checks.registry()
    assert [s.name for s in SETS] == ["quick", "deep", "acceptance", "health"]
    assert select.check_set("acceptance", in_set("acceptance", host()), None) == list(registry)  # a new node: all
    every = [c for c, check in registry.items() if not check.optional]  # a run of every check
    assert select.check_set("deep", in_set("deep", host()), None) == every  # kept: every check, short durations
    assert "dcgm_mndiag" not in every  # optional: an hour of multi-node stress, only where a set names it
    quick = select.check_set("quick", in_set("quick", host()), None)
    # no stress: node checks of no set duration, and group checks that run no tool (firmware_fleet compares outputs)
    assert all((registry[c].scope is Scope.NODE or registry[c].gathers) and not registry[c].expected_s for c in quick)
    health = select.check_set("health", in_set("health", host()), None)  # between jobs: reads of state only
    assert health and all(registry[c].scope is Scope.NODE and not registry[c].budget.loads for c in health)
    assert set(health) <= set(quick)
    assert select.schedule("acceptance", None) == "full" and select.schedule("acceptance", "quick") == "quick"
    assert select.schedule("quick", None) == select.schedule(None, None) == select.schedule("deep", None) == "quick"


def test_acceptance_runs_gpu_burn_30_minutes_and_dcgm_level_3_with_the_timeout_it_needs():
    [target] = in_set("acceptance", host())
    node, profile = target.host, target.profile
    assert node.vars["provision_check_timeouts"] == {"gpu_stress": gpu_stress.ACCEPTANCE_TIMEOUT_S}
    assert target.timeout_s(checks.registry()["gpu_stress"]) == gpu_stress.ACCEPTANCE_TIMEOUT_S
    burn, dcgm = gpu_stress.steps(profile, node)
    assert burn.argv == ["gpu_burn", "1800"] and dcgm.argv == ["dcgmi", "diag", "-r", "3"]
    assert profile.required_reference("gpu_stress", "gflops").params == {"tool": "gpu_burn", "duration_s": 1800,
                                                                          "precision": "fp32"}
    assert gpu_stress.ACCEPTANCE_TIMEOUT_S > gpu_stress.ACCEPTANCE_BURN_S
    [plain] = in_set("deep", host())
    assert gpu_stress.steps(plain.profile, plain.host)[0].argv == ["gpu_burn", "60"]
    [none] = targets.build([host()])
    assert none.host == host() and none.profile is profiles.for_host(H100, {}, "n1") and not none.timeouts


def test_a_sites_own_params_and_larger_timeout_win_over_the_sets():
    site = {"gpu_stress": {"gflops": {"value": 40000.0, "params": {"tool": "gpu_burn", "duration_s": 7200,
                                                                     "precision": "fp64"}}},
            "ib_write_bw": {"bw_avg_Gbps": {"value": 360}}}
    [target] = in_set("acceptance", host(provision_reference_overrides=site,
                                         provision_check_timeouts={"gpu_stress": 9000, "xid": 5}))
    node = target.host
    assert node.vars["provision_reference_overrides"] == site
    assert node.vars["provision_check_timeouts"] == {"gpu_stress": 9000, "xid": 5}
    value_only = {"gpu_stress": {"gflops": {"value": 40000.0}}}
    [target] = in_set("acceptance", host(provision_reference_overrides=value_only))
    row = target.profile.required_reference("gpu_stress", "gflops")
    assert row.value == 40000.0 and row.params["duration_s"] == 1800  # the site's value, the set's duration


def test_a_set_a_check_tunes_is_one_it_belongs_to():
    registry = checks.registry()
    for check in registry.values():
        for name in check.set_params:
            assert check.id in sets.members(name, registry), f"{check.id}: set_params for {name}, not one of its sets"


def test_a_sites_own_tag_is_a_set_of_that_name():
    registry = dict(checks.registry())
    site = Check(id="burn24", tool="x", steps=lambda p, h: [], judge=lambda ctx: [], order=95, sets=("soak",))
    registry["burn24"] = site
    assert sets.members("soak", registry) == ["burn24"]
    assert sets.declared(registry)["soak"].purpose == "the checks tagged soak"
    assert "burn24" not in sets.members("acceptance", registry)  # acceptance: the checks tagged deep or acceptance


@pytest.mark.parametrize("profile_name", profiles.names())
@pytest.mark.parametrize("name", [s.name for s in SETS])
def test_every_set_applies_to_every_profile(name, profile_name):
    [target] = in_set(name, host(profile=profile_name))
    references.validate(target.profile)  # the set's params fit the schema
    assert sets.time_per_node(name, checks.registry(), profile_name) > 0


def test_the_job_runs_a_set_by_name_with_its_durations_schedule_and_record(tmp_path, monkeypatch):
    """``burnin --check-set acceptance``: every check, gpu_stress at 30 minutes with its timeout, the full pair
    schedule, and report.json's host record keeps the set's parameters (a re-evaluation judges the same way)."""
    import json

    from provision import cli, paths
    from provision.commands import _job
    from provision.engine import burnin as burnin_engine
    from provision.results.model import CheckResult, Outcome

    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    seen = {}

    def engine(chosen, request, transport, sink, oob=None):
        seen.update(targets=chosen, only=list(request.checks or ()), schedule=request.schedule)
        return burnin_engine.BurninOutcome([CheckResult("xid", (t.name,), Outcome.PASS, "ok") for t in chosen])

    monkeypatch.setattr(burnin_engine, "run", engine)
    inventory = paths.ROOT / "tests/data/inventories/homelab"
    args = cli._parser().parse_args(["burnin", "-i", str(inventory), "--check-set", "acceptance", "--run-id", "acc",
                                     "--history", str(tmp_path / "h.db"),
                                     "--vault-password-file", str(inventory.parent / "homelab-vault-password.txt")])
    assert _job.run(_job.JobOptions.from_args(args), progress=lambda line: None) == 0
    assert seen["only"] == select.check_set("acceptance", seen["targets"], None) and seen["schedule"] == "full"
    [target] = seen["targets"]
    node = target.host
    assert node.vars["provision_check_timeouts"]["gpu_stress"] == gpu_stress.ACCEPTANCE_TIMEOUT_S
    assert gpu_stress.steps(target.profile, node)[0].argv[-1] == "1800"
    kept = json.loads((tmp_path / "runs/acc/report.json").read_text())["hosts"][node.name]["vars"]
    assert kept["provision_reference_overrides"]["gpu_stress"]["gflops"]["params"]["duration_s"] == 1800
    assert kept["provision_check_timeouts"] == {"gpu_stress": gpu_stress.ACCEPTANCE_TIMEOUT_S}


def test_provision_checks_sets_prints_the_table(capsys):
    from provision import cli

    assert cli.main(["checks", "--sets"]) == 0
    assert capsys.readouterr().out == sets.markdown_table(checks.registry())
