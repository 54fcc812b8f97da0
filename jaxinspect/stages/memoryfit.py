"""A best peak-memory figure (JAX's, or jaxinspect's where JAX's is missing or implausible)."""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.base.inspection import MemorySummary

#: Why a reported peak below ``argument + temp - alias`` cannot be the whole peak; the
#: ``cost`` and ``stages`` tables both show it where the figure surprises.
PEAK_BELOW_LIVE = (
    "JAX's peak is below argument + temp - alias, which are live for the whole run, "
    "so it leaves buffers out"
)


@dataclass(frozen=True, slots=True)
class PeakEstimate:
    """The peak figure used for fitting, where it came from and why."""

    bytes: int
    source: str  # "jax" (peak_memory_in_bytes) or "derived" (argument + output + temp - alias)
    reason: str


@dataclass(frozen=True, slots=True)
class MemoryFit:
    """The peak estimate against one device's memory capacity."""

    capacity_bytes: int
    needed_bytes: int
    fraction: float
    fits: bool


def estimate_peak(memory: MemorySummary) -> PeakEstimate | None:
    """JAX's peak when plausible, else argument + output + temp - alias (an upper bound).

    Arguments and the temp allocation are live for the whole execution, so a reported peak
    below ``argument + temp - alias`` cannot be the true peak (the CPU backend reports
    argument + output alone).
    """
    derived = memory.derived_peak_bytes
    floor = None
    if None not in (memory.argument_bytes, memory.temp_bytes, memory.alias_bytes):
        floor = (memory.argument_bytes or 0) + (memory.temp_bytes or 0) - (memory.alias_bytes or 0)
    peak = memory.peak_bytes
    if peak is not None and (floor is None or peak >= floor):
        return PeakEstimate(peak, "jax", "peak_memory_in_bytes as the backend reports it")
    if derived is None:
        return None
    why = "the backend reports no peak" if peak is None else PEAK_BELOW_LIVE
    return PeakEstimate(derived, "derived", f"{why}; the derived peak is used")


def fit_memory(estimate: PeakEstimate, capacity_bytes: int) -> MemoryFit:
    """Whether ``estimate`` fits in ``capacity_bytes``."""
    return MemoryFit(
        capacity_bytes=capacity_bytes,
        needed_bytes=estimate.bytes,
        fraction=estimate.bytes / capacity_bytes,
        fits=estimate.bytes <= capacity_bytes,
    )
