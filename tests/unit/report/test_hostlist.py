"""Host names as Slurm hostlists: the cases of Slurm's rules (trailing number, zero padding kept,
ranges, names without a number), and, where Slurm is installed, the same answer as
``scontrol show hostlist``."""
import os
import shutil
import subprocess

import pytest

from provision.report import hostlist

CASES = [
    (["gpu046", "gpu012", "gpu044", "gpu045", "gpu045"], "gpu[012,044-046]"),  # repeats once, sorted, ranges
    (["n9", "n10", "n11"], "n[9-11]"),  # no padding: the width grows with the number
    (["n09", "n10"], "n[09-10]"),  # padding kept
    (["gpu-r01-001", "gpu-r01-002", "gpu-r02-001"], "gpu-r01-[001-002],gpu-r02-001"),  # only the last number
    (["login", "gpu1", "gpu3"], "gpu[1,3],login"),
    (["node01"], "node01"),
    ([], ""),
    # digits not last: left as they are, as Slurm leaves them (Slurm 22.05 refuses gpu[01-02].cluster.local)
    (["gpu02.cluster.local", "gpu01.cluster.local"], "gpu01.cluster.local,gpu02.cluster.local"),
    (["n2-ib", "n1-ib", "n3"], "n3,n1-ib,n2-ib"),
]


@pytest.mark.parametrize("hosts,folded", CASES)
def test_fold_follows_slurm_rules_and_expands_back(hosts, folded):
    assert hostlist.fold(hosts) == folded
    assert set(hostlist.expand(folded)) == set(hosts)


SCONTROL = shutil.which("scontrol")


def _slurm_conf(tmp_path):
    if SCONTROL is None:
        pytest.skip("scontrol is not installed (slurm-wlm: make test installs it)")
    conf = tmp_path / "slurm.conf"  # scontrol reads a configuration even to fold names; no daemon is asked
    conf.write_text("ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=localhost\n"
                    "PartitionName=p Nodes=localhost\n")
    return conf


@pytest.mark.parametrize("hosts,folded", [c for c in CASES if c[0]])
def test_slurm_expands_every_fold_back_to_its_hosts(hosts, folded, tmp_path):
    conf = _slurm_conf(tmp_path)
    said = subprocess.run([SCONTROL, "show", "hostnames", folded], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "SLURM_CONF": str(conf)}).stdout.split()
    assert sorted(said) == sorted(set(hosts))


@pytest.mark.parametrize("hosts,folded", [c for c in CASES if c[0] and "login" not in c[0] and "n3" not in c[0]
                                          and not any("." in h for h in c[0])])
def test_fold_agrees_with_scontrol(hosts, folded, tmp_path):
    conf = _slurm_conf(tmp_path)
    ordered = hostlist.expand(folded)  # scontrol folds neighbours in the order given
    said = subprocess.run([SCONTROL, "show", "hostlist", ",".join(ordered)], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "SLURM_CONF": str(conf)}).stdout.strip()
    assert said == folded
