"""One root exception and a few children; each maps to a distinct exit status.

A user's mistake (bad inventory, bad profile, a file that is not a tool's output)
is a ``ProvisionError`` and is printed as one line by the CLI, never as a traceback.
"""
from __future__ import annotations

import enum
import errno

# write(2)'s refusals that are the file system's, not the command's: no room (ENOSPC, EDQUOT, EFBIG),
# read-only (EROFS), not permitted (EACCES, EPERM), the device failed (EIO)
NOT_WRITABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO})


class ExitStatus(enum.IntEnum):
    """Exit statuses of ``provision``.

    OK: every node passed. NODE_FAILED: some node failed or errored.
    BAD_INPUT: bad usage or bad input (inventory, profile, tool output).
    RUNNER: the orchestration itself broke (ansible-runner, simulated rack).
    MISSING_PROGRAM: a program this machine must run is not installed (provision/external.py).
    NOT_WRITTEN: a result file could not be written (full disk, read-only file system, no
    permission); each such file is named in one line, and the file it would replace is kept.
    BUSY: some of the hosts are taken by another install or burn-in (provision/engine/hostlock.py).
    UNCHECKED: ``provision plan`` found no error, but its tables do not cover part of the stack (a
    release, a GPU architecture, a wheel's kernels), so it cannot say the stack works; each such part
    is named on its own line, and ``--accept-unknown`` exits 0 instead (provision/plan/stack.py).
    UNTESTED (the same 7, an alias: "not failed, not known to work", whichever command says it): a burn-in
    where nothing failed or errored but part of what was asked could not be tested (a coverage gap: a
    leaf-spine cable no test carried traffic over, a host no cluster test could pair); not a failure and
    not a full pass, as pytest's 5 (no tests collected) is neither (``provision.results.coverage``).
    BMC_FAILED: a node's BMC did not answer, refused the login or answered what is not Redfish (or ipmitool
    failed): one line per host naming its BMC address (``provision bmc``; ``BmcError``).
    NOT_CONFIRMED: a power action was asked without --yes where no one can confirm it (stdin not a terminal),
    or the person at the terminal declined; nothing was powered.
    INTERRUPTED, TERMINATED: stopped by SIGINT or SIGTERM (128 + the signal, as shells report
    it), after writing the results gathered so far.
    """

    OK = 0
    NODE_FAILED = 1
    BAD_INPUT = 2
    RUNNER = 3
    MISSING_PROGRAM = 4
    NOT_WRITTEN = 5
    BUSY = 6
    UNCHECKED = 7
    UNTESTED = 7  # an alias of UNCHECKED (docstring)
    BMC_FAILED = 8
    NOT_CONFIRMED = 9
    INTERRUPTED = 130
    TERMINATED = 143


class ProvisionError(Exception):
    """Root of every error the CLI reports as one line."""

    exit_status = ExitStatus.BAD_INPUT


class InventoryError(ProvisionError):
    """An inventory is missing, malformed, or a host lacks a required field."""


class ProfileError(ProvisionError):
    """A hardware profile is missing or malformed."""


class ParseError(ProvisionError):
    """A tool's output is not that tool's output, or lacks a required field."""


class CommandError(ProvisionError):
    """A command on a node could not be run (connection refused, timeout)."""

    exit_status = ExitStatus.RUNNER


class BmcError(ProvisionError):
    """A node's BMC could not be used: one line "HOST: BMC ADDRESS: what" (refused login, TLS verification,
    no answer within the timeout, not Redfish JSON, an answer over the size cap, an action refused). Never holds
    the password or a session token."""

    exit_status = ExitStatus.BMC_FAILED


class NotConfirmedError(ProvisionError):
    """A power action was not confirmed (no --yes and no terminal to ask, or the answer was no)."""

    exit_status = ExitStatus.NOT_CONFIRMED


class RunnerError(ProvisionError):
    """ansible-runner or the simulated rack could not do its job."""

    exit_status = ExitStatus.RUNNER


class MissingProgramError(ProvisionError):
    """A program this machine must run is not installed; the message names its Debian package."""

    exit_status = ExitStatus.MISSING_PROGRAM


class OutputError(ProvisionError):
    """A result file could not be written (``NOT_WRITABLE``); the file it would replace is kept."""

    exit_status = ExitStatus.NOT_WRITTEN


def not_written(exc: OSError) -> str:
    """One line for a file that could not be written: the file and the reason, no errno number."""
    return f"{exc.filename or 'a file'}: not written: {exc.strerror or exc} (any file it would replace is kept)"
