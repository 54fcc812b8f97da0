"""Human-readable numbers for the table renderers (SI counts, binary bytes, adaptive seconds).

Every command prints figures through these, so they read alike (``1.61 M``, ``12.3 ms``,
``1.16 MiB``): three significant digits in the largest unit the value reaches. Exact integers
are for the JSON documents only.
"""

from __future__ import annotations

#: Units from the largest down, as (name, scale).
_COUNT_UNITS = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))
_BYTE_UNITS = tuple(
    (f"{name}iB", 1024.0**power) for name, power in zip("PTGMK", range(5, 0, -1), strict=True)
)
_SECOND_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
#: Decimal prefixes for rates, as datasheets give them (``3.35 TB/s``).
_RATE_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6))


def format_count(value: float) -> str:
    """``1234567`` -> ``1.23 M``; exact below 10,000."""
    if abs(value) < 10_000:
        if float(value).is_integer() or abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    return _in_unit(value, _COUNT_UNITS) or f"{value:.3g}"


def format_bytes(value: float) -> str:
    """``3080232`` -> ``2.94 MiB``."""
    return _in_unit(value, _BYTE_UNITS) or f"{value:,.0f} B"


def format_seconds(value: float) -> str:
    """``0.0123`` -> ``12.3 ms``; down to nanoseconds (roofline bounds of small ops)."""
    return _in_unit(value, _SECOND_UNITS) or f"{value:.3g} s"


def format_rate(value: float, unit: str) -> str:
    """``3.35e12, "B/s"`` -> ``3.35 TB/s``."""
    prefixed = tuple((prefix + unit, scale) for prefix, scale in _RATE_PREFIXES)
    return _in_unit(value, prefixed) or f"{value:.3g} {unit}"


def _in_unit(value: float, units: tuple[tuple[str, float], ...]) -> str | None:
    """``value`` to three significant digits in the largest of ``units`` it reaches.

    Rounding can reach 1000 of a unit (``999_999`` is ``1e+03 k`` to three digits): the next
    unit up is used then (``1 M``). ``None`` when ``value`` is below the smallest unit.
    """
    for i, (name, scale) in enumerate(units):
        if abs(value) < scale:
            continue
        text = f"{value / scale:.3g}"
        if "e" in text:  # 1000 or more of this unit after rounding
            if i == 0:
                return f"{value / scale:,.0f} {name}"
            name, scale = units[i - 1]
            text = f"{value / scale:.3g}"
        return f"{text} {name}"
    return None
