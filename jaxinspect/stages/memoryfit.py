"""A best peak-memory figure (the buffer assignment's; else JAX's, or jaxinspect's bound where
JAX's is missing or implausible), and the rows that show it beside XLA's figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.base.inspection import MemorySummary
from jaxinspect.jsonfields import Count, NonNegative, Positive, js
from jaxinspect.stages.livepeak import jax_peak_relation

#: Why a reported peak below ``argument + temp - alias`` cannot be the whole peak; the
#: ``cost`` and ``stages`` tables both show it where the figure surprises.
PEAK_BELOW_LIVE = (
    "JAX's peak is below argument + temp - alias, which are live for the whole run, "
    "so it leaves buffers out"
)


@dataclass(frozen=True, slots=True)
class PeakEstimate:
    """The peak figure used for fitting, where it came from and why."""

    bytes: Count
    #: ``jaxinspect``: the peak read off the buffer assignment (memory.peak.bytes); else
    #: ``jax``: peak_memory_in_bytes; ``derived`` (argument + output + temp + constants -
    #: alias): used because JAX's is missing or below argument + temp - alias.
    source: str = field(metadata=js(schema={"enum": ["jaxinspect", "jax", "derived"]}))
    reason: str


@dataclass(frozen=True, slots=True)
class MemoryFit:
    """The peak estimate against one device's memory capacity."""

    capacity_bytes: Positive
    needed_bytes: Count
    fraction: NonNegative
    fits: bool


def estimate_peak(memory: MemorySummary) -> PeakEstimate | None:
    """The buffer assignment's peak where it was read; else JAX's peak when plausible, else
    argument + output + temp - alias (an upper bound).

    Arguments and the temp allocation are live for the whole execution, so a reported peak
    below ``argument + temp - alias`` cannot be the true peak (the CPU backend reports
    argument + output alone).
    """
    if memory.peak is not None:
        return PeakEstimate(
            memory.peak.bytes,
            "jaxinspect",
            "the peak: most bytes live at one step of XLA's schedule (buffer assignment)",
        )
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


def peak_rows(memory: MemorySummary) -> list[tuple[str, str, int | None, str]]:
    """``(label, JSON-like key, bytes, note)`` of the peak and of XLA's figures beside it,
    each note saying what the figure counts (``stages`` and ``cost`` show the same rows).

    A ``None`` value's note is empty: the caller shows the reason the report gives.
    """
    live = memory.peak
    rows: list[tuple[str, str, int | None, str]] = []
    if live is None:
        rows.append(("peak", "peak", None, ""))
    else:
        rows.append(
            (
                "peak",
                "peak",
                live.bytes,
                f"most bytes live at once (XLA's buffer assignment, step {live.step} of "
                f"{live.steps})",
            )
        )
        rows.append(
            (
                "constants",
                "peak.constant_bytes",
                live.constant_bytes,
                "closed-over arrays; memory_analysis() has no field for them",
            )
        )
    note = ""
    if memory.peak_bytes is not None and live is not None:
        lasting = None not in (memory.argument_bytes, memory.output_bytes, memory.alias_bytes)
        note = jax_peak_relation(
            memory.peak_bytes,
            live.bytes,
            (memory.argument_bytes or 0)
            + (memory.output_bytes or 0)
            - (memory.alias_bytes or 0)
            + live.constant_bytes
            if lasting
            else -1,
            memory.temp_bytes or 0,
            tuple((s.space, s.bytes) for s in live.other_spaces),
        )[1]
    elif memory.peak_bytes is not None and memory.peak_source == "derived":
        # The CPU backend's peak leaves out temp: say so where the number surprises.
        note = f"{PEAK_BELOW_LIVE}; the jaxinspect row is the bound"
    rows.append(("peak_memory_in_bytes (XLA)", "peak_bytes", memory.peak_bytes, note))
    constants = "+const" if memory.derived_counts_constants else ""
    bound = "upper bound: every buffer live at once"
    if not memory.derived_counts_constants:
        bound += "; constants not counted"
    rows.append(
        (
            f"arg+out+temp{constants}-alias (jaxinspect)",
            "derived_peak_bytes",
            memory.derived_peak_bytes,
            bound,
        )
    )
    return rows
