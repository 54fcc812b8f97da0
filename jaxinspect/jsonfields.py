"""The frozen report dataclasses as JSON: one encoder over ``dataclasses.fields``.

A report type is its JSON description. Each field is written under its own name unless its
metadata says otherwise, with :func:`js`::

    peak_bytes: int | None = field(metadata=js("bytes"))        # renamed
    samples: tuple[float, ...] = field(default=(), metadata=js(omit=True))  # not written
    raw: tuple[tuple[str, float], ...] = field(metadata=js("xla_raw", mapping=True))

Tuples become arrays, ``mapping`` tuples of ``(key, value)`` pairs become objects, nested
dataclasses become objects, and a class's ``JSON_PROPERTIES`` (names of its properties, or
``(key, property)`` pairs) are written beside its fields. The schema generator
(``jaxinspect/schemas/generate.py``) reads the same metadata, so a document and its schema
cannot drift apart.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields, is_dataclass
from enum import Enum
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")

#: Metadata keys (private to this module and the schema generator).
KEY = "json"
OMIT = "json_omit"
MAPPING = "json_mapping"
FLATTEN = "json_flatten"
DOC = "json_doc"
CHECK = "json_check"
SCHEMA = "json_schema"

#: What a field's ``check`` returns: ``None`` when the raw JSON value is right, else what it
#: must be (at the field), or ``(sub-path, what it must be)`` for a part of it.
Check = Callable[[Any], "str | tuple[str, str] | None"]


def js(
    key: str | None = None,
    *,
    omit: bool = False,
    mapping: bool = False,
    flatten: bool = False,
    doc: str | None = None,
    check: Check | None = None,
    schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Field metadata: the JSON ``key`` (default: the field's name), whether the field is left
    out of the document (``omit``), whether its ``(key, value)`` pairs are an object
    (``mapping``), whether a nested dataclass's keys are written in its parent's object
    (``flatten``), its description in the schema (``doc``), what :func:`decode` checks of a
    stored value beyond its type (``check``) and what the schema adds for it (``schema``:
    ``minimum``, ``minItems``...)."""
    meta: dict[str, Any] = {}
    if key is not None:
        meta[KEY] = key
    if omit:
        meta[OMIT] = True
    if mapping:
        meta[MAPPING] = True
    if flatten:
        meta[FLATTEN] = True
    if doc is not None:
        meta[DOC] = doc
    if check is not None:
        meta[CHECK] = check
    if schema is not None:
        meta[SCHEMA] = schema
    return meta


#: How a field is written: as it is, as an object of its pairs, or merged into its parent.
_PLAIN, _MAPPING, _FLATTEN = 0, 1, 2


@cache
def _plan(cls: type) -> tuple[tuple[str, str, int], ...]:
    """``(attribute, key, how)`` per written field and property of ``cls``, computed once."""
    plan = [
        (f.name, f.metadata.get(KEY, f.name), _how(f.metadata))
        for f in fields(cls)
        if not f.metadata.get(OMIT)
    ]
    for prop in getattr(cls, "JSON_PROPERTIES", ()):
        key, attr = (prop, prop) if isinstance(prop, str) else prop
        plan.append((attr, key, _PLAIN))
    return tuple(plan)


def _how(meta: Mapping[str, Any]) -> int:
    return _FLATTEN if meta.get(FLATTEN) else _MAPPING if meta.get(MAPPING) else _PLAIN


def encode(value: Any) -> Any:
    """``value`` as JSON-ready Python: dicts, lists, strings, numbers, booleans and ``None``."""
    # Most values of a large report are plain strings and numbers: by exact type (an enum,
    # even an int or str one, is never of these exact types) they skip the checks below.
    kind = type(value)
    if kind is str or kind is int or kind is float or value is None:
        return value
    if kind is tuple or kind is list:
        return [encode(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return encode_object(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


def encode_object(obj: Any) -> dict[str, Any]:
    """One report dataclass as a JSON object (see the module docstring for the rules)."""
    out: dict[str, Any] = {}
    for attr, key, how in _plan(obj.__class__):
        value = getattr(obj, attr)
        kind = type(value)
        if how == _PLAIN and (kind is str or kind is int or kind is float or value is None):
            out[key] = value  # as ``encode`` gives it, without the call
        elif how == _FLATTEN:
            out.update(encode_object(value))
        elif how == _MAPPING and value is not None:
            out[key] = {k: encode(v) for k, v in value}
        else:
            out[key] = encode(value)
    return out


class DecodeError(ValueError):
    """A stored JSON value that is not what its type says: ``path`` must be ``expected``."""

    def __init__(self, path: str, expected: str) -> None:
        super().__init__(f"`{path}` must be {expected}")
        self.path = path
        self.expected = expected


_MISSING = object()


def decode(cls: type[T], data: Any, *, allowed: tuple[str, ...] = ()) -> T:
    """Read the JSON object ``data`` into ``cls``, checking each field as it reads it.

    The same fields and metadata that write the type read it: a key of another name, a value
    of another type, a missing key (unless its field has a default) or a field's own ``check``
    failing is a :class:`DecodeError` naming the first wrong key's dotted path. ``allowed``
    names top-level keys read elsewhere (a format version).
    """
    return typing.cast(T, _decode_object(cls, data, "", allowed))


def _decode_object(cls: type, data: Any, path: str, allowed: tuple[str, ...] = ()) -> Any:
    if not isinstance(data, dict):
        raise DecodeError(path or "(document)", "an object")
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    known = {f.metadata.get(KEY, f.name) for f in fields(cls) if not f.metadata.get(OMIT)}
    unknown = sorted(str(k) for k in data if k not in known and k not in allowed)
    if unknown:
        raise DecodeError(_join(path, unknown[0]), "absent (not one of its fields)")
    values: dict[str, Any] = {}
    for f in fields(cls):
        key = f.metadata.get(KEY, f.name)
        optional = f.default is not MISSING or f.default_factory is not MISSING
        if f.metadata.get(OMIT) or (key not in data and optional):
            continue
        where = _join(path, key)
        raw = data.get(key, _MISSING)
        check = f.metadata.get(CHECK)
        problem = None if check is None else check(None if raw is _MISSING else raw)
        if isinstance(problem, tuple):
            raise DecodeError(_join(where, problem[0]), problem[1])
        if problem is not None:
            raise DecodeError(where, problem)
        if f.metadata.get(MAPPING):
            if not isinstance(raw, dict):
                raise DecodeError(where, "an object")
            pair = typing.get_args(hints[f.name])[0]
            value_type = typing.get_args(pair)[1]
            values[f.name] = tuple(
                (k, _decode_value(value_type, v, _join(where, k))) for k, v in raw.items()
            )
        else:
            values[f.name] = _decode_value(hints[f.name], raw, where)
    return cls(**values)


def _decode_value(tp: Any, raw: Any, path: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        if raw is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _decode_value(options[0], raw, path)
        raise TypeError(f"cannot decode {tp!r}")  # no stored format has one yet
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not isinstance(raw, list):
            raise DecodeError(path, "an array")
        return tuple(_decode_value(args[0], v, f"{path}[{i}]") for i, v in enumerate(raw))
    if isinstance(tp, type) and is_dataclass(tp):
        return _decode_object(tp, raw, path)
    expected = _SCALAR_NAMES.get(tp)
    if expected is None:
        raise TypeError(f"cannot decode {tp!r}")
    ok = isinstance(raw, tp) and not (tp is not bool and isinstance(raw, bool))
    if tp is float:  # JSON does not tell 1 from 1.0
        ok = isinstance(raw, int | float) and not isinstance(raw, bool)
    if not ok:
        raise DecodeError(path, expected)
    return float(raw) if tp is float else raw


_SCALAR_NAMES: dict[Any, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
