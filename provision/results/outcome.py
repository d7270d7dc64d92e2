"""A result's outcome and the fabric's pseudo-host: the leaf of provision.results, re-exported by
``provision.results.model``, so that ``coverage`` reads them without importing the model that calls it."""
from __future__ import annotations

import enum

FABRIC = "fabric"  # the host a finding names when it is about the fabric itself (a leaf-spine cable): no node


class Outcome(str, enum.Enum):
    """pass; fail (a metric outside its reference); error (could not run, timed out, could not
    parse, missing data: never a pass); skipped (not applicable to the profile); untested (a
    coverage gap: what was asked could not be tested, such as a leaf-spine cable no test carried
    traffic over because its hosts were left out; not a failure and not a pass: its findings say
    why and its fault's action what would close the gap)."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"
    UNTESTED = "untested"
