"""The check contract (provision/checks/base.py): each step names its parser, ``judge`` gets one
context with the job's hosts, and a check judging by another check's references declares it."""
from pathlib import Path

import pytest

from provision import checks, profiles
from provision.checks import references
from provision.checks.base import Check, Context, Step, judge_outputs, parse_outputs
from provision.errors import ParseError, ProvisionError
from provision.parsers import PARSERS
from provision.results.model import Outcome, Scope

from tests.unit.checks import hosts_of, judge
from tests.unit.hardening._inputs import PROFILE

DATA = Path(__file__).resolve().parents[2] / "data"
H100 = profiles.load("h100-sxm5-80g-ndr")


@pytest.mark.parametrize("check", list(checks.registry().values()), ids=lambda c: c.id)
def test_every_step_of_a_package_check_names_a_parser_provision_parse_knows(check):
    """No check reads text with a parser of its own, so `provision parse TOOL` reads every output."""
    assert check.parsers == {}
    hosts = ("node07",) if check.scope is Scope.NODE else ("node07", "node08")
    steps = check.steps(PROFILE, hosts_of(check, hosts, PROFILE))
    assert steps and all(step.parser in PARSERS for step in steps), [(s.key, s.parser) for s in steps]


def test_each_output_is_read_by_the_parser_its_step_names_not_by_its_text():
    """stack's driver step read as nvidia-smi-driver: nvcc's banner there is refused, not sniffed as nvcc."""
    stack = checks.registry()["stack"]
    nvcc = (DATA / "stack" / "sim_h100_healthy.cuda.txt").read_text()
    result = judge("n", stack, H100, {"driver": nvcc})
    assert result.outcome is Outcome.ERROR and "not nvidia-smi driver_version output" in result.message


def test_an_output_of_no_step_is_read_by_the_checks_one_parser_else_refused():
    ib = checks.registry()["ib_write_bw"]
    text = (DATA / "ib_write_bw" / "sim_h100_healthy.txt").read_text()
    steps = ib.steps(H100, hosts_of(ib, ("n",), H100))
    assert parse_outputs(ib, steps, {"mlx5_99": text})["mlx5_99"]["tool"] == "perftest"
    stack = checks.registry()["stack"]
    with pytest.raises(ParseError, match="step 'kernel': stack has no such step"):
        parse_outputs(stack, stack.steps(H100, hosts_of(stack, ("n",), H100)), {"kernel": "6.1.0\n"})


def test_nccl_cluster_counts_the_nodes_of_its_target_not_of_its_step_key():
    check = checks.registry()["nccl_cluster"]
    text = (DATA / "nccl_cluster" / "sim_h100_2nodes_healthy.txt").read_text()
    two = ("node01", "node02")
    assert judge("node01", check, H100, {"2-nodes": text}, two).outcome is Outcome.PASS
    four = judge_outputs(check, H100, hosts_of(check, two + ("node03", "node04"), H100), {"2-nodes": text})
    nranks = next(f for f in four if f.metric == "nranks")
    assert (nranks.value, nranks.expected, nranks.ok) == (16, 32, False)
    assert next(f for f in four if f.metric == "busbw_GBps").device == "4 nodes x 8 GPUs"


def test_the_context_gives_the_hosts_of_a_node_a_pair_and_a_group():
    pair, group = checks.registry()["ib_pairs"], checks.registry()["nccl_cluster"]
    assert [h.name for h in Context({}, H100, hosts_of(pair, ("a", "b"))).hosts] == ["a", "b"]
    assert [h.name for h in Context({}, H100, hosts_of(group, ("a", "b", "c"))).hosts] == ["a", "b", "c"]
    node = hosts_of(checks.registry()["xid"], ("a",))
    assert Context({}, H100, node).hosts == (node,)


def test_ib_pairs_declares_the_references_it_judges_by():
    assert checks.registry()["ib_pairs"].references_from == ("ib_write_bw",)
    assert references.readers("ib_write_bw") == ["ib_write_bw", "ib_pairs"]
    assert references.readers("nccl_allreduce") == ["nccl_allreduce"]


def test_a_check_judging_by_the_references_of_no_check_is_refused(tmp_path, monkeypatch):
    (tmp_path / "site_ref.py").write_text(
        '"""site_ref: a test."""\nfrom provision.checks.base import Check, Step\n\n'
        'CHECK = Check(id="site_ref", tool="t", order=5, steps=lambda p, h: [Step("", ["true"], parser="nvcc")],\n'
        '              judge=lambda ctx: [], references_from=("ib_write_bandwidth",))\n')
    monkeypatch.setenv(checks.CHECK_PATH_ENV, str(tmp_path))
    with pytest.raises(ProvisionError, match="site_ref judges by the references of ib_write_bandwidth: no such check"):
        checks.registry()


def test_a_sites_own_parser_may_not_take_a_name_provision_parse_knows():
    with pytest.raises(ValueError, match="its own parsers perftest are provision parse's names"):
        Check(id="x", tool="t", order=1, steps=lambda p, h: [Step("", ["true"], parser="perftest")],
              judge=lambda ctx: [], parsers={"perftest": lambda text: {}})
