"""``json.dumps(value, indent=2, sort_keys=True)``, the same text written faster.

With ``indent``, Python's ``json`` falls back from its C encoder to a pure-Python one that
passes every token up a chain of nested generators, one per level: the cost report of 96
transformer blocks (4 MB) took a quarter of a second to print. Here each value is written
straight into one list of strings, strings through ``json``'s own C escaping, numbers through
the ``repr`` that ``json`` uses; the text is the same, byte for byte.

Anything outside what jaxinspect's documents hold (dicts, lists, tuples, strings, numbers,
booleans, ``None``, and their subclasses) goes to ``json.dumps`` itself, so an unexpected
value fails exactly as it would there.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any

_INDENT = "  "


class _Unsupported(Exception):
    """A value ``json.dumps`` must handle (or reject) itself."""


def dumps_indented(value: Any) -> str:
    """``json.dumps(value, indent=2, sort_keys=True)``."""
    parts: list[str] = []
    try:
        _write(value, parts, "\n")
    except (_Unsupported, RecursionError):
        return json.dumps(value, indent=2, sort_keys=True)
    return "".join(parts)


def _write(value: Any, parts: list[str], newline: str) -> None:
    """Append ``value``'s JSON to ``parts``; ``newline``: a line break and the indent of its
    own level (its items go one level deeper)."""
    if isinstance(value, str):
        parts.append(encode_basestring_ascii(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(int.__repr__(value))
    elif isinstance(value, float):
        parts.append(_float(value))
    elif isinstance(value, list | tuple):
        if not value:
            parts.append("[]")
            return
        inner = newline + _INDENT
        parts.append("[")
        for item in value:
            parts.append(inner)
            _write(item, parts, inner)
            parts.append(",")
        parts[-1] = newline + "]"
    elif isinstance(value, dict):
        if not value:
            parts.append("{}")
            return
        inner = newline + _INDENT
        parts.append("{")
        for key, item in sorted(value.items()):
            parts.append(inner)
            parts.append(encode_basestring_ascii(_key(key)))
            parts.append(": ")
            _write(item, parts, inner)
            parts.append(",")
        parts[-1] = newline + "}"
    else:
        raise _Unsupported


def _key(key: Any) -> str:
    """A dict key as ``json`` converts it to a string (after sorting by the key itself)."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise _Unsupported


def _float(value: float) -> str:
    """As ``json`` writes a float (``allow_nan``: ``NaN``, ``Infinity``, ``-Infinity``)."""
    if math.isfinite(value):
        return float.__repr__(value)
    if value != value:
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
