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


@functools.cache
def _result_validator() -> jsonschema.protocols.Validator:
    """The schema's ``$defs/result`` alone: a line of the run's journal (results.jsonl)."""
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    return cls({"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/result"})


MESSAGE_CHARS = 160  # jsonschema's message quotes the offending value: a 100 KB string where an object belongs


def problems(report: dict) -> list[str]:
    """Every way ``report`` breaks the schema, as 'key.path: message' lines ([] when valid). Findings of a
    shape already checked are left out (``_sample``); a failing one is named by its place in the report."""
    sample, places = _sample(report)
    lines = []
    for error in _validator().iter_errors(sample):
        path = list(error.absolute_path)
        if len(path) >= 4 and path[0] == "results" and path[2] == "findings":
            path[3] = places[(path[1], path[3])]
        lines.append(_line(path, error.message))
    return sorted(lines)


# A finding's schema ($defs/finding) constrains only which keys it has, their JSON types and whether ``ok``
# is false, and never the contents of value, expected or params: findings alike in those are alike to it.
_FREE = ("value", "expected")


def _shape(finding: object) -> tuple:
    if not isinstance(finding, dict):
        return (id(finding),)  # never alike: each is checked
    return tuple(sorted((k, type(v).__name__) for k, v in finding.items() if k not in _FREE)) + (
        finding.get("ok") is False,)


def _sample(report: object) -> tuple[object, dict[tuple[int, int], int]]:
    """``report`` with each result's findings cut to its first and those of a shape not seen before (a
    1,250-host run has some 300,000 findings of a few dozen shapes), and (result, kept index) -> index."""
    results = report.get("results") if isinstance(report, dict) else None
    if not isinstance(results, list):
        return report, {}
    seen: set[tuple] = set()
    places: dict[tuple[int, int], int] = {}
    cut = []
    for i, result in enumerate(results):
        findings = result.get("findings") if isinstance(result, dict) else None
        if not isinstance(findings, list):
            cut.append(result)
            continue
        kept: list = []
        for j, finding in enumerate(findings):
            shape = _shape(finding)
            if j == 0 or shape not in seen:
                seen.add(shape)
                places[(i, len(kept))] = j
                kept.append(finding)
        cut.append({**result, "findings": kept})
    return {**report, "results": cut}, places  # type: ignore[dict-item]


def result_problems(row: object) -> list[str]:
    """Every way ``row`` breaks the schema's result, as 'key.path: message' lines ([] when valid)."""
    return _lines(_result_validator().iter_errors(row))


def _lines(errors) -> list[str]:
    return sorted(_line(list(e.absolute_path), e.message) for e in errors)


def _line(path: list, message: str) -> str:
    message = message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS] + "..."
    return f"{'.'.join(str(p) for p in path) or '(top)'}: {message}"


def validate(report: dict, origin: str) -> None:
    """Raise ValueError naming ``origin`` and the first violations when ``report`` breaks the schema."""
    found = problems(report)
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        raise ValueError(f"{origin}: report.json breaks {SCHEMA.name}: " + "; ".join(found[:3]) + more)
