"""XLA's own memory figures beside the ones the buffer assignment gives, each relation said.

A figure that differs is never left unexplained: the note decomposes the difference into
what jaxinspect knows XLA counts differently (values sharing bytes counted twice, other memory
spaces, layout padding, the step XLA picks), and names any rest it cannot account for.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxinspect.base.inspection import MemorySummary
from jaxinspect.memory.report import XlaFigure
from jaxinspect.stages.livepeak import jax_peak_relation, space_name
from jaxinspect.xla.bufferassign import (
    Allocation,
    AssignedValue,
    LiveRanges,
    PlacedValue,
    parse_usage_totals,
)
from jaxinspect.xla.shapes import shape_bytes

#: XLA counts a tuple as its table of element pointers.
_POINTER_BYTES = 8


def xla_figures(
    allocations: Sequence[Allocation],
    live: LiveRanges,
    placed: Sequence[PlacedValue],
    unplaced: Sequence[tuple[str, str]],
    per_step: Sequence[int],
    peak_step: int,
    usage_report: str | None,
    memory: MemorySummary | None,
) -> tuple[XlaFigure, ...]:
    """Each of XLA's figures with jaxinspect's for the same thing and how they relate.

    Args:
        allocations: XLA's allocations.
        live: XLA's live ranges (and the peak its dump names).
        placed: Every live-ranged value with its allocation, all memory spaces.
        unplaced: Live-ranged values XLA assigns nowhere.
        per_step: Bytes of the device's memory live at each step.
        peak_step: The step of the timeline's peak.
        usage_report: XLA's memory-usage report, if written.
        memory: ``memory_analysis()``, if the backend gave one.
    """
    spaces = {} if usage_report is None else parse_usage_totals(usage_report)
    out = [_live_range(live, placed, unplaced, per_step, peak_step, spaces)]
    device = [a for a in allocations if a.color == 0]

    def total(kind: str, live_out: bool | None = None) -> int:
        return sum(
            a.size
            for a in device
            if a.kind == kind and (live_out is None or a.live_out == live_out)
        )

    parameters, outputs, temp = total("parameter"), total("output"), total("temp")
    aliased = total("parameter", live_out=True)
    if memory is not None:
        lasting = parameters + outputs + total("constant")
        others = [a for a in allocations if a.color != 0]
        elsewhere = {space_name(a.color, spaces): 0 for a in others}
        for a in others:
            elsewhere[space_name(a.color, spaces)] += a.size
        agrees, note = jax_peak_relation(
            memory.peak_bytes, per_step[peak_step], lasting, temp, tuple(elsewhere.items())
        )
        out.append(
            XlaFigure("peak_memory_in_bytes", memory.peak_bytes, per_step[peak_step], agrees, note)
        )
        out += [
            _sum("argument", memory.argument_bytes, parameters, "parameter allocations"),
            _sum("output", memory.output_bytes, outputs + aliased, "allocations of the output"),
            _sum("alias", memory.alias_bytes, aliased, "parameters the output reuses"),
            _sum("temp", memory.temp_bytes, temp, "temp allocations"),
        ]
    out.append(_allocated(device, per_step[peak_step], spaces.get(0)))
    return tuple(out)


def _live_range(
    live: LiveRanges,
    placed: Sequence[PlacedValue],
    unplaced: Sequence[tuple[str, str]],
    per_step: Sequence[int],
    peak_step: int,
    spaces: dict[int, tuple[str, int]],
) -> XlaFigure:
    """The bytes XLA's live-range dump lists at the step it calls the peak.

    XLA adds the unpadded size of every value live at that step, in every memory space, so
    its figure = the device's bytes then + bytes counted twice - padding + other spaces.
    """
    name, peak = "live_range_peak", per_step[peak_step]
    if live.peak_step is None or live.peak_bytes is None or live.peak_step >= len(per_step):
        return XlaFigure(name, None, peak, False, "XLA's live-range dump names no peak step")
    step, xla = live.peak_step, live.peak_bytes
    if xla == peak and step == peak_step:
        return XlaFigure(name, xla, peak, True, f"XLA's live-range dump, the same step ({step})")
    then = per_step[step]
    at_step = [p for p in placed if p.first <= step <= p.last]
    device = [p for p in at_step if p.allocation.color == 0]
    elsewhere = [p for p in at_step if p.allocation.color != 0]
    twice = sum(p.value.size for p in device) - then
    padding = sum(p.value.size - _unpadded(p.value) for p in device)
    other = sum(_unpadded(p.value) for p in elsewhere)
    reasons = []
    if twice:
        reasons.append(
            f"it counts a result written over its operand's bytes twice (+{twice:,} B: "
            f"{_shared_pairs(device)})"
        )
    if other:
        names = sorted({space_name(p.allocation.color, spaces) for p in elsewhere})
        reasons.append(
            f"it counts values in other memory spaces (+{other:,} B in {', '.join(names)}), "
            "which this timeline of the device's memory leaves out"
        )
    if padding:
        reasons.append(f"it counts shapes without their layout's padding (-{padding:,} B)")
    if step != peak_step and then < peak:
        reasons.append(
            "XLA picks its step by adding each step's new values before dropping those that "
            f"ended the step before; step {peak_step} holds {peak - then:,} B more"
        )
    rest = xla - (then + twice - padding + other)
    if rest or unplaced:
        missing = f", {len(unplaced)} ranged values have no allocation" if unplaced else ""
        reasons.append(f"{rest:+,} B jaxinspect cannot account for{missing}")
    note = (
        f"XLA's dump calls step {step} the peak, where the device's memory holds {then:,} B: "
        + "; ".join(reasons)
    )
    return XlaFigure(name, xla, peak, xla == peak, note)


def _unpadded(value: AssignedValue) -> int:
    """The value's size as XLA's live-range dump counts it (no layout padding).

    A shape of an element type jaxinspect does not know counts as assigned.
    """
    shape = value.shape
    if shape.startswith("("):  # a tuple's own value is its table of element pointers
        depth, elements = 0, 1
        for ch in shape[1:-1]:
            depth += ch in "([{"
            depth -= ch in ")]}"
            elements += ch == "," and depth == 0
        return _POINTER_BYTES * elements if shape != "()" else 0
    try:
        return shape_bytes(shape)
    except ValueError:
        return value.size


def _shared_pairs(values: Sequence[PlacedValue]) -> str:
    """``b in a's bytes`` for live values whose slices overlap, the first three."""
    pairs = []
    ordered = sorted(values, key=lambda p: (p.allocation.index, p.value.offset, p.first))
    for i, p in enumerate(ordered):
        for q in ordered[i + 1 :]:
            if q.allocation.index != p.allocation.index or q.value.offset >= p.end:
                break
            first, later = (p, q) if p.first <= q.first else (q, p)
            pairs.append(f"{later.value.label} in {first.value.label}'s")
    more = f" and {len(pairs) - 3} more" if len(pairs) > 3 else ""
    return ", ".join(pairs[:3]) + more


def _sum(name: str, xla: int | None, ours: int, what: str) -> XlaFigure:
    """A ``memory_analysis()`` size beside the sum of the allocations it counts."""
    label = f"{name}_size_in_bytes"
    if xla is None:
        return XlaFigure(label, None, ours, False, "the backend does not report it")
    if xla == ours:
        return XlaFigure(label, xla, ours, True, f"sum of the {what}")
    return XlaFigure(label, xla, ours, False, f"{xla - ours:+,} B from the sum of the {what}")


def _allocated(
    device: Sequence[Allocation], peak: int, reported: tuple[str, int] | None
) -> XlaFigure:
    """All allocations in the device's memory beside the memory-usage report's total."""
    allocated = sum(a.size for a in device)
    slack = allocated - peak
    note = f"all {len(device)} allocations, constants and thread-local scratch included; " + (
        f"the peak is {slack:,} B below: bytes never live at one step" if slack else "all live"
    )
    total = None if reported is None else reported[1]
    if total is None:
        note = "XLA wrote no memory-usage report; " + note
    elif total != allocated:
        note = f"XLA's memory-usage report totals {total - allocated:+,} B more; " + note
    return XlaFigure("usage_report_total", total, allocated, total == allocated, note)
