"""JSON Schema validation of the profile data files, with one-line errors.

The schemas beside this module (draft 2020-12, ``additionalProperties: false`` at every
level, so a misspelt key is refused rather than silently turning a rule off):
``profile.schema.json`` (a hardware profile), ``site.schema.json`` (the inventory's site
facts) and ``stack_release.schema.json`` (the stack release file). A violation raises
``ProfileError`` naming where the data came from and the key path:
``provision/profiles/data/x.yaml: gpu.nvlnk: unknown key (known: count, model, ...)``.
A number that is not finite (YAML's ``.nan``, ``.inf``, ``-.inf``) is refused anywhere in these
files before the schema is applied: JSON Schema's ``type: number`` admits it, and a NaN
reference compares false with every bound, so no measurement could fail against it.
"""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import jsonschema

from provision.errors import ProfileError

HERE = Path(__file__).parent
TYPES = {"number": "a number", "integer": "an integer", "string": "a string", "boolean": "true or false",
         "object": "a mapping", "array": "a list", "null": "null"}


def _whole(checker: Any, instance: Any) -> bool:
    """An integer is an int: JSON Schema's ``integer`` also admits 8.0, and a count or a size
    written 8.0 would reach ``range()`` and command lines as a float."""
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole))


@functools.cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    """The validator of ``<name>.schema.json`` (checked against the metaschema once); ``references`` is
    the profile schema's ``references`` alone (the shared file ``site_references.yaml``: one definition
    of a reference row)."""
    if name == "references":
        profile = json.loads((HERE / "profile.schema.json").read_text())
        schema = {"$schema": profile["$schema"], "$defs": profile["$defs"], "type": "object",
                  "additionalProperties": False, "required": ["references"],
                  "properties": {"references": profile["properties"]["references"]}}
    else:
        schema = json.loads((HERE / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return Validator(schema)


def validate(data: Any, name: str, origin: str, prefix: str = "") -> None:
    """Raise ProfileError (``origin: key.path: what is wrong``) unless ``data`` is valid against
    schema ``name``; ``prefix`` is prepended to the key path (``provision_storage``)."""
    bad = _non_finite(data, prefix)
    if bad is not None:
        path, value = bad
        raise ProfileError(f"{origin}: {path or '(top level)'}: {_yaml_number(value)} is not a finite number")
    errors = list(validator(name).iter_errors(data))
    if errors:
        error = min(errors, key=lambda e: (len(e.absolute_path), [str(p) for p in e.absolute_path]))
        raise ProfileError(f"{origin}: {describe(error, prefix)}")


def _non_finite(data: Any, path: str) -> tuple[str, float] | None:
    """(key path, value) of the first NaN or infinity in ``data``, else None."""
    if isinstance(data, float) and not math.isfinite(data):
        return path, data
    if isinstance(data, dict):
        children = [(f"{path}.{key}" if path else str(key), value) for key, value in data.items()]
    elif isinstance(data, list):
        children = [(f"{path}[{index}]", value) for index, value in enumerate(data)]
    else:
        return None
    for where, value in children:
        found = _non_finite(value, where)
        if found is not None:
            return found
    return None


def _yaml_number(value: float) -> str:
    """NaN and infinities as YAML spells them."""
    return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"


def describe(error: jsonschema.ValidationError, prefix: str = "") -> str:
    """``key.path: what is wrong`` for one validation error, in the file's own terms."""
    path = ".".join([prefix] * bool(prefix) + [str(p) for p in error.absolute_path])
    kind, value = error.validator, error.instance
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(known))
        where = ".".join(filter(None, [path, str(extra[0])]))
        return f"{where}: unknown key (known: {', '.join(known) or 'none'})"
    if kind == "required":
        missing = [k for k in error.validator_value if k not in value]
        return f"{path or '(top level)'}: missing key {missing[0]!r}"
    text = _what(kind, error.validator_value, value) or error.message
    return f"{path or '(top level)'}: {text}"


def _what(kind: str, expected: Any, value: Any) -> str:
    if kind == "type":
        names = [TYPES.get(t, t) for t in ([expected] if isinstance(expected, str) else expected)]
        return f"not {' or '.join(names)}: {_show(value)}"
    if kind == "enum":
        return f"{_show(value)} is not one of {', '.join(map(_show, expected))}"
    if kind == "const":
        return f"must be {_show(expected)}, not {_show(value)}"
    if kind == "pattern":
        return f"{value!r} does not match {expected}"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"{value!r} is out of range ({kind} {expected})"
    if kind == "minProperties":
        return "must not be empty"
    return ""


def _show(value: Any) -> str:
    """A value as the YAML file spells it where that differs from Python (null, true, false)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)
