"""Bad input gets one line naming file, host and field, and exit status 2; never a traceback."""
import subprocess
import sys

import pytest

PROFILE = "provision_profile: h100-sxm5-80g-ndr"


def provision(*args):
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True)


def one_line_error(proc):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("provision: error: ")
    return lines[0]


def test_missing_inventory():
    line = one_line_error(provision("run", "-i", "inventory/does-not-exist"))
    assert "inventory/does-not-exist: no such inventory" in line


@pytest.mark.parametrize("hosts,expected", [
    ("all:\n  hosts:\n    gpu01: {ansible_host: 127.0.9.1}\n", "no GPU node to run on: no host has provision_profile"),
    ("all:\n  hosts:\n    gpu01: {ansible_host: 127.0.9.1, provision_profile: h999}\n",
     "host gpu01: field 'provision_profile'"),
    (f"all:\n  vars: {{{PROFILE}}}\n  hosts:\n    gpu01: {{ansible_host: 127.0.9.1, ansible_port: ssh}}\n",
     "host gpu01: field 'ansible_port' is not a port number"),
    ("all:\n  hosts:\n   - gpu01: [\n", "Ansible could not read it as an inventory"),
    ("all:\n  hosts: {}\n", "inventory has no hosts"),
])
def test_bad_inventory(tmp_path, hosts, expected):
    (tmp_path / "hosts.yml").write_text(hosts)
    line = one_line_error(provision("run", "-i", str(tmp_path)))
    assert expected in line and str(tmp_path) in line


def test_parse_refuses_text_that_is_not_the_tool(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\nthis is not nvidia-smi\n")
    line = one_line_error(provision("parse", "nvidia-smi-qx", str(path)))
    assert "notes.txt" in line


def test_unknown_check_is_refused():
    line = one_line_error(provision("burnin", "-i", "sim", "--checks", "gpu_health,nope"))
    assert "--checks: unknown check nope (known: gpu_health," in line


@pytest.mark.parametrize("host_vars,expected", [
    ("ansible_port: 99999", "field 'ansible_port' is not a port number (1-65535)"),
    ("ansible_host: [1, 2]", "field 'ansible_host' must be a host name or address"),
    ("provision_reference_overrides: [1, 2]", "host gpu01: provision_reference_overrides: must map check"),
    ("provision_reference_overrides: {nccl_allreduce: {algbw: {value: 1}}}",
     "provision_reference_overrides.nccl_allreduce.algbw: no such reference"),
    ("provision_reference_overrides: {nccl_allreduce: {busbw_GBps: {value: fast}}}",
     "references.nccl_allreduce.busbw_GBps.value: not a number"),
])
def test_bad_host_fields_are_refused_before_any_run(tmp_path, host_vars, expected):
    (tmp_path / "hosts.yml").write_text(
        f"all:\n  vars: {{{PROFILE}}}\n  hosts:\n    gpu01:\n      ansible_host: 127.0.9.1\n      {host_vars}\n")
    line = one_line_error(provision("burnin", "-i", str(tmp_path)))
    assert expected in line and "hosts.yml" in line


def test_limit_and_run_id_are_checked(tmp_path):
    (tmp_path / "hosts.yml").write_text(f"all:\n  vars: {{{PROFILE}}}\n"
                                        "  hosts:\n    gpu01: {ansible_host: 127.0.9.1}\n")
    assert "--limit names hosts not in the inventory: gpu09" in one_line_error(
        provision("burnin", "-i", str(tmp_path), "--limit", "gpu01,gpu09"))
    assert "--run-id '../escape'" in one_line_error(
        provision("burnin", "-i", str(tmp_path), "--run-id", "../escape"))
    assert "--checks: name at least one check" in one_line_error(
        provision("burnin", "-i", str(tmp_path), "--checks", ","))


@pytest.mark.parametrize("scenario,expected", [
    ("nodes: 0\n", "field 'nodes' must be a positive integer"),
    ("nodes: 2\nprofile: h999\n", "no such hardware profile"),
    ("nodes: 2\nfaults:\n  node05: [{kind: xid79}]\n", "faults.node05: no such node in a rack of 2"),
    ("nodes: 2\nfaults:\n  node02: [{kind: melted}]\n", "faults.node02[0].kind: unknown fault 'melted'"),
    ("nodes: 2\nfaults:\n  node02: [{kind: xid79, colour: red}]\n", "faults.node02[0]: must be a mapping"),
    ("nodes: [\n", "not valid YAML"),
])
def test_bad_scenario(tmp_path, scenario, expected):
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario)
    line = one_line_error(provision("sim", "up", "--scenario", str(path), "--inventory", str(tmp_path / "inv")))
    assert expected in line


def test_sim_up_refuses_a_bad_address_base(tmp_path):
    line = one_line_error(provision("sim", "up", "--inventory", str(tmp_path / "inv"), "--address-base", "not-an-ip"))
    assert "--address-base 'not-an-ip': not an IPv4 address" in line
    line = one_line_error(provision("sim", "up", "--inventory", str(tmp_path / "inv"), "--address-base", "10.0.0.1"))
    assert "loopback addresses in 127.0.0.0/8" in line


@pytest.mark.parametrize("change,expected", [
    (lambda d: d["gpu"].__setitem__("nvlnk", d["gpu"].pop("nvlink")), "gpu.nvlnk: unknown key"),
    (lambda d: d["references"]["ib_write_bw"]["bw_avg_Gbps"]["params"].__setitem__("msg_size", 1),
     "references.ib_write_bw.bw_avg_Gbps.params.msg_size: unknown key"),
], ids=["hardware", "reference-params"])
def test_a_profile_with_a_misspelt_key_exits_2_naming_file_and_key(tmp_path, change, expected):
    """A profile file given to `provision evaluate --profile` (the one place a path is taken: an
    inventory names bundled profiles only) with a misspelt key: exit 2, naming file and key path."""
    import yaml

    from provision import profiles
    from provision.results.model import CheckResult, HostRecord, Outcome, Run
    from provision.results.store import RunDir

    data = yaml.safe_load((profiles.DATA_DIR / "h100-sxm5-80g-ndr.yaml").read_text())
    change(data)
    bad = tmp_path / "site-h100.yaml"
    bad.write_text(yaml.safe_dump(data))
    run = tmp_path / "runs/r1"
    run.mkdir(parents=True)
    result = CheckResult("xid", ("gpu01",), Outcome.ERROR, "dmesg timed out", run_error=True)
    RunDir(run).save(Run(run_id="r1", hosts={"gpu01": HostRecord("h100-sxm5-80g-ndr")}, results=[result]),
                     latest=False)
    line = one_line_error(provision("evaluate", str(run), "--profile", str(bad)))
    assert f"{bad}: {expected}" in line


def test_an_inventory_names_a_bundled_profile_not_a_path(tmp_path):
    bad = tmp_path / "x.yaml"
    bad.write_text("name: x\n")
    (tmp_path / "inv").mkdir()
    (tmp_path / "inv/hosts.yml").write_text(f"all:\n  hosts:\n    gpu01: {{ansible_host: 127.0.9.1, "
                                            f"provision_profile: {bad}}}\n")
    line = one_line_error(provision("run", "-i", str(tmp_path / "inv")))
    assert "gpu01" in line and "provision_profile" in line and "not a path" in line


@pytest.mark.parametrize("command", ["run", "burnin", "install"])
@pytest.mark.parametrize("value", ["0", "-3", "2.5", "four", "", "\u00b2"])
def test_forks_must_be_a_positive_whole_number(tmp_path, command, value):
    line = one_line_error(provision(command, "-i", str(tmp_path), f"--forks={value}"))
    expected = ("an empty value (give one, or leave the option out)" if value == ""
                else "must be a whole number of hosts, 1 or more")
    assert line == f"provision: error: --forks {value!r}: {expected}"
