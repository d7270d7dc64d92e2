"""Where things are: the Ansible content (ansible.cfg, playbooks, roles), run results, inventories, and tools in
this virtualenv.

Two layouts, told apart by what is on disk:

- a source checkout (``make setup``, an editable install): ``playbooks/`` and ``roles/`` beside the package, the
  content root is the checkout (``CHECKOUT`` true), runs go to ``<checkout>/runs`` and ``-i NAME`` finds
  ``<checkout>/inventory/NAME``;
- an installed package (``pip install .``, ``pipx install provision-*.whl``): the wheel carries the content under
  ``provision/_content`` (setup.py's build step copies ``ansible.cfg``, ``playbooks/``, ``plugins/`` and ``roles/``
  there), runs go to ``./runs`` and ``-i NAME`` finds ``./inventory/NAME``, both in the current folder, as a site's
  own inventory repository holds them.

``PROVISION_RUNS_DIR`` moves the runs in both (the tests point it elsewhere).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
_CHECKOUT_ROOT = PACKAGE.parent
CHECKOUT = (_CHECKOUT_ROOT / "playbooks").is_dir() and (_CHECKOUT_ROOT / "roles").is_dir()
# The content root: ansible.cfg, playbooks/, plugins/ and roles/ (and, in a checkout, everything else of the project).
ROOT = _CHECKOUT_ROOT if CHECKOUT else PACKAGE / "_content"
_WORK = _CHECKOUT_ROOT if CHECKOUT else Path.cwd()
RUNS = Path(os.environ.get("PROVISION_RUNS_DIR", _WORK / "runs"))
INVENTORIES = _WORK / "inventory"  # where `-i NAME` looks when NAME is not a path
PLAYBOOKS = ROOT / "playbooks"
ROLES = ROOT / "roles"
PROFILES = PACKAGE / "profiles"  # the hardware profiles and the stack release, read by the playbooks too


def tool(name: str) -> str:
    """Path of a console tool installed beside this Python (the virtualenv), else from PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name) or name
