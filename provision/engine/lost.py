"""A node that stops answering over SSH during a burn-in: told apart from a hung tool, named with its BMC's view.

A step that times out, or a connection that breaks, may be the tool (a hung ``gpu_burn``: the node is fine) or the
node (a kernel panic, a GPU fallen off the bus taking the PCIe root down, a frozen OS). ``probe`` asks the node
once more over a fresh connection (``PROBE_TIMEOUT_S`` for ``true``): a node that answers is left as it was (its
check's error names the tool); one that does not is lost for the rest of the run: every check it had still to run
is an error at once, with one line naming what happened and what its BMC says (``provision.engine.outofband``:
power state, health, its last event-log entries), rather than each check waiting for its own timeout on a dead
node. Such a node is ``hung`` when its BMC says it is powered on (or the inventory names no BMC): the one
``burnin --recover`` may power-cycle (``provision.engine.recovery``); a node its BMC says is off is not hung but
off, and is never powered on by a burn-in.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from provision.errors import CommandError

if TYPE_CHECKING:
    from provision.engine.burnin import Burnin, HostState

_POWER_ON = re.compile(r"BMC \S+ \(\w+\): power On,")  # the view's first words, never a quoted event message
PROBE_TIMEOUT_S = 20.0  # for `true` on a fresh connection; the connection's own opening has CONNECT_TIMEOUT_S


def view(engine: Burnin, state: HostState) -> str:
    """What the node's BMC says of it ('' when the run reaches no BMC or the inventory names none)."""
    if engine.oob is None:
        return ""
    try:
        return engine.oob.view(state.host)
    except Exception as exc:  # the BMC's reader must never cost the finding it adds to
        return f"BMC view not read: {type(exc).__name__}: {exc}"


def unreachable(engine: Burnin, state: HostState, why: str, refused: bool = False) -> str:
    """The problem of a node that could not be connected to at all: ``why`` and its BMC's view; marks it hung when
    its BMC says it is on (module docstring), unless its sshd answered and ``refused`` this run (a host key or a
    login refused: the node is up, this run may not log in, and no power cycle would change that)."""
    seen = view(engine, state)
    state.hung = _on(seen) and not refused
    return f"{why}; {seen}" if seen else why


def probe(engine: Burnin, state: HostState, what: str) -> None:
    """After ``what`` (a step timed out, a connection broke) on ``state``'s node: ask it once more; when it does not
    answer, it is lost (module docstring): its connection closed, its problem set for every check still to run."""
    with state.lock:
        if state.problem:
            return
        try:
            conn = engine.transport.connect(state.host)
            try:
                result = conn.run(["true"], PROBE_TIMEOUT_S)
            finally:
                conn.close()
            if result.rc == 0 and not result.timed_out:
                return  # the node answers: the tool hung, not the node
            reason = f"`true` {'timed out' if result.timed_out else f'exited {result.rc}'}"
        except CommandError as exc:
            reason = str(exc)
        seen = view(engine, state)
        state.hung = _on(seen)
        state.problem = (f"{state.name} stopped answering over SSH during the run ({what}; asked again: {reason})"
                         + (f"; {seen}" if seen else ""))
        old, state.conn = state.conn, None
    engine.say(f"  burnin {state.name:<12} lost: {state.problem}")
    if old is not None:
        try:
            old.close()
        except Exception:  # a dead node's connection may fail to close: it is dropped either way
            pass


def _on(seen: str) -> bool:
    """Whether a BMC view (``OutOfBand.view``: "BMC ADDRESS (PROTOCOL): power STATE, ...") says the node is powered
    on; a node with no BMC in the inventory ('') is never hung: nothing could power-cycle it."""
    return bool(_POWER_ON.match(seen))
