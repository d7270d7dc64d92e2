"""What the command line is given, checked before any command runs: an empty value is refused, and
every usage error is one line, cut and with its control characters made visible (exit 2). The
options several commands share are read here (``limit``, ``vault``, ``forks``, ``wait``).

``provision run -i prod --limit "$FAILED"`` with nothing in ``$FAILED`` must not install every
host; an argument echoed in an error (a 100,000-character path, an escape sequence) must not flood
or drive the terminal.
"""
from __future__ import annotations

import argparse
import errno

from provision.errors import ExitStatus, ProvisionError
from provision.inventory import Vault
from provision.report.console import cut_words, visible

# An OSError with one of these is about a path the operator gave (too long, missing, not a folder,
# unwritable, a read-only runs folder): bad input, exit 2, not an internal error.
INPUT_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM,
                          errno.EROFS, errno.ELOOP})


OWN_CHECK = ("inventory",)  # refused where it is resolved, with its own words (provision.inventory)


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line, cut and made visible (argparse echoes the
    value given); exit 2 as argparse's own."""

    def error(self, message: str):
        self.exit(int(ExitStatus.BAD_INPUT), f"provision: error: {self.prog}: {shown(message)} (see --help)\n")


def shown(text: str) -> str:
    """An error message as printed: control characters made visible, each very long word cut."""
    return cut_words(visible(text, newlines=False))


def refuse_empty(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Raise ProvisionError naming the first option or argument given an empty value (nothing but
    spaces; a list of nothing, ``--limit ,``, is refused where it is read: ``provision.cli``)."""
    for action in _actions(parser, args):
        if action.dest in OWN_CHECK:
            continue
        values = getattr(args, action.dest, None)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str) and not value.strip():
                name = "/".join(action.option_strings) or action.metavar or action.dest
                kind = "option" if action.option_strings else "argument"
                raise ProvisionError(f"{name} {value!r}: an empty value (give one, or leave the {kind} out)")


def _actions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[argparse.Action]:
    """The actions of the top parser, of the chosen command's parser, and of its sub-command's."""
    found: list[argparse.Action] = []
    level: argparse.ArgumentParser | None = parser
    while level is not None:
        subs = [a for a in level._actions if isinstance(a, argparse._SubParsersAction)]
        found += [a for a in level._actions if a not in subs]
        chosen = getattr(args, subs[0].dest, None) if subs else None
        level = subs[0].choices.get(chosen) if chosen is not None else None
    return found


def limit(value: str | None) -> list[str] | None:
    """``--limit``'s hosts and groups; raises ProvisionError when it names none (``--limit ,`` is not every host)."""
    found = csv(value)
    if found == []:
        raise ProvisionError(f"--limit {value!r}: name at least one host or group")
    return found


def csv(value: str | None) -> list[str] | None:
    """A comma-separated option's values, blanks left out; None when not given."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def vault(args: argparse.Namespace) -> Vault:
    """Ansible's vault options as given (``--vault-id``, ``--vault-password-file``)."""
    return Vault(ids=tuple(args.vault_id), password_files=tuple(args.vault_password_file))


def forks(value: str | None) -> int | None:
    """``--forks N``: a positive whole number; None when not given (every host). Raises ProvisionError."""
    if value is None:
        return None
    if not value.strip().isascii() or not value.strip().isdigit() or int(value) < 1:
        raise ProvisionError(f"--forks {value!r}: must be a whole number of hosts, 1 or more")
    return int(value)


def wait(value: str | None) -> float | None:
    """``--wait [SECONDS]``: a whole number of seconds, 1 to a week; None when not given. Raises ProvisionError."""
    if value is None:
        return None
    if not value.strip().isascii() or not value.strip().isdigit() or not 1 <= int(value) <= 7 * 24 * 3600:
        raise ProvisionError(f"--wait {value[:40]!r}: a whole number of seconds, 1 to 604800 (a week)")
    return float(value)
