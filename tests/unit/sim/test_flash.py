"""`provision sim flash`: a firmware version is checked before any node is touched."""
import pytest

from provision.errors import ProvisionError
from provision.sim import faults


@pytest.mark.parametrize("version", ["28.40", "28.40.1000; rm -rf /", "v28.40.1000", ""])
def test_a_version_not_in_connectx_form_is_refused_in_one_line(tmp_path, version):
    with pytest.raises(ProvisionError, match=r"^--fw .*: a firmware version MAJOR\.MINOR\.SUBMINOR"):
        faults.flash(tmp_path, "node01", version)


def test_a_well_formed_version_reaches_the_rack(tmp_path):
    with pytest.raises(ProvisionError, match="no simulated node 'node01'"):  # no rack here: the node lookup answers
        faults.flash(tmp_path, "node01", "28.40.1000")
