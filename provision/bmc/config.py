"""A node's BMC as the inventory names it (``provision.inventory.bmcvars``: the variables, ``BmcConfig``, their
checks), and ``of(host, insecure)``: the BmcConfig of an inventory Host."""
from __future__ import annotations

from provision.errors import BmcError
from provision.inventory.bmcvars import (ADDRESS, BOOT_ID_PATH, CA_FILE, DEFAULT_BOOT_ID_PATH, DEFAULT_PORT,  # noqa: F401
                                         PASSWORD_ENV, PASSWORD_FILE, PROTOCOL, PROTOCOLS, SYSTEM, USERNAME,
                                         VARIABLES, BmcConfig, VarProblem, from_vars, password_file_problem)


def of(host, insecure: bool = False) -> BmcConfig | None:
    """The BmcConfig of a ``provision.inventory.Host`` (its variables as the inventory templated and checked them);
    None when it names no BMC. Raises BmcError for a variable the preflight did not see (a Host built by hand)."""
    try:
        return from_vars(host.name, host.vars, insecure)
    except VarProblem as exc:
        raise BmcError(f"{host.name}: {exc.text}") from None
