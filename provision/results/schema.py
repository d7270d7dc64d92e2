"""report.json's published JSON Schema (``report.schema.json``) and its validation (jsonschema).

``RunDir.save`` validates every report it writes when ``PROVISION_VALIDATE_REPORTS`` is set
(the test suite sets it, so every report a test writes is checked).
"""
from __future__ import annotations

import functools
import json

import jsonschema

from provision.results import SCHEMA

VALIDATE_ENV = "PROVISION_VALIDATE_REPORTS"


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def problems(report: dict) -> list[str]:
    """Every way ``report`` breaks the schema, as 'key.path: message' lines ([] when valid)."""
    errors = sorted(_validator().iter_errors(report), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}" for e in errors]


def validate(report: dict, origin: str) -> None:
    """Raise ValueError naming ``origin`` and the first violations when ``report`` breaks the schema."""
    found = problems(report)
    if found:
        raise ValueError(f"{origin}: report.json breaks {SCHEMA.name}: " + "; ".join(found[:3]))
