"""The rhel9 folder of the simulated CUDA repository: signed RPMs, repodata and module metadata.

NVIDIA's rhel9 repository publishes the driver as dnf module streams (``nvidia-driver:550``,
``nvidia-driver:550-dkms``, ... with profiles ``default``, ``fm``, ``ks``); ``modules.yaml``
is added to the repodata as ``dnf module`` expects it (modulemd v2 documents plus a
modulemd-defaults document; https://github.com/fedora-modularity/libmodulemd/blob/main/yaml_specs/).
The streams, profiles and member packages come from ``snapshot/rhel9.yaml``.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import jinja2
import yaml

from provision import external
from provision.errors import RunnerError

_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                          keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False)
MODULE_VERSION = 20241015000000  # a modulemd build number; any integer, newer wins


def build(snap, trees: dict, dist: Path, gpg: list[str]) -> None:
    """Build, sign and index every package of ``snap`` (its files: ``trees[pkg]``) into ``dist``.
    Raises RunnerError."""
    with tempfile.TemporaryDirectory() as top:
        for pkg in snap.packages:
            dist_rpm = _rpmbuild(pkg, trees[pkg], Path(top), pkg.provides)
            _sign(dist_rpm, gpg)
            target = dist / dist_rpm.name
            dist_rpm.replace(target)
    _run(["createrepo_c", "--quiet", "--update", str(dist)])
    if snap.modules:
        modules = dist / "modules.yaml"
        modules.write_text(modules_yaml(snap))
        _run(["modifyrepo_c", "--mdtype=modules", str(modules), str(dist / "repodata")])


def build_one(pkg, tree: Path, out_dir: Path, provides: tuple[str, ...] = ()) -> Path:
    """Build one unsigned RPM of ``pkg`` from ``tree`` into ``out_dir``; return its path."""
    with tempfile.TemporaryDirectory() as top:
        rpm = _rpmbuild(pkg, tree, Path(top), provides)
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(rpm.replace(out_dir / rpm.name))


def _rpmbuild(pkg, tree: Path, top: Path, provides: tuple[str, ...] = ()) -> Path:
    files = sorted("/" + str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() or p.is_symlink())
    rest = pkg.version.split(":", 1)[-1]
    version, _, release = rest.rpartition("-") if "-" in rest else (rest, "", "1")
    arch = pkg.arch if pkg.arch in ("x86_64", "noarch") else "x86_64"
    spec = top / f"{pkg.name}.spec"
    spec.write_text(_ENV.get_template("package.spec.j2").render(
        pkg=pkg, epoch=pkg.epoch, version=version, release=release, arch=arch, tree=tree, files=files,
        provides=provides))
    _run(["rpmbuild", "-bb", "--quiet", "--define", f"_topdir {top}", "--define", "_build_id_links none",
          "--define", "__os_install_post %{nil}", "--define", "_binary_payload w2.xzdio", str(spec)])
    built = [p for p in (top / "RPMS").rglob(f"{pkg.name}-*.rpm") if p.name.startswith(f"{pkg.name}-{version}-")]
    if len(built) != 1:
        raise RunnerError(f"rpmbuild made {len(built)} files for {pkg.name}")
    return built[0]


def rocky_mirror(www: Path, repo_url: str, work: Path, gpg: list[str]) -> Path:
    """Rocky's BaseOS, AppStream and CRB and EPEL 9 as this rack's mirror serves them (empty: the
    node's own packages are recorded as installed), the ``epel-release`` package NVIDIA's guide
    installs first, and the base rpm a Rocky node's database records. Returns that base rpm."""
    from provision.sim.osflavor import ROCKY_BASE, ROCKY_MIRROR, ROCKY_REPOS
    from provision.sim.snapshot import Package
    folders = {name: www / "rocky/9" / name / "x86_64/os" for name in ROCKY_REPOS}
    folders["EPEL"] = www / "epel/9/Everything/x86_64"
    for repo_name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        for name, version in ROCKY_MIRROR.get(repo_name, []):
            stub = work / "stand-ins" / name
            (stub / "usr/share/doc" / name).mkdir(parents=True, exist_ok=True)
            (stub / "usr/share/doc" / name / "README.provision-sim").write_text(
                f"{name}: a dependency of NVIDIA's packages that Rocky/EPEL ship; stand-in contents.\n")
            build_one(Package(name, version, "x86_64", (), (), "os", ()), stub, folder)
        _run(["createrepo_c", "--quiet", str(folder)])
    tree = work / "epel-release"
    (tree / "etc/yum.repos.d").mkdir(parents=True, exist_ok=True)
    (tree / "etc/yum.repos.d/epel.repo").write_text(
        f"[epel]\nname=Extra Packages for Enterprise Linux 9 - $basearch\nbaseurl={repo_url}/epel/9/Everything/"
        "$basearch/\nenabled=1\ngpgcheck=0\n")
    # epel-release 9-8.el9: https://dl.fedoraproject.org/pub/epel/9/Everything/x86_64/Packages/e/ (inferred
    # from EPEL's 2024 listing; the guide installs epel-release-latest-9.noarch.rpm).
    epel = Package("epel-release", "9-8.el9", "noarch", (), (), "os", ())
    built = build_one(epel, tree, work / "rpms")
    _sign(built, gpg)
    built.replace(www / "epel/epel-release-latest-9.noarch.rpm")
    (www / "epel/RPM-GPG-KEY-EPEL-9").write_bytes(external.run(gpg + ["--armor", "--export"], capture_output=True,
                                                                 check=True).stdout)
    empty = work / "os-tree"
    (empty / "etc/provision-sim").mkdir(parents=True, exist_ok=True)
    (empty / "etc/provision-sim/rocky-base").write_text("\n".join(ROCKY_BASE) + "\n")
    base = Package("provision-sim-rocky9-os", "9.4-1.el9", "noarch", (), (), "os", ())
    return build_one(base, empty, work / "rpms", provides=tuple(ROCKY_BASE))


def _sign(rpm: Path, gpg: list[str]) -> None:
    home = gpg[gpg.index("--homedir") + 1]
    _run(["rpmsign", "--addsign", "--define", f"_gpg_path {home}", "--define", "_gpg_name sim@localhost",
          "--define", "__gpg /usr/bin/gpg",
          "--define", "_gpg_sign_cmd_extra_args --pinentry-mode loopback --passphrase ''", str(rpm)])


def _nevra(pkg) -> str:
    return f"{pkg.name}-{pkg.version if pkg.epoch else '0:' + pkg.version}.{pkg.arch}"


def stream_members(snap, module: dict) -> list:
    """The packages of a stream: its names, at the versions of its branch where the stream names one
    (``580-open`` -> upstream 580.*), since the repository holds several branches under one name."""
    branch = str(module["stream"]).split("-")[0]
    out = []
    for name in module.get("packages", []):
        found = [p for p in snap.packages if p.name == name]
        of_branch = [p for p in found if p.upstream.split(".")[0] == branch] if branch.isdigit() else []
        out.extend(of_branch or found[:1])
    return out


def modules_yaml(snap) -> str:
    """modulemd v2 documents for every stream in the snapshot, then the defaults document."""
    docs = []
    for module in snap.modules:
        members = stream_members(snap, module)
        docs.append({"document": "modulemd", "version": 2, "data": {
            "name": module["name"], "stream": str(module["stream"]), "version": MODULE_VERSION,
            "context": "00000000", "arch": "x86_64", "summary": f"{module['name']} {module['stream']}",
            "description": f"{module['name']} stream {module['stream']} (from NVIDIA's rhel9 repository)",
            "license": {"module": ["MIT"]},
            "profiles": {name: {"rpms": list(rpms)} for name, rpms in (module.get("profiles") or {}).items()},
            "artifacts": {"rpms": sorted(_nevra(p) for p in members)}}})
    names = sorted({m["name"] for m in snap.modules})
    for name in names:
        streams = [m for m in snap.modules if m["name"] == name]
        docs.append({"document": "modulemd-defaults", "version": 1, "data": {
            "module": name, "profiles": {str(m["stream"]): ["default"] for m in streams}}})
    return "".join("---\n" + yaml.safe_dump(d, sort_keys=False) + "...\n" for d in docs)


def _run(argv: list[str]) -> None:
    proc = external.run(argv, capture_output=True, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()[-300:]
        raise RunnerError(f"{argv[0]} failed (exit {proc.returncode}): {detail}")
