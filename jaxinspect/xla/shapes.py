"""Element types and byte sizes of HLO shapes as printed (``f32[8,64]{1,0}``, tuples)."""

from __future__ import annotations

import functools
import math
import re

_ARRAY = re.compile(r"\b([a-z]+\d*(?:e\d+m\d+\w*)?)\[([\d,\s]*)\]")

#: Bits per element of HLO primitive types (sub-byte types are packed).
_BITS = {
    "pred": 8,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "f16": 16,
    "bf16": 16,
    "s32": 32,
    "u32": 32,
    "f32": 32,
    "s64": 64,
    "u64": 64,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "token": 0,
}


def _element_bits(dtype: str) -> int:
    if dtype in _BITS:
        return _BITS[dtype]
    if dtype.startswith("f8"):
        return 8
    if dtype.startswith("f4"):
        return 4
    raise ValueError(f"unknown HLO element type {dtype!r}")


def arrays(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    """(element type, dims) of every array in a shape; a tuple shape yields its leaves."""
    out = []
    for dtype, dims in _ARRAY.findall(shape):
        out.append((dtype, tuple(int(d) for d in dims.split(",") if d.strip())))
    return out


# A module repeats few distinct shapes over thousands of instructions (96 layers: 8,000 asks
# for under 100 shapes): each is read once. The errors raised are not cached, only results.
@functools.lru_cache(maxsize=4096)
def shape_bytes(shape: str) -> int:
    """Bytes of all arrays in ``shape`` (layouts and tiling ignored)."""
    total_bits = sum(_element_bits(t) * math.prod(dims) for t, dims in arrays(shape))
    return (total_bits + 7) // 8


@functools.lru_cache(maxsize=4096)
def element_type(shape: str) -> str | None:
    """Element type of the largest array in ``shape``; ``None`` for an empty tuple."""
    leaves = arrays(shape)
    if not leaves:
        return None
    return max(leaves, key=lambda leaf: math.prod(leaf[1]))[0]
