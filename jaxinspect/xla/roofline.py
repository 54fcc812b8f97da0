"""The roofline model: arithmetic intensity, compute or memory bound, and a lower-bound time.

A model, not a measurement: it assumes every op reaches the device's peak FLOP/s or peak
bandwidth, whichever limits it, and ignores latency, launch overhead and caches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.jsonfields import Seconds, js
from jaxinspect.xla.profiles import DeviceProfile

#: A ceiling: above zero.
_POSITIVE = {"exclusiveMinimum": 0}


@dataclass(frozen=True, slots=True)
class RooflinePoint:
    """Where one op (or the whole program) sits under the roofline. A model, not a
    measurement: time_lower_bound_s = max(flops / peak_flops, bytes / bandwidth)."""

    #: FLOPs per byte accessed; null when no bytes are accessed.
    intensity: float | None = field(metadata=js("arithmetic_intensity"))
    #: The FLOP/s ceiling used (for the op's element type).
    peak_flops: float = field(metadata=js(schema=_POSITIVE))
    #: Element type whose peak was used (f32 when the profile has none for the op's type).
    peak_dtype: str
    #: Intensity where the compute and memory ceilings meet.
    ridge: float = field(metadata=js("ridge_intensity", schema=_POSITIVE))
    #: ``none``: no work.
    bound: str = field(metadata=js(schema={"enum": ["compute", "memory", "none"]}))
    #: max(flops / peak_flops, bytes / bandwidth): a lower bound.
    time_s: Seconds = field(metadata=js("time_lower_bound_s"))


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
