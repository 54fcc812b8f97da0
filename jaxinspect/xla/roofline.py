"""The roofline model: arithmetic intensity, compute or memory bound, and a lower-bound time.

A model, not a measurement: it assumes every op reaches the device's peak FLOP/s or peak
bandwidth, whichever limits it, and ignores latency, launch overhead and caches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.jsonfields import js
from jaxinspect.xla.profiles import DeviceProfile


@dataclass(frozen=True, slots=True)
class RooflinePoint:
    """Where one op (or the whole program) sits under the roofline."""

    #: FLOP per byte accessed; None when no bytes are accessed.
    intensity: float | None = field(metadata=js("arithmetic_intensity"))
    peak_flops: float  # the FLOP/s ceiling used (for the op's element type)
    peak_dtype: str  # element type whose peak was used
    #: Intensity where the compute and memory ceilings meet.
    ridge: float = field(metadata=js("ridge_intensity"))
    bound: str  # "compute", "memory" or "none" (no work)
    #: max(flops / peak_flops, bytes / bandwidth): a lower bound.
    time_s: float = field(metadata=js("time_lower_bound_s"))


def roofline_point(
    flops: float, bytes_accessed: float, dtype: str | None, profile: DeviceProfile
) -> RooflinePoint:
    """Place ``flops`` over ``bytes_accessed`` of element type ``dtype`` on ``profile``."""
    peak, peak_dtype = profile.peak_for(dtype)
    compute_s = flops / peak
    memory_s = bytes_accessed / profile.bandwidth_bytes_s
    if compute_s == 0 and memory_s == 0:
        bound = "none"
    else:
        bound = "compute" if compute_s >= memory_s else "memory"
    return RooflinePoint(
        intensity=flops / bytes_accessed if bytes_accessed else None,
        peak_flops=peak,
        peak_dtype=peak_dtype,
        ridge=peak / profile.bandwidth_bytes_s,
        bound=bound,
        time_s=max(compute_s, memory_s),
    )
