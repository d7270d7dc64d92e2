"""What the controller ships to a node (``provision.rollout.bundle``): the install bundle made byte for byte the same
from the same sources, with the files the node's playbook reads and no build debris; the node's own inventory, with
none of the controller's connection settings or BMC credentials and its NVLink domain's peers; the peers grouped as
nvidia_imex groups them; the digest of the variables that describe a kind of node rather than one node."""
import gzip
import io
import tarfile

import yaml

from provision.rollout import bundle
from tests.unit.rollout.fakes import host


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def _read(data: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.extractfile(name).read()


def test_two_builds_give_the_same_bytes_and_digest():
    first, second = bundle.build(), bundle.build()
    assert first == second
    assert len(first[1]) == 64 and int(first[1], 16) >= 0
    assert gzip.decompress(first[0])  # a gzip'd stream


def test_the_bundle_holds_what_the_node_playbook_reads_and_its_digest():
    data, digest = bundle.build()
    names = _members(data)
    for name in ("node_side.py", "ansible.cfg", "playbooks/site.yml", "roles/nvidia_driver/tasks/main.yml",
                 "plugins/filter/install_facts.py", "provision/profiles/stack_release.yaml", "DIGEST"):
        assert name in names, name
    assert _read(data, "DIGEST").decode().strip() == digest
    assert _read(data, "node_side.py") == bundle.NODE_SIDE.read_bytes()


def test_the_bundle_holds_no_bytecode_and_every_member_is_owned_by_root_at_mtime_zero():
    members = _members(bundle.build()[0])
    assert not [n for n in members if "__pycache__" in n.split("/") or n.endswith((".pyc", ".pyo"))]
    assert {(m.mtime, m.uid, m.gid) for m in members.values()} == {(0, 0, 0)}
    assert all(m.isfile() and m.mode in (0o644, 0o755) for m in members.values())
    assert list(members) == sorted(n for n in members if n != "DIGEST") + ["DIGEST"]


CONTROLLER_ONLY = {"ansible_user": "admin", "ansible_ssh_private_key_file": "/site/keys/id_ed25519",
                   "ansible_ssh_common_args": "-o ProxyJump=bastion", "provision_bmc_address": "127.0.8.1",
                   "provision_bmc_password_file": "/site/bmc.pass",
                   "provision_known_hosts_file": "/site/known_hosts"}


def test_the_node_inventory_keeps_the_node_variables_and_none_of_the_controller_ones():
    node = host("gpu01", "127.0.9.11", provision_profile="h100", ansible_python_interpreter="/usr/bin/python3",
                nvidia_driver_reboot=False, provision_nvlink_domain="nvl-a", ansible_host="gpu01.bmc",
                nccl_version="2.21.5", **CONTROLLER_ONLY)
    text = bundle.host_inventory(node, [])
    hosts = yaml.safe_load(text)["all"]["hosts"]
    assert list(hosts) == ["gpu01"]
    own = hosts["gpu01"]
    assert own["ansible_host"] == "127.0.9.11"  # the address the controller resolved, not the variable
    assert own["provision_profile"] == "h100" and own["ansible_python_interpreter"] == "/usr/bin/python3"
    assert own["nvidia_driver_reboot"] is False and own["nccl_version"] == "2.21.5"
    assert own["provision_nvlink_domain"] == "nvl-a"
    assert not set(CONTROLLER_ONLY) & set(own)
    for secret in ("/site/bmc.pass", "127.0.8.1", "id_ed25519", "bastion", "/site/known_hosts", "admin"):
        assert secret.encode() not in text


def test_the_node_inventory_gives_its_peers_their_address_and_domain_variables_only():
    peer_vars = {"provision_profile": "h100", "nccl_version": "2.21.5", **CONTROLLER_ONLY}
    node = host("gpu01", "127.0.9.11", provision_nvlink_domain="nvl-a", **peer_vars)
    peers = [node, host("gpu02", "127.0.9.12", provision_nvlink_domain="nvl-a", provision_rack="r1", **peer_vars),
             host("gpu03", "127.0.9.13", provision_rack="r1", provision_nvlink_domain="", **peer_vars)]
    hosts = yaml.safe_load(bundle.host_inventory(node, peers))["all"]["hosts"]
    assert set(hosts) == {"gpu01", "gpu02", "gpu03"}
    assert hosts["gpu02"] == {"ansible_host": "127.0.9.12", "provision_nvlink_domain": "nvl-a", "provision_rack": "r1"}
    # an empty domain is kept: the role's default() replaces only an undefined variable
    assert hosts["gpu03"] == {"ansible_host": "127.0.9.13", "provision_nvlink_domain": "", "provision_rack": "r1"}
    assert hosts["gpu01"]["provision_profile"] == "h100"  # the host itself is not cut down as a peer


def test_domain_peers_group_by_nvlink_domain_then_rack():
    a1, a2 = host("a1", provision_nvlink_domain="A"), host("a2", provision_nvlink_domain="A", provision_rack="r9")
    b1 = host("b1", provision_nvlink_domain="B", provision_rack="r1")
    r1, r2 = host("r1", provision_rack="r1"), host("r2", provision_rack="r1", provision_nvlink_domain="")
    lone = host("lone")
    fleet = [a1, a2, b1, r1, r2, lone]
    assert bundle.domain_peers(a1, fleet) == [a1, a2]
    # b1's rack is r1 but its domain B wins for it; r2's domain is defined (empty), so its rack is not looked at:
    # roles/nvidia_imex/vars/main.yml groups by ``domain | default(rack | default(''))``
    assert bundle.domain_peers(r1, fleet) == [r1]
    assert bundle.domain_peers(b1, fleet) == [b1]
    assert bundle.domain_peers(lone, fleet) == [r2, lone]  # both "": the role lists them together too


def test_the_image_vars_digest_ignores_what_names_one_node():
    common = {"provision_profile": "h100", "nccl_version": "2.21.5", "nvidia_driver_branch": "550"}
    one = host("gpu01", ansible_host="127.0.9.1", provision_bmc_address="127.0.8.1", provision_nvlink_domain="A",
               provision_slurm_node="gpu01", **common)
    two = host("gpu02", ansible_host="127.0.9.2", provision_bmc_address="127.0.8.2", provision_nvlink_domain="B",
               provision_slurm_node="gpu02", provision_rack="r2", **common)
    assert bundle.image_vars_digest(one) == bundle.image_vars_digest(two)
    other = host("gpu03", **{**common, "nccl_version": "2.23.4"})
    assert bundle.image_vars_digest(other) != bundle.image_vars_digest(one)
    assert bundle.image_vars_digest(host("gpu04", **common)) == bundle.image_vars_digest(one)
