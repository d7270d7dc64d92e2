"""Inventory values never become paths or code, and input that would crash or hang later is
refused when the inventory is read: one problem naming file, host and field."""
import pytest

from provision import inventory
from provision.errors import InventoryError
from provision.inventory import aliases

from tests.unit.hardening.test_linear_time import guard

from .conftest import PROFILE, one_error, provision


def host(name: str, extra: str = "") -> str:
    return f"all:\n  hosts:\n    {name}:\n      ansible_host: 127.0.9.1\n      provision_profile: {PROFILE}\n{extra}"


@pytest.mark.parametrize("name", ["'../../x'", "'a/b'", "'-x'", "'.hidden'", "'gpu 01'"])
def test_a_host_name_that_is_not_a_safe_file_name_is_refused(read_inventory, name):
    found = read_inventory(host(name))
    assert [p.field for p in found.problems] == ["inventory_hostname"] and not found.hosts
    assert "is not a safe name" in str(found.problems[0]) and found.problems[0].file.endswith("hosts.yml")


def test_a_group_name_that_is_not_safe_is_refused(read_inventory):
    found = read_inventory("all:\n  children:\n    'gpu/../x':\n      hosts:\n        gpu01: {}\n")
    assert [(p.host, p.field) for p in found.problems] == [("gpu01", "group_names")]


def test_names_ansible_accepts_with_a_warning_are_kept(read_inventory):
    found = read_inventory("all:\n  children:\n    slurm-node:\n      hosts:\n"
                           "        gpu-01.example.org: {}\n        node_2: {}\n")
    assert not found.problems and [h.name for h in found.hosts] == ["gpu-01.example.org", "node_2"]


@pytest.mark.parametrize("profile", ["/etc/passwd", "../../../tmp/x", "site.yaml", "x/y"])
def test_a_profile_is_a_bundled_name_never_a_path(read_inventory, profile):
    found = read_inventory(f"all:\n  hosts:\n    gpu01: {{provision_profile: '{profile}'}}\n")
    assert [p.field for p in found.problems] == ["provision_profile"]
    assert "must be the name of a bundled profile, not a path" in str(found.problems[0])


@pytest.mark.parametrize("timeouts,why", [
    ("{nccl_tests: soon}", "'soon' is not a positive finite number"),
    ("{nccl_tests: .nan}", "nan is not a positive finite number"),
    ("{nccl_tests: .inf}", "inf is not a positive finite number"),
    ("{nccl_tests: -5}", "-5 is not a positive"),
    ("{nccl_tests: 0}", "0 is not a positive"),
    ("{nccl_tests: true}", "True is not a positive"),
    ("{Nccl-Tests: 60}", "is not a check id"),
    ("[600]", "must map check ids to seconds"),
])
def test_check_timeouts_are_positive_finite_seconds(read_inventory, timeouts, why):
    found = read_inventory(host("gpu01", f"      provision_check_timeouts: {timeouts}\n"))
    assert [p.field for p in found.problems] == ["provision_check_timeouts"] and why in str(found.problems[0])


def test_valid_check_timeouts_load_unchanged(read_inventory):
    # the ids were nccl_tests and gpu_burn, tools rather than checks: now refused as unknown (below)
    found = read_inventory(host("gpu01", "      provision_check_timeouts: {nccl_allreduce: 600, gpu_stress: 90.5}\n"))
    assert not found.problems
    assert found.hosts[0].vars["provision_check_timeouts"] == {"nccl_allreduce": 600, "gpu_stress": 90.5}


@pytest.mark.parametrize("timeouts,why", [
    ("{gpu_stres: 600}", "unknown check gpu_stres (did you mean gpu_stress?)"),
    ("{nccl_allreduse: 60, gpu_stress: 90}", "unknown check nccl_allreduse (did you mean nccl_allreduce?)"),
    ("{zzz: 60}", "unknown check zzz (known: "),
])
def test_a_misspelt_check_id_in_check_timeouts_is_refused_naming_the_closest(read_inventory, timeouts, why):
    found = read_inventory(host("gpu01", f"      provision_check_timeouts: {timeouts}\n"))
    assert [(p.host, p.field) for p in found.problems] == [("gpu01", "provision_check_timeouts")]
    assert why in str(found.problems[0]) and found.problems[0].file.startswith(str(found.path))


def test_a_misspelt_check_timeout_in_group_vars_is_one_line_exit_2(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text(host("gpu01"))
    (tmp_path / "group_vars" / "all.yml").write_text("provision_check_timeouts: {gpu_stres: 3600}\n")
    line = one_error(provision("inventory", "-i", str(tmp_path / "hosts.yml")))
    assert "group_vars/all.yml" in line and "gpu01" in line and "provision_check_timeouts" in line
    assert "unknown check gpu_stres (did you mean gpu_stress?)" in line


@pytest.mark.parametrize("overrides,why", [
    ("{ib_write_bww: {bw_avg_Gbps: {value: 360}}}", ".ib_write_bww.bw_avg_Gbps: no such reference in profile "
                                                    f"{PROFILE} (did you mean ib_write_bw?)"),
    ("{ib_write_bw: {bw_avg_Gbs: {value: 360}}}", ".ib_write_bw.bw_avg_Gbs: no such reference in profile "
                                                  f"{PROFILE} (did you mean bw_avg_Gbps?)"),
])
def test_a_misspelt_check_or_metric_in_reference_overrides_is_refused_naming_the_closest(read_inventory,
                                                                                        overrides, why):
    found = read_inventory(host("gpu01", f"      provision_reference_overrides: {overrides}\n"))
    assert [(p.host, p.field) for p in found.problems] == [("gpu01", "provision_reference_overrides")]
    assert why in str(found.problems[0])


def laughs(levels: int, indent: str = "") -> str:
    """The "billion laughs" document: nine aliases a level, as variables (indented under ``vars:``)."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "".join(f"{indent}{line}\n" for line in lines)


@pytest.mark.parametrize("text", [laughs(9), "r: &r [*r]\n"], ids=["billion-laughs", "recursive"])
def test_yaml_aliases_that_expand_without_bound_are_refused_at_once(tmp_path, text):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    gpu01: {}\n")
    (tmp_path / "group_vars" / "all.yml").write_text(text)
    # the count in the message is the bound (3.4e9 values unbounded); the CPU-time guard only catches a hang
    with guard("inventory.read of an alias bomb", cpu_s=60), \
            pytest.raises(InventoryError, match=r"group_vars/all.yml: YAML aliases expand past 200,000 values"):
        inventory.read(tmp_path / "hosts.yml")


def test_the_alias_bound_error_is_one_line_from_the_command(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    gpu01: {}\n  vars:\n" + laughs(9, "    "))
    assert f"{tmp_path}/hosts.yml: YAML aliases expand past" in one_error(provision("inventory", "-i", str(tmp_path)))


def test_a_few_aliases_are_fine(read_inventory):
    found = read_inventory("all:\n  vars:\n    base: &base {ansible_user: ubuntu}\n  hosts:\n"
                           f"    gpu01: {{<<: *base, provision_profile: {PROFILE}}}\n    gpu02: {{<<: *base}}\n")
    assert not found.problems and [h.user for h in found.hosts] == ["ubuntu", "ubuntu"]
    aliases.check([])  # nothing to read, nothing refused


def test_a_host_in_two_sources_is_merged_as_ansible_does_and_named_in_a_warning(tmp_path):
    (tmp_path / "a.yml").write_text(host("gpu01"))
    (tmp_path / "b.yml").write_text("all:\n  hosts:\n    gpu01: {ansible_host: 127.0.9.66}\n    gpu02: {}\n")
    found = inventory.read([tmp_path / "a.yml", tmp_path / "b.yml"])
    assert found.host("gpu01").address == "127.0.9.66"  # Ansible's merge: the later source wins
    assert [w for w in found.warnings if "gpu01" in w] == [
        f"host gpu01 is defined in 2 inventory sources ({tmp_path}/a.yml, {tmp_path}/b.yml): "
        "Ansible merges them, the last one's variables win"]
    assert not [w for w in found.warnings if "gpu02" in w]


@pytest.mark.parametrize("command", ["inventory", "run"])
def test_the_commands_exit_2_naming_file_host_and_field(tmp_path, command):
    (tmp_path / "hosts.yml").write_text(host("'../../x'"))
    line = one_error(provision(command, "-i", str(tmp_path)))
    assert line.startswith(f"provision: error: {tmp_path}/hosts.yml: host '../../x': host name") and "safe name" in line
