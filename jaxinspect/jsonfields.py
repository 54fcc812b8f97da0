"""The frozen report dataclasses as JSON: one encoder over ``dataclasses.fields``.

A report type is its JSON description. Each field is written under its own name unless its
metadata says otherwise, with :func:`js`::

    peak_bytes: int | None = field(metadata=js("bytes"))        # renamed
    samples: tuple[float, ...] = field(default=(), metadata=js(omit=True))  # not written
    raw: tuple[tuple[str, float], ...] = field(metadata=js("xla_raw", mapping=True))

Tuples become arrays, ``mapping`` tuples of ``(key, value)`` pairs become objects (``mapping=2``:
an object of objects), nested dataclasses become objects, and a class's ``JSON_PROPERTIES``
(names of its properties, or ``(key, property)`` pairs) are written beside its fields. A type
``Annotated[int, Minimum(0)]`` carries a bound that the schema writes and :func:`decode`
checks; ``Annotated[T, SchemaRef(FILE)]`` a value another schema file describes. A class's
``JSON_SCHEMA`` adds keywords to its object's schema (a rule between fields). The schema generator
(``jaxinspect/schemas/generate.py``) reads the same metadata, so a document and its schema
cannot drift apart.
"""

from __future__ import annotations

import math
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING as MISSING_FIELD
from dataclasses import dataclass, fields, is_dataclass
from enum import Enum
from functools import cache
from typing import Annotated, Any, TypeVar

T = TypeVar("T")

#: Metadata keys (private to this module and the schema generator).
KEY = "json"
OMIT = "json_omit"
MAPPING = "json_mapping"
FLATTEN = "json_flatten"
DOC = "json_doc"
CHECK = "json_check"
SCHEMA = "json_schema"
SKIP_NONE = "json_skip_none"

#: What a field's ``check`` returns: ``None`` when the raw JSON value is right, else what it
#: must be (at the field), or ``(sub-path, what it must be)`` for a part of it.
Check = Callable[[Any], "str | tuple[str, str] | None"]


@dataclass(frozen=True, slots=True)
class Minimum:
    """The least value of a number type, in ``Annotated[int, Minimum(0)]``: the schema's
    ``minimum``, checked by :func:`decode`."""

    value: int | float


#: A number of things, never negative.
Count = Annotated[int, Minimum(0)]
#: A number of things that is at least one (calls, rounds, devices, loop trips).
Positive = Annotated[int, Minimum(1)]
#: An amount never negative (FLOPs, bytes, a fraction).
NonNegative = Annotated[float, Minimum(0)]
#: A measured or modelled duration.
Seconds = Annotated[float, Minimum(0)]


@dataclass(frozen=True, slots=True)
class SchemaRef:
    """In ``Annotated[T, SchemaRef("stages.schema.json")]``: the value is a document (or, with
    ``#/properties/KEY``, a part of one) that another schema file describes; the schema refers
    to that file rather than describing ``T`` again."""

    target: str


def js(
    key: str | None = None,
    *,
    omit: bool = False,
    mapping: bool | int = False,
    flatten: bool = False,
    skip_none: bool = False,
    doc: str | None = None,
    check: Check | None = None,
    schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Field metadata: the JSON ``key`` (default: the field's name), whether the field is left
    out of the document (``omit``), whether its ``(key, value)`` pairs are an object
    (``mapping``; ``2`` when the values are pairs too), whether a nested dataclass's keys are
    written in its parent's object (``flatten``), whether a ``None`` is left out rather than
    written as ``null`` (``skip_none``: the key is absent, the field's default is ``None``),
    its description in the schema (``doc``), what :func:`decode` checks of a stored value
    beyond its type (``check``) and what the schema adds for it (``schema``: ``minimum``,
    ``minItems``...)."""
    meta: dict[str, Any] = {}
    if key is not None:
        meta[KEY] = key
    if omit:
        meta[OMIT] = True
    if mapping:
        meta[MAPPING] = int(mapping)
    if flatten:
        meta[FLATTEN] = True
    if skip_none:
        meta[SKIP_NONE] = True
    if doc is not None:
        meta[DOC] = doc
    if check is not None:
        meta[CHECK] = check
    if schema is not None:
        meta[SCHEMA] = schema
    return meta


#: How a field is written: as it is, merged into its parent, or (``n`` > 0) as an object of its
#: pairs, ``n`` levels deep.
_PLAIN, _FLATTEN = 0, -1


@cache
def _plan(cls: type) -> tuple[tuple[str, str, int, bool], ...]:
    """``(attribute, key, how, skip_none)`` per written field and property of ``cls``,
    computed once."""
    plan = [
        (f.name, f.metadata.get(KEY, f.name), _how(f.metadata), bool(f.metadata.get(SKIP_NONE)))
        for f in fields(cls)
        if not f.metadata.get(OMIT)
    ]
    for prop in getattr(cls, "JSON_PROPERTIES", ()):
        key, attr = (prop, prop) if isinstance(prop, str) else prop
        plan.append((attr, key, _PLAIN, False))
    return tuple(plan)


def _how(meta: Mapping[str, Any]) -> int:
    return _FLATTEN if meta.get(FLATTEN) else int(meta.get(MAPPING, _PLAIN))


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
    for attr, key, how, skip_none in _plan(obj.__class__):
        value = getattr(obj, attr)
        kind = type(value)
        if value is None and skip_none:
            continue
        if how == _PLAIN and (kind is str or kind is int or kind is float or value is None):
            out[key] = value  # as ``encode`` gives it, without the call
        elif how == _FLATTEN:
            out.update(encode_object(value))
        elif how > 0 and value is not None:
            out[key] = _encode_pairs(value, how)
        else:
            out[key] = encode(value)
    return out


def _encode_pairs(pairs: Any, depth: int) -> dict[str, Any]:
    return {k: _encode_pairs(v, depth - 1) if depth > 1 else encode(v) for k, v in pairs}


class DecodeError(ValueError):
    """A stored JSON value that is not what its type says: ``path`` must be ``expected``
    (``value``: the value found there, ``MISSING`` for an absent key)."""

    def __init__(self, path: str, expected: str, value: Any = None) -> None:
        super().__init__(f"`{path}` must be {expected}")
        self.path = path
        self.expected = expected
        self.value = value


#: The ``value`` of a :class:`DecodeError` for a key that is absent.
MISSING: Any = object()


def decode(cls: type[T], data: Any, *, allowed: tuple[str, ...] = ()) -> T:
    """Read the JSON object ``data`` into ``cls``, checking each field as it reads it.

    The same fields and metadata that write the type read it: a key of another name, a value
    of another type, a missing key (unless its field has a default), a number under its
    ``minimum`` or a field's own ``check`` failing is a :class:`DecodeError` naming the first
    wrong key's dotted path. ``allowed`` names top-level keys read elsewhere (a format
    version); the keys of ``JSON_PROPERTIES`` are accepted and left to their properties.
    """
    return typing.cast(T, _decode_object(cls, data, "", allowed))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]), include_extras=True)


def _decode_object(cls: type, data: Any, path: str, allowed: tuple[str, ...] = ()) -> Any:
    if not isinstance(data, dict):
        raise DecodeError(path or "(document)", "an object", data)
    hints = _hints(cls)
    known = {f.metadata.get(KEY, f.name) for f in fields(cls) if not f.metadata.get(OMIT)}
    # A property's key is written beside the fields and derived from them: read, not stored.
    known |= {p if isinstance(p, str) else p[0] for p in getattr(cls, "JSON_PROPERTIES", ())}
    unknown = sorted(str(k) for k in data if k not in known and k not in allowed)
    if unknown:
        where = _join(path, unknown[0])
        raise DecodeError(where, "absent (not one of its fields)", data[unknown[0]])
    values: dict[str, Any] = {}
    for f in fields(cls):
        key = f.metadata.get(KEY, f.name)
        optional = f.default is not MISSING_FIELD or f.default_factory is not MISSING_FIELD
        if f.metadata.get(OMIT) or (key not in data and optional):
            continue
        where = _join(path, key)
        raw = data.get(key, MISSING)
        check = f.metadata.get(CHECK)
        problem = None if check is None else check(None if raw is MISSING else raw)
        if isinstance(problem, tuple):
            part = raw.get(problem[0], MISSING) if isinstance(raw, dict) else MISSING
            raise DecodeError(_join(where, problem[0]), problem[1], part)
        if problem is not None:
            raise DecodeError(where, problem, raw)
        depth = int(f.metadata.get(MAPPING, 0))
        tp = hints[f.name]
        if f.metadata.get(SKIP_NONE):  # None is written as no key: a null is not one
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        values[f.name] = _decode_value(tp, raw, where, depth)
    return cls(**values)


def _decode_value(tp: Any, raw: Any, path: str, depth: int = 0) -> Any:
    """``raw`` read as ``tp``; ``depth`` > 0: a ``tuple[tuple[str, V], ...]`` stored as an
    object (of objects, ``depth`` levels)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        value = _decode_value(args[0], raw, path, depth)
        for bound in args[1:]:
            if isinstance(bound, Minimum) and value < bound.value:
                kind = _SCALAR_NAMES.get(args[0], "a number")
                raise DecodeError(path, f"{kind} >= {bound.value}", raw)
        return value
    if origin in (types.UnionType, typing.Union):
        if raw is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:
            raise TypeError(f"cannot decode {tp!r}")  # no stored format has one yet
        try:
            return _decode_value(options[0], raw, path, depth)
        except DecodeError as exc:
            if exc.path != path or len(options) == len(args):
                raise
            raise DecodeError(path, f"{exc.expected} or null", raw) from None
    if depth > 0:
        if not isinstance(raw, dict):
            raise DecodeError(path, "an object", raw)
        value_type = typing.get_args(args[0])[1]
        return tuple(
            (k, _decode_value(value_type, v, _join(path, k), depth - 1)) for k, v in raw.items()
        )
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not isinstance(raw, list):
            raise DecodeError(path, "an array", raw)
        return tuple(_decode_value(args[0], v, f"{path}[{i}]") for i, v in enumerate(raw))
    if isinstance(tp, type) and is_dataclass(tp):
        return _decode_object(tp, raw, path)
    expected = _SCALAR_NAMES.get(tp)
    if expected is None:
        raise TypeError(f"cannot decode {tp!r}")
    ok = isinstance(raw, tp) and not (tp is not bool and isinstance(raw, bool))
    if tp is float:  # JSON does not tell 1 from 1.0, and has no NaN or infinity
        ok = isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw)
    if not ok:
        raise DecodeError(path, expected, raw)
    return raw  # an integral float stays an int: written back, it keeps its bytes (48, not 48.0)


_SCALAR_NAMES: dict[Any, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
