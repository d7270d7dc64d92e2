"""``provision plan``: what can be known before a node is touched.

- ``stack``: the stack the roles will install (``provision.inventory.playvars``: Ansible's own
  precedence over the inventory, playbooks/group_vars and the roles' defaults) checked against
  compatibility tables (``data/``, each row with its source);
- ``proposal``: the nearest consistent stack when it cannot work, checked again as a whole;
- ``hardware``: the balance of a hardware profile (NIC line rate against its PCIe link, NVLink
  against the NIC share, the storage network against a checkpoint target, rack power);
- ``sizing``: nodes, HCAs, switches, cables, power and a burn-in time budget for N GPUs.

Every finding is a ``Finding`` (severity, subject, text, source); an error means the stack or
design cannot work and makes ``provision plan`` exit 1 and ``provision run`` refuse to start; an
unknown means the tables do not cover something (a release, a GPU architecture, a wheel's
kernels), so the plan cannot say the stack works: ``provision plan`` exits 7 (``ExitStatus.UNCHECKED``)
unless ``--accept-unknown``.
"""
from __future__ import annotations

from dataclasses import dataclass

ERROR, UNKNOWN, WARNING, INFO = "error", "unknown", "warning", "info"


@dataclass(frozen=True)
class Finding:
    """One finding: ``severity`` ERROR | UNKNOWN | WARNING | INFO, ``subject`` what it is about ("cuda 11.8.0",
    "env tf: tensorflow-gpu 2.4.0"), ``text`` the reason with its figures, ``source`` a URL or a
    repository path the rule or figure comes from."""

    severity: str
    subject: str
    text: str
    source: str

    def line(self) -> str:
        return f"{self.severity:<7} {self.subject}: {self.text} [{self.source}]"
