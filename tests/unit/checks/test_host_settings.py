"""host_settings' sysfs reads when there is nothing to read: find and grep exit 1 (or 2 for a missing folder) and
complain on standard error, which the step keeps after its output (Step.exit_judged). A node whose kernel runs no
cpufreq driver has no governor to be wrong; a node without IOMMU groups has the IOMMU off; a read refused for
another reason (permission denied) is an error, never a pass."""
from pathlib import Path

from provision import profiles
from provision.checks import registry
from provision.engine.verdict import verdict
from provision.inventory import Host
from provision.results.model import Outcome

DATA = Path(__file__).resolve().parents[2] / "data" / "host_settings"
CHECK = registry()["host_settings"]
H100 = profiles.load("h100-sxm5-80g-ndr")
NODE = Host("node07", "127.0.0.1", 22, "root", None, None, "h100-sxm5-80g-ndr")


def healthy() -> dict[str, str]:
    return {key: (DATA / f"sim_h100_healthy.{key}.txt").read_text() for key in ("cmdline", "iommu", "governor",
                                                                                  "modules", "mtu")}


def judged(**texts):
    return verdict(CHECK, ("node07",), CHECK.scope, H100, {**healthy(), **texts}, NODE)


def test_the_healthy_node_passes():
    assert judged().outcome is Outcome.PASS


def test_no_cpufreq_driver_is_a_fact_not_a_failure_and_the_other_rules_still_judge():
    missing = "grep: /sys/devices/system/cpu/cpufreq: No such file or directory\n"
    for text in ("", missing):
        result = judged(governor=text)
        assert result.outcome is Outcome.PASS, result.message
        [fact] = [f for f in result.findings if f.metric == "scaling_governor"]
        assert fact.value == "no cpufreq policy" and "BIOS" in fact.detail
    slow = judged(governor="", modules="")  # nvidia_peermem not loaded still fails beside it
    assert slow.outcome is Outcome.FAIL and "nvidia_peermem = 'not loaded'" in slow.message


def test_no_iommu_groups_folder_is_the_iommu_off():
    result = judged(iommu="find: '/sys/kernel/iommu_groups': No such file or directory\n")
    assert result.outcome is Outcome.PASS
    assert [f.value for f in result.findings if f.metric == "iommu"] == ["off"]


def test_a_missing_program_is_not_taken_for_a_missing_folder():
    result = judged(iommu="find: 'grep': No such file or directory\n")  # find's -exec grep could not run
    assert result.outcome is Outcome.ERROR and "find: 'grep': No such file or directory" in result.message


def test_a_read_refused_otherwise_is_an_error():
    result = judged(governor="grep: /sys/devices/system/cpu/cpufreq/policy0/scaling_governor: Permission denied\n")
    assert result.outcome is Outcome.ERROR and "Permission denied" in result.message
