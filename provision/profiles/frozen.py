"""Read-only dicts and lists for data that many hosts share (a loaded profile, its host views).

``freeze(value)`` returns nested ``FrozenDict``/``FrozenList`` copies: still ``dict`` and ``list``
(so ``isinstance``, ``json.dumps``, ``.get`` and iteration work unchanged), but every in-place change
raises TypeError naming the way out. ``copy.deepcopy`` and pickling give plain, writable dicts and
lists, and ``yaml.safe_dump`` writes them as mappings and sequences.
"""
from __future__ import annotations

import copy
from typing import Any, NoReturn

import yaml

READ_ONLY = "a loaded hardware profile is shared by every host of that name and read-only: change a copy.deepcopy"


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError(READ_ONLY)


class FrozenDict(dict):
    """A dict that refuses changes; ``copy.deepcopy`` of it is a plain dict."""

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse

    def __deepcopy__(self, memo: dict) -> dict:
        return {copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in self.items()}

    def __copy__(self) -> dict:
        return dict(self)

    def __reduce__(self) -> tuple:
        return (dict, (dict(self),))


class FrozenList(list):
    """A list that refuses changes; ``copy.deepcopy`` of it is a plain list."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __deepcopy__(self, memo: dict) -> list:
        return [copy.deepcopy(v, memo) for v in self]

    def __copy__(self) -> list:
        return list(self)

    def __reduce__(self) -> tuple:
        return (list, (list(self),))


def freeze(value: Any) -> Any:
    """``value`` with every dict and list in it made read-only (copies; ``value`` is left as it was)."""
    if isinstance(value, dict):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value


for _dumper in (yaml.SafeDumper, getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # each keeps its own table
    _dumper.add_representer(FrozenDict, yaml.SafeDumper.represent_dict)
    _dumper.add_representer(FrozenList, yaml.SafeDumper.represent_list)
