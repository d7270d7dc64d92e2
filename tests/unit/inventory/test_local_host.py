"""`burnin --local`: which host and profile this machine is, and the refusals (one line, exit 2)."""
import pytest

from provision import cli, paths
from provision.errors import InventoryError, ProvisionError
from provision.inventory import Vault
from provision.inventory.local import this_host

DATA = paths.ROOT / "tests" / "data" / "inventories"
HOMELAB = (DATA / "homelab",)
VAULT = Vault(password_files=(str(DATA / "homelab-vault-password.txt"),))


def test_the_host_of_this_name_in_the_inventory_or_of_its_first_label():
    label, host = this_host("gpubox", None, HOMELAB, VAULT)
    assert host.name == "gpubox" and host.profile and label == str(HOMELAB[0])
    _, host = this_host("gpubox.lab.example", None, HOMELAB, VAULT)
    assert host.name == "gpubox"


def test_a_profile_alone_judges_this_machine_without_site_variables():
    label, host = this_host("n17", "h100-sxm5-80g-ndr", (), Vault())
    assert (host.name, host.profile, host.vars) == ("n17", "h100-sxm5-80g-ndr", {})
    assert "--profile h100-sxm5-80g-ndr" in label


@pytest.mark.parametrize("name, profile, sources, error, text", [
    ("gpubox", None, (), ProvisionError, "one of the two"),
    ("gpubox", "h100-sxm5-80g-ndr", HOMELAB, ProvisionError, "one of the two"),
    ("elsewhere", None, HOMELAB, InventoryError, "host elsewhere (this machine by --host) is not in the inventory"),
    ("nas01", None, HOMELAB, InventoryError, "host nas01: no provision_profile: not a GPU node"),
    # the host names the run's files; the profile is a bundled one, as in an inventory
    ("../../etc", "h100-sxm5-80g-ndr", (), ProvisionError, "host name '../../etc' is not a safe name"),
    (".hidden", "h100-sxm5-80g-ndr", (), ProvisionError, "host name '.hidden' is not a safe name"),
    ("a..b", "h100-sxm5-80g-ndr", (), ProvisionError, "host name 'a..b' is not a safe name"),
    ("g" * 201, "h100-sxm5-80g-ndr", (), ProvisionError, "at most 200 characters"),
    ("n17", "/tmp/evil", (), ProvisionError, "--profile '/tmp/evil': the name of a bundled profile, not a path"),
    ("n17", "../data/h100-sxm5-80g-ndr", (), ProvisionError, "the name of a bundled profile, not a path"),
    ("n17", "h100-sxm5-80g-ndr.yaml", (), ProvisionError, "the name of a bundled profile, not a path"),
])
def test_refusals_name_the_host_and_what_to_give(name, profile, sources, error, text):
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        this_host(name, profile, sources, VAULT)


@pytest.mark.parametrize("args, text", [
    (["burnin", "--local", "--profile", "h100-sxm5-80g-ndr", "--checks", "ib_pairs"], "ib_pairs need several nodes"),
    (["burnin", "--local", "--profile", "h100-sxm5-80g-ndr", "--scope", "cluster"], "--scope cluster needs several"),
    (["burnin", "--local", "--profile", "h100-sxm5-80g-ndr", "--limit", "n1"], "--limit selects other hosts"),
    (["burnin", "--profile", "h100-sxm5-80g-ndr", "-i", "sim"], "--host and --profile go with --local"),
    (["burnin", "--checks", "xid"], "-i/--inventory is required"),
])
def test_the_cli_refuses_what_local_cannot_do(args, text, capsys):
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert text in err and len(err.strip().splitlines()) == 1
