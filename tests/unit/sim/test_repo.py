"""The simulated CUDA repositories as apt and dnf read them: built from the snapshots (provision/sim/repo.py).

A repository holds two release lines at once (the seed line's driver 550 / CUDA 12 and the Blackwell
line's driver 580 / CUDA 13, issue 24), so one package name comes in several versions (libnccl2
+cuda12.4 and +cuda13.0; nvidia-driver-cuda 550 and 580 on rhel9); the index must list each version
with its own dependencies, and the arm64 folder (``ubuntu2404/sbsa``) must be served where apt looks.
Only a subset of each snapshot is built: dpkg-deb and rpmbuild cost ~0.1-0.5 s a package.
"""
from __future__ import annotations

import dataclasses
import gzip
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from provision.sim import repo, rpmrepo, snapshot

V580 = "580.105.08"


def subset(snap: snapshot.Snapshot, names: set[str]) -> snapshot.Snapshot:
    return dataclasses.replace(snap, packages=tuple(p for p in snap.packages if p.name in names))


def stanzas(packages_file: Path) -> list[dict[str, str]]:
    """The stanzas of an apt ``Packages`` index, one dict of fields each."""
    out = []
    for block in packages_file.read_text().strip().split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", block, flags=re.M))
        out.append(fields)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """ubuntu2204 (both lines of libnccl2, the 580 driver companions) and ubuntu2404-sbsa, built and signed."""
    work = tmp_path_factory.mktemp("repo")
    gpg = repo.signing_gpg(work)
    u2204 = subset(snapshot.load("ubuntu2204"), {"libnccl2", "nvidia-imex", "libnvsdm", "nvidia-fabricmanager",
                                                  "libnvidia-nscq", "datacenter-gpu-manager-4-core",
                                                  "datacenter-gpu-manager-4-cuda13", "nvidia-utils-580"})
    repo._build_folder(u2204, work / "www" / repo.cuda_dir("ubuntu2204"), gpg)
    sbsa = subset(snapshot.load("ubuntu2404-sbsa"), {"cuda-keyring", "nvidia-imex", "libnccl2", "cuda-drivers-580",
                                                      "datacenter-gpu-manager-4-cuda13"})
    repo._build_folder(sbsa, work / "www" / repo.cuda_dir("ubuntu2404-sbsa"), gpg)
    yield work
    repo.stop(work)


def test_the_arm64_folder_is_where_apt_looks():
    assert repo.cuda_dir("ubuntu2204") == "compute/cuda/repos/ubuntu2204/x86_64"
    assert repo.cuda_dir("ubuntu2404-sbsa") == "compute/cuda/repos/ubuntu2404/sbsa"
    url = snapshot.load("ubuntu2404-sbsa").repository["url"]
    assert url.endswith("/" + repo.cuda_dir("ubuntu2404-sbsa") + "/")


def test_one_name_in_two_versions_is_indexed_twice_with_its_own_files(built):
    dist = built / "www" / repo.cuda_dir("ubuntu2204")
    index = stanzas(dist / "Packages")
    nccl = sorted(s["Version"] for s in index if s["Package"] == "libnccl2")
    assert nccl == ["2.21.5-1+cuda12.4", "2.28.3-1+cuda13.0"]
    assert (dist / "libnccl2_2.21.5-1+cuda12.4_amd64.deb").is_file()
    assert (dist / "libnccl2_2.28.3-1+cuda13.0_amd64.deb").is_file()
    assert (dist / "InRelease").is_file() and (dist / "Release.gpg").is_file()


def test_the_blackwell_companions_are_served_at_the_driver_version(built):
    index = {(s["Package"], s["Version"]): s for s in stanzas(built / "www" / repo.cuda_dir("ubuntu2204") / "Packages")}
    for name in ("nvidia-imex", "libnvsdm", "nvidia-fabricmanager", "libnvidia-nscq"):
        assert (name, f"{V580}-1") in index, name
    assert index[("nvidia-imex", f"{V580}-1")]["Provides"] == "nvidia-imex-580"
    assert index[("nvidia-fabricmanager", f"{V580}-1")]["Provides"] == "nvidia-fabricmanager-580"
    plugins = index[("datacenter-gpu-manager-4-cuda13", "1:4.5.2-1")]
    assert plugins["Depends"] == "datacenter-gpu-manager-4-core (= 1:4.5.2-1)"
    assert ("datacenter-gpu-manager-4-core", "1:4.5.2-1") in index


def test_the_580_driver_reports_cuda_13(tmp_path):
    snap = snapshot.load("ubuntu2204")
    pkg = snap.package("nvidia-utils-580")
    facts = repo.package_facts(snap, pkg)
    driver = yaml.safe_load(facts["usr/lib/provision-sim/nvidia-driver.json"])
    assert driver == {"version": V580, "cuda_version": "13.0"}
    nccl = repo.package_facts(snap, snap.package("libnccl2", "2.28.3-1+cuda13.0"))
    assert yaml.safe_load(nccl["usr/lib/provision-sim/nccl.json"]) == {"version": "2.28.3"}


def test_the_sbsa_folder_serves_arm64_packages(built):
    dist = built / "www" / repo.cuda_dir("ubuntu2404-sbsa")
    index = {s["Package"]: s for s in stanzas(dist / "Packages")}
    assert index["cuda-drivers-580"]["Version"] == f"{V580}-0ubuntu1"
    assert index["cuda-drivers-580"]["Architecture"] == "arm64"
    assert index["nvidia-imex"]["Version"] == f"{V580}-1" and index["nvidia-imex"]["Architecture"] == "arm64"
    assert index["libnccl2"]["Version"] == "2.28.3-1+cuda13.0"
    assert index["cuda-keyring"]["Architecture"] == "all"
    assert "libnvsdm" not in index  # not built for arm64 (snapshot note)
    assert (dist / "cuda-drivers-580_580.105.08-0ubuntu1_arm64.deb").is_file()


def test_rhel9_streams_name_their_own_branch():
    """Streams name packages, the repository holds two branches of each: a stream's artifacts are its branch's."""
    snap = snapshot.load("rhel9")
    text = rpmrepo.modules_yaml(snap)
    docs = {(d["data"]["name"], d["data"]["stream"]): d["data"] for d in yaml.safe_load_all(text)
            if d["document"] == "modulemd"}
    old, new = docs[("nvidia-driver", "550-dkms")], docs[("nvidia-driver", "580-dkms")]
    open_ = docs[("nvidia-driver", "580-open")]
    assert "nvidia-driver-cuda-3:550.127.05-1.el9.x86_64" in old["artifacts"]["rpms"]
    assert not any("580.105.08" in a for a in old["artifacts"]["rpms"])
    assert "nvidia-driver-cuda-3:580.105.08-1.el9.x86_64" in new["artifacts"]["rpms"]
    assert not any("550.127.05" in a for a in new["artifacts"]["rpms"])
    assert "nvidia-fabricmanager-0:580.105.08-1.x86_64" in new["artifacts"]["rpms"]
    assert "kmod-nvidia-open-dkms" in open_["profiles"]["default"]["rpms"]
    assert "kmod-nvidia-latest-dkms" not in open_["profiles"]["default"]["rpms"]


def test_rhel9_repodata_lists_both_branches(built):
    snap = subset(snapshot.load("rhel9"), {"libnccl", "nvidia-imex", "nvidia-driver-cuda"})
    snap = dataclasses.replace(snap, modules=())
    dist = repo._build_folder(snap, built / "www" / repo.cuda_dir("rhel9"), repo.signing_gpg(built))  # the rack's key
    primary = next((dist / "repodata").glob("*primary.xml.gz"))
    ns = {"c": "http://linux.duke.edu/metadata/common"}
    found = set()
    for pkg in ET.fromstring(gzip.decompress(primary.read_bytes())).findall("c:package", ns):
        v = pkg.find("c:version", ns).attrib
        found.add((pkg.find("c:name", ns).text, f"{v['epoch']}:{v['ver']}-{v['rel']}"))
    assert ("libnccl", "0:2.21.5-1+cuda12.4") in found and ("libnccl", "0:2.28.3-1+cuda13.0") in found
    assert ("nvidia-driver-cuda", "3:550.127.05-1.el9") in found
    assert ("nvidia-driver-cuda", f"3:{V580}-1.el9") in found
    assert ("nvidia-imex", f"0:{V580}-1") in found
