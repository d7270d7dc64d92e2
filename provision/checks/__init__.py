"""Registry of burn-in checks: one module per check, each exporting ``CHECK``.

``ORDER`` is the order a burn-in runs them in: cheap, diagnostic checks first, so a node
whose GPU fell off the bus is named by gpu_health/xid before the stress tests run.
"""
from __future__ import annotations

import importlib

from provision.checks.base import Check, Finding, Outcome, Step

ORDER = ("gpu_health", "xid", "stack", "pcie_link", "topology", "nvlink", "ib_ports", "ib_write_bw",
         "nvbandwidth", "nccl_allreduce", "storage", "gpu_stress")


def registry() -> dict[str, Check]:
    """Check id -> Check, in run order. Raises ValueError if a module's id is not its name."""
    checks = {}
    for name in ORDER:
        check = importlib.import_module(f"provision.checks.{name}").CHECK
        if check.id != name or check.id in checks:
            raise ValueError(f"check module {name} registers id {check.id!r}")
        checks[check.id] = check
    return checks


__all__ = ["Check", "Finding", "Outcome", "Step", "registry", "ORDER"]
