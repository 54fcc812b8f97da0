"""Leaves of the spec grammar: ``DTYPE[DIMS]`` strings and long-form mappings (no jax import)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jaxinspect.errors import SpecError
from jaxinspect.inputs.shardspec import Sharding, parse_long_sharding, split_short_dims
from jaxinspect.suggest import did_you_mean

#: Short dtype names accepted in leaves, mapped to their numpy names.
SHORT_DTYPES: dict[str, str] = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "bool": "bool",
    "c64": "complex64",
    "c128": "complex128",
}

#: Bytes per element of every dtype the grammar accepts (keys are two uint32 words).
DTYPE_BYTES: dict[str, float] = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "int4": 0.5,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint4": 0.5,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "key": 8,
}

#: Largest dimension and element count: XLA counts both in int64.
INT64_MAX = 2**63 - 1

_SIXTY_FOUR_BIT = frozenset({"float64", "int64", "uint64", "complex128"})

_LEAF = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*\[(.*)\]\s*$")


@dataclass(frozen=True, slots=True)
class LeafSpec:
    """One abstract array: dtype, shape, and whether it stands for a weakly typed Python scalar.

    ``sharding`` names the mesh axes of each leading dimension (``None``: not written, so the
    leaf is replicated over the mesh, or on the one device without a mesh).
    """

    dtype: str
    shape: tuple[int, ...]
    weak_type: bool = False
    sharding: Sharding | None = None

    @property
    def is_key(self) -> bool:
        """Whether this leaf is a typed PRNG key array."""
        return self.dtype == "key"

    @property
    def is_64bit(self) -> bool:
        """Whether this leaf needs JAX's 64-bit mode."""
        return self.dtype in _SIXTY_FOUR_BIT

    @property
    def nbytes(self) -> int:
        """Bytes a concrete array of this leaf occupies."""
        count = 1
        for dim in self.shape:
            count *= dim
        return int(count * DTYPE_BYTES[self.dtype])

    def __str__(self) -> str:
        # Sharded dimensions as JAX prints them in a jaxpr: 256@data, 256@(data,model).
        axes = list(self.sharding or ()) + [()] * (len(self.shape) - len(self.sharding or ()))
        dims = ",".join(_dim_text(d, a) for d, a in zip(self.shape, axes, strict=False))
        weak = " (weak)" if self.weak_type else ""
        return f"{self.dtype}[{dims}]{weak}"


def _dim_text(dim: int, axes: tuple[str, ...]) -> str:
    if not axes:
        return str(dim)
    return f"{dim}@{axes[0]}" if len(axes) == 1 else f"{dim}@({','.join(axes)})"


def parse_leaf(text: str, *, where: str) -> LeafSpec:
    """Parse one leaf string such as ``f32[128,784]``, ``key[4]``, ``bf16[]`` or, sharded over
    mesh axes, ``f32[256@data,784]``."""
    match = _LEAF.match(text)
    if match is None:
        raise SpecError(
            f"{where}: {text!r} is not a leaf; write DTYPE[DIMS], e.g. f32[128,784] "
            "(a scalar is f32[])"
        )
    dtype = _resolve_dtype(match.group(1), where)
    dims_text = match.group(2)
    sharding = None
    if "@" in dims_text:
        parts, sharding = split_short_dims(dims_text, where)
        dims_text = ",".join(parts)
    shape = _check_size(_parse_dims(dims_text, where), where)
    return LeafSpec(dtype=dtype, shape=shape, sharding=sharding)


_LONG_KEYS = ("shape", "dtype", "weak_type", "sharding")


def parse_long_leaf(raw: Mapping[Any, Any], where: str) -> LeafSpec:
    for key in raw:
        if key not in _LONG_KEYS:
            raise SpecError(
                f"{where}: unknown leaf key `{key}`{did_you_mean(str(key), _LONG_KEYS)}"
            )
    if "shape" not in raw or "dtype" not in raw:
        missing = "shape" if "shape" not in raw else "dtype"
        raise SpecError(f"{where}: a long-form leaf needs both `shape` and `dtype` (`{missing}`)")
    shape_raw = raw["shape"]
    if not isinstance(shape_raw, list):
        raise SpecError(f"{where}.shape: expected a list of dims like [256], not {shape_raw!r}")
    shape = _check_size(tuple(_check_dim(d, f"{where}.shape") for d in shape_raw), where)
    dtype_raw = raw["dtype"]
    if not isinstance(dtype_raw, str):
        raise SpecError(f"{where}.dtype: expected a dtype name like float32, not {dtype_raw!r}")
    weak = raw.get("weak_type", False)
    if not isinstance(weak, bool):
        raise SpecError(f"{where}.weak_type: expected true or false, not {weak!r}")
    dtype = _resolve_dtype(dtype_raw, f"{where}.dtype")
    if weak and (shape or dtype == "key"):
        raise SpecError(f"{where}.weak_type: only scalar (shape []) numeric leaves can be weak")
    sharding = None
    if raw.get("sharding") is not None:
        sharding = parse_long_sharding(raw["sharding"], f"{where}.sharding")
    return LeafSpec(dtype=dtype, shape=shape, weak_type=weak, sharding=sharding)


def _resolve_dtype(name: str, where: str) -> str:
    name = name.strip()
    if name in SHORT_DTYPES:
        return SHORT_DTYPES[name]
    if name in DTYPE_BYTES:
        return name
    if name == "bool_":
        return "bool"
    choices = [*SHORT_DTYPES, *DTYPE_BYTES]
    raise SpecError(f"{where}: unknown dtype {name!r}{did_you_mean(name, choices)}")


def _parse_dims(text: str, where: str) -> tuple[int, ...]:
    text = text.strip()
    if not text:
        return ()
    dims = []
    for part in text.split(","):
        part = part.strip()
        try:
            value: object = int(part)
        except ValueError:
            try:
                value = float(part)
            except ValueError:
                raise SpecError(
                    f"{where}: dimension {part!r} is not an integer (dims are like [128,784])"
                ) from None
        dims.append(_check_dim(value, where))
    return tuple(dims)


def _check_dim(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: dimension {value!r} is not an integer")
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{where}: dimension {value!r} is not a number of elements")
    if isinstance(value, float) and not value.is_integer():
        raise SpecError(f"{where}: dimension {value!r} is fractional; dims are whole numbers")
    if value < 0:
        raise SpecError(f"{where}: dimension {int(value)} is negative")
    if value > INT64_MAX:
        raise SpecError(f"{where}: dimension {int(value)} does not fit in int64 (max {INT64_MAX})")
    return int(value)


def _check_size(shape: tuple[int, ...], where: str) -> tuple[int, ...]:
    """``shape``, if its number of elements fits in int64 as XLA counts it."""
    if math.prod(shape) > INT64_MAX:
        dims = ",".join(str(d) for d in shape)
        raise SpecError(f"{where}: shape [{dims}] has more elements than int64 can count")
    return shape
