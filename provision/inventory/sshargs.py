"""The options Ansible's ssh connection plugin gives ``ssh`` for a host, so the burn-in can ask
OpenSSH the same question (``provision.engine.sshconfig``).

``options(variables) -> tuple[str, ...]``: the argv between ``ssh`` and the host argument, in
the order of ansible-core 2.19's ``plugins/connection/ssh.py`` ``_build_command``: ansible.cfg's
or ``ansible_ssh_args``, ``Port``, ``IdentityFile``, ``User``, then ``ansible_ssh_common_args`` and
``ansible_ssh_extra_args`` split as Ansible splits them. OpenSSH keeps the first value of each
option, so the order is the precedence. Left out, as they change neither where nor how a
node is reached by key: the password options, ``ConnectTimeout`` and ``ControlPath``.
``ansible_private_key`` (a key's text, which Ansible adds to its own ssh-agent) is not
honoured: give a key file or an agent. The values come from Ansible's own option resolution
(variables, ansible.cfg, environment), computed once per distinct set of variables.
"""
from __future__ import annotations

import functools
import json
import os
import shlex

# The ssh plugin's options that build the command line (ansible-doc -t connection ssh).
OPTIONS = ("port", "remote_user", "private_key_file", "ssh_args", "ssh_common_args", "ssh_extra_args",
           "host_key_checking")


@functools.lru_cache(maxsize=1)
def variable_names() -> tuple[str, ...]:
    """Every host variable that sets one of ``OPTIONS`` (e.g. ansible_port, ansible_ssh_port)."""
    from ansible import constants as C
    from ansible.plugins.loader import connection_loader

    connection_loader.get("ssh", class_only=True)  # registers the plugin's option definitions
    definitions = C.config.get_configuration_definitions("connection", "ssh")
    return tuple(v["name"] for o in OPTIONS for v in definitions[o].get("vars", []))


def options(variables: dict) -> tuple[str, ...]:
    """The ssh options for a host whose (templated) variables among ``variable_names()`` are ``variables``."""
    return _options(json.dumps(variables, sort_keys=True, default=str))


@functools.lru_cache(maxsize=4096)
def _options(key: str) -> tuple[str, ...]:
    from ansible import constants as C

    variable_names()
    o = C.config.get_plugin_options("connection", "ssh", variables=json.loads(key))
    # Ansible adds an option that turns host key checking off when host_key_checking is false; a GPU
    # node with it is refused by the inventory (provision.inventory.fields) and the burn-in checks
    # host keys strictly whatever ssh_config says, so it is left out here.
    args = split(o["ssh_args"])
    if o["port"] is not None:
        args += ["-o", f"Port={o['port']}"]
    if o["private_key_file"]:
        args += ["-o", f'IdentityFile="{os.path.expanduser(o["private_key_file"])}"']
    if o["remote_user"]:
        args += ["-o", f'User="{o["remote_user"]}"']
    return tuple(args + split(o["ssh_common_args"]) + split(o["ssh_extra_args"]))


def split(text) -> list[str]:
    """Ansible's ``_split_ssh_args``: shell words, empty ones dropped."""
    return [w.strip() for w in shlex.split(str(text or "")) if w.strip()]
