"""The GPUs a job holds and the processes on the GPUs (``provision.health.gpus``)."""
import pytest

from provision.errors import ParseError
from provision.health import gpus


def test_job_gpus_from_slurm():
    assert gpus.job_gpus({"SLURM_JOB_GPUS": "0,1,5"}) == (0, 1, 5)
    assert gpus.job_gpus({}) == () and gpus.job_gpus({"SLURM_JOB_GPUS": ""}) == ()
    with pytest.raises(ParseError, match="SLURM_JOB_GPUS='gpu:2'"):
        gpus.job_gpus({"SLURM_JOB_GPUS": "gpu:2"})


def test_compute_processes_as_nvidia_smi_prints_them():
    text = "00000000:19:00.0, 2231, python3\n00000000:3B:00.0, 2232, /usr/bin/python3 -m torch, x\n"
    found = gpus.compute_processes(text)
    assert [(p.bus_id, p.pid, p.name) for p in found] == [
        ("00000000:19:00.0", 2231, "python3"), ("00000000:3B:00.0", 2232, "/usr/bin/python3 -m torch, x")]
    assert gpus.compute_processes("") == [] and gpus.compute_processes("No running processes found\n") == []
    with pytest.raises(ParseError, match="is not '<bus id>, <pid>, <name>'"):
        gpus.compute_processes("Failed to initialize NVML: Driver/library version mismatch\n")
