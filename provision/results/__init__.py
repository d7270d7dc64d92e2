"""Results: the typed model of a run (``model``), reading a saved report (``reading``), the
run folder layout (``store``) and report.json's JSON Schema (``report.schema.json``)."""
from __future__ import annotations

from pathlib import Path

SCHEMA = Path(__file__).with_name("report.schema.json")
