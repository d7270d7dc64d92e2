"""A corpus of malformed tool outputs (tests/data/malformed/, README.md there says what each is):
each one gives a ParseError or an error/fail verdict that names what is wrong, never a pass.

A ``parse:<tool>`` case goes through ``provision.parsers.parse_tool``; a ``check:<id>:<key>``
case is the engine's verdict on that check's outputs, the malformed text as step ``key`` and the
simulated rack's healthy capture (tests/data/<check>/sim_h100_healthy.*) as every other step.
"""
from __future__ import annotations

import re

import pytest

from provision.engine.verdict import verdict
from provision.errors import ParseError
from provision.parsers import parse_tool
from provision.results.model import Outcome, Scope

from tests.unit.checks import hosts_of
from tests.unit.hardening._inputs import CHECKS, DATA, PROFILE

MALFORMED = DATA / "malformed"

# (file, where it goes, what the error or the failing verdict must say)
CASES = [
    ('perftest_bw_average_1e400.txt', 'check:ib_write_bw:mlx5_0', "number '1e400' is not a finite number"),
    ('perftest_bw_average_negative.txt', 'check:ib_write_bw:mlx5_0', 'result -392.34 is negative'),
    ('perftest_one_token_row.txt', 'check:ib_write_bw:mlx5_0', 'incomplete'),
    ('perftest_bw_average_nan.txt', 'check:ib_write_bw:mlx5_0', 'ib_write_bw output is incomplete'),
    ('perftest_msg_size_huge.txt', 'parse:perftest', 'longer than 64 characters'),
    ('nccl_busbw_1e400.txt', 'check:nccl_allreduce:', "number '1e400' is not a finite number"),
    ('nccl_busbw_negative.txt', 'check:nccl_allreduce:', 'busbw -474.52 GB/s is negative'),
    ('nccl_busbw_inf_word.txt', 'check:nccl_allreduce:', "value 'inf' is not a finite number"),
    ('nccl_size_5000_digits.txt', 'check:nccl_allreduce:', "size '9+\\.\\.\\.' is longer than 64 characters"),
    ('nccl_avg_without_colon.txt', 'check:nccl_allreduce:', 'incomplete'),
    ('nccl_wrong_superscript.txt', 'check:nccl_allreduce:',
     'max_size_bytes = 4294967296 B, expected 8589934592 B .NCCL_TRUNCATED'),
    ('nccl_avg_1e400.txt', 'parse:nccl-tests', "number '1e400' is not a finite number"),
    ('gpu_burn_temp_minus_273.txt', 'check:gpu_stress:gpu_burn', 'GPU temperature -273 C is outside -50..150 C'),
    ('gpu_burn_temp_999.txt', 'check:gpu_stress:gpu_burn', 'GPU temperature 999 C is outside -50..150 C'),
    ('gpu_burn_tested_huge.txt', 'parse:gpu-burn', 'more than the 1024 a node can hold'),
    ('gpu_burn_gflops_malformed.txt', 'check:gpu_stress:gpu_burn', "Gflop/s '1\\.2\\.3' is not a number"),
    ('gpu_burn_gflops_5000_digits.txt', 'check:gpu_stress:gpu_burn', 'longer than 64 characters'),
    ('dcgmi_no_table_header.txt', 'check:gpu_stress:dcgmi',
     "not dcgmi diag output: no '\\| Diagnostic \\| Result \\|' table header"),
    ('smi_qx_temp_minus_273.txt', 'check:gpu_health:', 'temperature -273 C is outside -50..150 C'),
    ('smi_qx_temp_nan.txt', 'check:gpu_health:', "value 'nan' is not a finite number"),
    ('smi_qx_ecc_negative.txt', 'check:gpu_health:', 'ecc_uncorrected_volatile -1 is negative'),
    ('smi_qx_cut_mid_tag.txt', 'check:gpu_health:', 'nvidia-smi -q -x output is incomplete'),
    ('smi_qx_attached_huge.txt', 'parse:nvidia-smi-qx', 'longer than 64 characters'),
    ('smi_qx_clique_5000_digits.txt', 'parse:nvidia-smi-qx', "clique id '9+\\.\\.\\.' is longer than 64 characters"),
    ('smi_q_temp_minus_273.txt', 'parse:nvidia-smi-q', 'temperature -273 C is outside -50..150 C'),
    ('smi_q_temp_1e400.txt', 'parse:nvidia-smi-q', "number '1e400' is not a finite number"),
    ('smi_q_attached_5000_digits.txt', 'parse:nvidia-smi-q', 'longer than 64 characters'),
    ('smi_table_power_negative.txt', 'parse:nvidia-smi', 'power -\\d+ W is negative'),
    ('smi_table_temp_minus_273.txt', 'parse:nvidia-smi', 'temperature -273 C is outside -50..150 C'),
    ('smi_csv_temp_minus_273.txt', 'parse:nvidia-smi-csv', 'temperature.gpu -273 C is outside -50..150 C'),
    ('smi_csv_power_negative.txt', 'parse:nvidia-smi-csv', 'power.draw -\\d+(\\.\\d+)? W is negative'),
    ('smi_csv_field_over_128k.txt', 'parse:nvidia-smi-csv', 'unreadable CSV \\(field larger than field limit'),
    ('ibstat_rate_negative.txt', 'check:ib_ports:', 'rate -400 Gb/s is negative'),
    ('ibstat_port_5000_digits.txt', 'check:ib_ports:', "port number '9+\\.\\.\\.' is longer than 64 characters"),
    ('ibstat_missing_colons.txt', 'check:ib_ports:', "state = None, expected 'Active'"),
    ('bonding_speed_negative.txt', 'check:storage:bond', 'Speed -25000 Mb/s is negative'),
    ('bonding_mode_without_colon.txt', 'check:storage:bond', "not /proc/net/bonding output: no 'Bonding Mode:' line"),
    ('bonding_failure_count_5000_digits.txt', 'check:storage:bond', 'longer than 64 characters'),
    ('fio_json_bw_infinity.txt', 'check:storage:fio', "fio JSON 'write\\.bw' is inf"),
    ('fio_json_bw_1e400.txt', 'check:storage:fio', "fio JSON 'write\\.bw' is inf"),
    ('fio_json_bw_400_digits.txt', 'check:storage:fio', "JSON 'write\\.bw' is wider than 64 bits"),
    ('fio_json_bw_negative.txt', 'check:storage:fio', "fio JSON 'write\\.bw' -6288489 is negative"),
    ('fio_json_bw_string.txt', 'check:storage:fio', "JSON 'write\\.bw' is not a number"),
    ('fio_json_iops_nan.txt', 'check:storage:fio', "fio JSON 'write\\.iops' is nan"),
    ('fio_json_nested_too_deep.txt', 'check:storage:fio', 'the JSON document is unreadable \\(RecursionError\\)'),
    ('fio_json_number_5000_digits.txt', 'check:storage:fio', 'the JSON document is unreadable \\(ValueError\\)'),
    ('fio_json_jobs_not_list.txt', 'check:storage:fio', "not an object with a 'jobs' list"),
    ('fio_text_bw_malformed.txt', 'parse:fio', "write bandwidth '1\\.2\\.3' is not a number"),
    ('lspci_speed_dots.txt', 'check:pcie_link:gpu', "link speed '\\.\\.\\.' is not a number"),
    ('lspci_width_5000_digits.txt', 'check:pcie_link:gpu', "link width '9+\\.\\.\\.' is longer than 64 characters"),
    ('nvbandwidth_sum_malformed.txt', 'check:nvbandwidth:', "SUM host_to_device_memcpy_ce '4\\.3\\.8' is not a number"),
    ('nvbandwidth_negative_cell.txt', 'check:nvbandwidth:', 'nvbandwidth printed no host_to_device_memcpy_ce result'),
    ('nvbandwidth_device_5000_digits.txt', 'check:nvbandwidth:', "device '9+\\.\\.\\.' is longer than 64 characters"),
    ('p2p_bandwidth_negative.txt', 'parse:p2pBandwidthLatencyTest', 'uni_p2p_enabled_GBps row 0 -[\\d.]+ is negative'),
    ('nvlink_speed_negative.txt', 'check:nvlink:', 'link 0 speed -26.562 GB/s is negative'),
    ('nvlink_speed_1e400.txt', 'check:nvlink:', "number '1e400' is not a finite number"),
    ('topo_rows_cut.txt', 'check:topology:', 'incomplete'),
    ('topo_gpu_5000_digits.txt', 'check:topology:', "header column 'GPU9+' is not GPU<index>"),
    ('dmesg_xid_5000_digits.txt', 'check:xid:', "Xid '9+\\.\\.\\.' is longer than 64 characters"),
    ('dmesg_xid_pid_5000_digits.txt', 'check:xid:', "pid '9+\\.\\.\\.' is longer than 64 characters"),
    ('dmesg_xid_no_comma.txt', 'check:xid:', "1 Xid line\\(s\\) not of the form"),
    ('dmesg_xid_cut.txt', 'check:xid:',
     "1 Xid line\\(s\\) not of the form .*first: '\\[ 8214.401233\\] NVRM: Xid \\(PCI:0000:1'"),
    ('stack_two_driver_versions.txt', 'check:stack:driver', 'several driver versions: 535.183.01, 550.127.05'),
    ('stack_package_garbage.txt', 'check:stack:packages',
     "not dpkg-query/rpm -q output: not a package line"),
    ('ibnetdiscover_port_999.txt', 'parse:ibnetdiscover', 'port number 999 is outside 1..255'),
    ('ibnetdiscover_far_port_huge.txt', 'parse:ibnetdiscover',
     "port number '9+\\.\\.\\.' is longer than 64 characters"),
    ('ibnetdiscover_switch_lid_99999.txt', 'parse:ibnetdiscover', 'LID 99999 is over 65535'),
    ('ibnetdiscover_short_guids.txt', 'parse:ibnetdiscover', "no 'Switch N .S-<16 hex digits>.' or 'Ca N"),
    ('empty.txt', 'parse:nvidia-smi', 'the text is empty'),
    ('nul_bytes.txt', 'parse:nvidia-smi', "no 'NVIDIA-SMI \\.\\.\\. Driver Version' banner"),
]


def _healthy(check_id: str) -> dict[str, str]:
    """Step key -> the healthy simulated capture of each of the check's steps."""
    found = sorted((DATA / check_id).glob("sim_h100_healthy*.txt"))
    return {path.name.removesuffix(".txt").partition(".")[2]: path.read_text() for path in found}


@pytest.mark.parametrize("file,target,message", CASES, ids=[c[0].removesuffix(".txt") for c in CASES])
def test_a_malformed_output_is_an_error_or_a_failure_naming_what_is_wrong(file, target, message):
    text = (MALFORMED / file).read_text()
    kind, _, rest = target.partition(":")
    if kind == "parse":
        with pytest.raises(ParseError) as info:
            parse_tool(rest, text, file)
        said = str(info.value)
    else:
        check_id, _, key = rest.partition(":")
        texts = {**_healthy(check_id), key: text} if check_id in ("gpu_stress", "storage", "stack", "pcie_link") \
            else {key: text}
        result = verdict(CHECKS[check_id], ("node07",), Scope.NODE, PROFILE, texts,
                         hosts_of(CHECKS[check_id], ("node07",), PROFILE))
        assert result.outcome in (Outcome.ERROR, Outcome.FAIL), f"{file}: {result.outcome.value}: {result.message}"
        said = result.message
    assert "\n" not in said
    assert re.search(message, said), f"{file}: {said}"


def test_every_corpus_file_is_a_case_and_is_described_in_the_readme():
    files = sorted(p.name for p in MALFORMED.glob("*.txt"))
    readme = (MALFORMED / "README.md").read_text()
    assert files == sorted(c[0] for c in CASES)
    assert len(files) >= 40
    assert [f for f in files if f"`{f}`" not in readme] == []
