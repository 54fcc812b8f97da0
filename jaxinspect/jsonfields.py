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

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from enum import Enum
from functools import cache
from typing import Any

#: Metadata keys (private to this module and the schema generator).
KEY = "json"
OMIT = "json_omit"
MAPPING = "json_mapping"
FLATTEN = "json_flatten"
DOC = "json_doc"


def js(
    key: str | None = None,
    *,
    omit: bool = False,
    mapping: bool = False,
    flatten: bool = False,
    doc: str | None = None,
) -> dict[str, Any]:
    """Field metadata: the JSON ``key`` (default: the field's name), whether the field is left
    out of the document (``omit``), whether its ``(key, value)`` pairs are an object
    (``mapping``), whether a nested dataclass's keys are written in its parent's object
    (``flatten``), and its description in the schema (``doc``)."""
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
        if how == _FLATTEN:
            out.update(encode_object(value))
        elif how == _MAPPING and value is not None:
            out[key] = {k: encode(v) for k, v in value}
        else:
            out[key] = encode(value)
    return out
