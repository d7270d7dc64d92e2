"""`provision plan` as a user types it: the seed inventory is rejected (exit 1) with each conflict and the
nearest consistent stack; a consistent one passes (exit 0); `provision run` and `install` refuse to start on
the seed (exit 2) before any node is reached (its addresses are unused 127.0.9.x loopback addresses);
bad input is one line, exit 2."""
import shutil

import pytest

from provision import paths
from tests.unit.test_cli_input import one_line_error, provision

DATA = paths.ROOT / "tests" / "data" / "plan"


def test_the_seed_inventory_is_rejected_with_the_nearest_consistent_stack():
    proc = provision("plan", "-i", str(DATA / "seed"))
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "stack for ubuntu2204 on NVIDIA GeForce RTX 4090 (ws01, ws02): driver 550.127.05, CUDA 11.8.0" in out
    assert "TensorFlow 2.4 was built and tested against CUDA 11.0 and cuDNN 8.0, not 11.8 and 8.9" in out
    assert "the TensorFlow releases tested with CUDA 11.8 (2.12, 2.13, 2.14) need Python 3.8 or newer" in out
    # TensorFlow 2.4's compute_80 holds an sm_80 cubin, which runs on Ada (8.9): no PTX-JIT warning any more (issue 23)
    assert "kernels: env tf: tensorflow-gpu==2.4.0: its sm_80 cubins run on the sm_89 GPU" in out
    assert "nearest consistent stack (set these variables):" in out
    assert "framework_venv_envs[tf]: tensorflow-gpu==2.4.0 -> tensorflow==2.12.0" in out
    assert "framework_venv_python: python3.7 -> python3" in out
    # the proposal is planned again, its kernels for Ada checked (issue 23: they were "not checked")
    assert "    planned again with these: 0 errors, 0 warnings, 0 unknown" in out
    assert "    kernels: env tf: tensorflow==2.12.0: its sm_80 cubins run on the sm_89 GPU" in out
    assert out.rstrip().endswith("plan: 2 errors, 1 warnings: the stack or the design cannot work")


def test_a_consistent_inventory_passes_and_names_an_outranked_pin():
    proc = provision("plan", "-i", str(DATA / "consistent"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CUDA 12.4.1, cuDNN 9.1.0.70, NCCL 2.21.5+cuda12.4, python3 (Python 3.11)" in proc.stdout
    assert "ok: every rule holds" in proc.stdout
    assert ("warning cuda_toolkit_version 11.8.0: set in " in proc.stdout
            and "playbooks/group_vars/all.yml outranks the inventory's group all: the roles install 12.4.1"
            in proc.stdout)
    assert "at least 15.7 s, allowed 20 s" in proc.stdout and "30.6 kW at maximum power" in proc.stdout


@pytest.mark.parametrize("command", ["run", "install"])
def test_an_install_refuses_to_start_on_the_seed_stack(command):
    proc = provision(command, "-i", str(DATA / "seed"), "--run-id", f"plan-refused-{command}")
    assert proc.returncode == 2
    assert "plan: error   env tf: tensorflow-gpu==2.4.0: TensorFlow 2.4 was built and tested" in proc.stdout
    assert one_line_error(proc).startswith("provision: error: plan: 2 errors in the stack or the design")
    assert "--force installs anyway" in proc.stderr
    assert not (paths.RUNS / f"plan-refused-{command}").exists()  # nothing started, no run folder


def test_a_host_with_an_unknown_os_target_is_named(tmp_path):
    shutil.copytree(DATA / "seed", tmp_path / "inv")
    hosts = tmp_path / "inv" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("provision_os: ubuntu2204", "provision_os: ubuntu1804"))
    proc = provision("plan", "-i", str(tmp_path / "inv"))
    assert proc.returncode == 2
    assert "host ws01: field 'provision_os' must be one of ubuntu2204, ubuntu2404, debian12, rhel9" in proc.stderr


def test_without_provision_os_every_target_is_planned(tmp_path):
    shutil.copytree(DATA / "consistent", tmp_path / "inv")
    hosts = tmp_path / "inv" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("        provision_os: debian12\n", ""))
    proc = provision("plan", "-i", str(tmp_path / "inv"))
    assert proc.returncode == 0, proc.stdout
    for target in ("ubuntu2204", "ubuntu2404", "debian12", "rhel9"):
        assert f"stack for {target} on NVIDIA H100 80GB HBM3" in proc.stdout
    assert "stack for ubuntu2404 on NVIDIA H100 80GB HBM3 (hgx01, hgx02): driver 550.127.05, CUDA 12.5.1" in proc.stdout


@pytest.mark.parametrize("args, text", [
    (["--gpus", "64"], "plan: --gpus and --profile go together"),
    ([], "plan: give -i INVENTORY"),
    (["--gpus", "64", "--profile", "h100-sxm5-80g-ndr", "--oversubscription", "x"], "--oversubscription 'x'"),
    (["--gpus", "64", "--profile", "nope"], "no such hardware profile"),
])
def test_bad_sizing_arguments_are_one_line(args, text):
    proc = provision("plan", *args)
    assert proc.returncode == 2 and text in one_line_error(proc)


def test_sizing_prints_its_figures():
    proc = provision("plan", "--gpus", "10000", "--profile", "a100-pcie-40g-hdr", "--switch-radix", "40",
                     "--node-power-W", "4000")
    assert proc.returncode == 0, proc.stderr
    assert "1250 nodes, 1250 HCAs" in proc.stdout and "one plane, each in 2 zones" in proc.stdout
    # issue 23: 20 spines per zone, one cable from every leaf to every spine (16 spines left 1.25 cables a pair)
    assert ("32 leaves and 20 spines per tree, 1 cable from every leaf to every spine; 64 leaves, 40 spines, 104 in all"
            in proc.stdout)
    assert "cables: 1250 HCA-leaf + 1280 leaf-spine = 2530" in proc.stdout
    assert "GPUs 2.50 MW; IT 5.00 MW at maximum power, facility 6.00 MW at PUE 1.2" in proc.stdout


@pytest.mark.parametrize("line, text", [
    ('cuda_toolkit_version: "abc"', "host ws01: field 'cuda_toolkit_version' must be a dotted version such as 12.4.1"),
    ("cudnn_version: [1]", "host ws01: field 'cudnn_version' must be a dotted version"),
    ('framework_venv_python: ""', "host ws01: field 'framework_venv_python' must be an interpreter"),
])
def test_a_pin_that_is_not_a_version_is_bad_input(tmp_path, line, text):
    shutil.copytree(DATA / "seed", tmp_path / "inv")
    group = tmp_path / "inv" / "group_vars" / "gpu_workers.yml"
    key = line.split(":")[0]
    group.write_text("\n".join(line if row.startswith(key + ":") else row for row in group.read_text().splitlines()))
    proc = provision("plan", "-i", str(tmp_path / "inv"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert text in proc.stderr and "could not be planned" in proc.stdout


def plan_seed_with_os(tmp_path, value):
    """`provision plan` on a copy of the seed inventory whose provision_os is ``value`` (YAML text)."""
    shutil.copytree(DATA / "seed", tmp_path / "inv")
    hosts = tmp_path / "inv" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("provision_os: ubuntu2204", f"provision_os: {value}"))
    return provision("plan", "-i", str(tmp_path / "inv"))


def test_a_templated_os_target_is_templated(tmp_path):
    proc = plan_seed_with_os(tmp_path, "\"{{ 'ubuntu' ~ '2204' }}\"")
    assert proc.returncode == 1 and "stack for ubuntu2204 on NVIDIA GeForce RTX 4090" in proc.stdout


def test_a_list_as_os_target_is_named_not_a_crash(tmp_path):
    proc = plan_seed_with_os(tmp_path, "[ubuntu2204]")
    assert proc.returncode == 2 and "field 'provision_os' must be one of" in proc.stderr


def consistent_with(tmp_path, pin):
    """A copy of the consistent inventory (H100s) on Ubuntu 22.04 (Python 3.10) whose env pins ``pin``."""
    shutil.copytree(DATA / "consistent", tmp_path / "inv")
    hosts = tmp_path / "inv" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("torch==2.4.1", pin).replace("provision_os: debian12",
                                                                            "provision_os: ubuntu2204"))
    return tmp_path / "inv"


def test_torch_1_12_on_h100_is_rejected_for_its_missing_sm_90_kernels(tmp_path):
    # issue 23: this passed with exit 0 ("consistent"); the tables now hold 1.12's wheels (cubins up to sm_75)
    proc = provision("plan", "-i", str(consistent_with(tmp_path, "torch==1.12.1")))
    assert proc.returncode == 1, proc.stdout
    assert ("error   env pytorch: torch==1.12.1: PyTorch 1.12+cu102's binaries hold neither kernels nor PTX for the "
            "NVIDIA H100 80GB HBM3's Hopper (sm_90)") in proc.stdout
    assert "framework_venv_envs[pytorch]: torch==1.12.1 -> torch==2.1.0" in proc.stdout


def test_a_stack_outside_the_tables_is_unknown_exit_7_unless_accepted(tmp_path):
    inventory = str(consistent_with(tmp_path, "torch==1.11.0"))
    proc = provision("plan", "-i", inventory)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert ("unknown env pytorch: torch==1.11.0: release not in the pytorch table (1.12-2.8): its Python range, CUDA "
            "and kernels for the NVIDIA H100 80GB HBM3 are not checked") in proc.stdout
    assert "plan: 0 errors, 1 warnings, 1 unknown: not known to work" in proc.stdout
    assert "nearest stack the tables check fully (set these variables):" in proc.stdout
    accepted = provision("plan", "-i", inventory, "--accept-unknown")
    assert accepted.returncode == 0, accepted.stdout
    assert "plan: 1 unknown accepted (--accept-unknown)" in accepted.stdout


def test_sizing_prints_storage_management_and_switch_power():
    proc = provision("plan", "--gpus", "10000", "--profile", "h100-sxm5-80g-ndr", "--switch-power-W", "1500")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "40 leaves and 32 spines per tree, 1 cable from every leaf to every spine" in out and "576 in all" in out
    assert "storage: 237 storage servers" in out and "management: 40 management servers and 40 UFM appliances" in out
    assert "switches x 1500 W = " in out and "(IT with switches " in out
    assert "(6 rounds, the localizer's expected_rounds on this tree)" in out


def test_the_blackwell_line_is_accepted_on_b200_and_gb200_and_a_wheel_without_sm_100_is_not(tmp_path):
    """Issue 24: B200 and GB200 profiles get the Blackwell release line (driver 580, CUDA 13.0.2, cuDNN 9.14, NCCL
    2.28.3+cuda13.0), which the plan's tables know (CUDA 13.0 Table 3 rows, cuDNN 9.14's CUDA 13.0 build, NCCL 2.28.3's
    +cuda13.0 build, PyTorch 2.8's cu128 wheel with sm_100): every rule holds. The role's default env (torch 2.4.1,
    no sm_100 kernel nor PTX) is refused on the same nodes; the seed stays refused (the first test of this file)."""
    proc = provision("plan", "-i", str(DATA / "blackwell"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for gpu, hosts in (("B200", "b200n01, b200n02"), ("GB200", "gb200t01, gb200t02")):
        assert (f"stack for ubuntu2404 on NVIDIA {gpu} ({hosts}): driver 580.105.08, CUDA 13.0.2, cuDNN 9.14.0.64, "
                f"NCCL 2.28.3+cuda13.0, python3 (Python 3.12)") in out
    assert out.count("  ok: every rule holds") == 2
    assert out.count("kernels: env pytorch: torch==2.8.0: its sm_100 cubins run on the sm_100 GPU") == 2
    assert out.rstrip().endswith("plan: 0 errors, 0 warnings: consistent")
    shutil.copytree(DATA / "blackwell", tmp_path / "inv")
    hosts = tmp_path / "inv" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace('"torch==2.8.0", "numpy==2.1.3"', '"torch==2.4.1", "numpy==1.26.4"'))
    refused = provision("plan", "-i", str(tmp_path / "inv"))
    assert refused.returncode == 1
    assert ("error   env pytorch: torch==2.4.1: PyTorch 2.4+cu121's binaries hold neither kernels nor PTX for the "
            "NVIDIA B200's Blackwell (sm_100)") in refused.stdout
