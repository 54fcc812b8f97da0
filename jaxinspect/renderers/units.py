"""Human-readable numbers for the table renderers (SI counts, binary bytes, adaptive seconds)."""

from __future__ import annotations


def format_count(value: float) -> str:
    """``1234567`` -> ``1.23 M``; exact below 10,000."""
    if abs(value) < 10_000:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g}"


def format_bytes(value: float) -> str:
    """``3080232`` -> ``2.94 MiB``."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:,.0f} B"


def format_seconds(value: float) -> str:
    """``0.0123`` -> ``12.3 ms``."""
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} µs"
