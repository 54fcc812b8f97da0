"""Live bytes over XLA's schedule, the buffers at the peak, and XLA's own figures beside them.

The inputs are XLA's dumps of one compilation (``cost/bufferassign.py`` reads them) and the
optimized module's text (instructions, metadata and source lines). At each step of XLA's
flattened schedule, the values XLA's live ranges hold live (an instruction's operands and its
result while it runs) occupy their slices of their allocations; where two share bytes (an op
writing its result over its operand, a loop-carried value) the bytes count once. The peak is
the most bytes live at one step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxinspect.cost.bufferassign import (
    Allocation,
    AssignedValue,
    LiveRanges,
    parse_buffer_assignment,
    parse_live_ranges,
    parse_usage_totals,
)
from jaxinspect.cost.hlotext import HloInstr, parse_module
from jaxinspect.cost.ownership import UserCode
from jaxinspect.cost.sourcemap import FrameTable, parse_frame_table
from jaxinspect.reports.memory import (
    KindTotal,
    MemoryPeak,
    PeakBuffer,
    TimelinePoint,
    XlaFigure,
)
from jaxinspect.reports.stages import MemorySummary

_LAYOUT = re.compile(r"\{[^{}]*\}|/\*[^*]*\*/")
_PARTITIONS = re.compile(r"\bnum_partitions=(\d+)")
#: Allocation kinds in the order tables list them.
_KIND_ORDER = ("parameter", "output", "temp", "constant", "thread-local")

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Placed:
    """A value with its allocation, and its live range."""

    value: AssignedValue
    allocation: Allocation
    first: int
    last: int

    @property
    def end(self) -> int:
        return self.value.offset + self.value.size


def analyse_dump_texts(
    buffer_assignment: str,
    live_range: str,
    module_text: str,
    *,
    usage_report: str | None = None,
    memory: MemorySummary | None = None,
    user: UserCode | None = None,
) -> MemoryPeak:
    """The peak, its buffers and the timeline from XLA's dump texts of one compilation.

    Args:
        buffer_assignment: ``*-buffer-assignment.txt``.
        live_range: ``*-live-range.txt``.
        module_text: The optimized module printed with metadata (``jaxapi.hlo_module_text``),
            for opcodes and source lines.
        usage_report: ``*-memory-usage-report.txt``, to compare its total; optional.
        memory: ``memory_analysis()`` as ``pipeline/analyses.py`` reads it, to compare.
        user: Whose frames are source lines (default: any frame outside the libraries).

    Raises:
        ValueError: A text does not parse.
    """
    allocations = parse_buffer_assignment(buffer_assignment)
    live = parse_live_ranges(live_range)
    hlo = parse_module(module_text)
    frames = parse_frame_table(module_text)
    user = UserCode(()) if user is None else user
    where = {
        instr.name: (comp.name, instr) for comp in hlo.computations for instr in comp.instructions
    }
    placed, unplaced = _place(allocations, live)
    per_step = _live_bytes(placed, len(live.sequence))
    peak_step = max(range(len(per_step)), key=lambda t: (per_step[t], -t))
    timeline = _timeline(live.sequence, per_step, {i.name for i in hlo.entry.instructions}, where)
    point = next(p for p in timeline if p.first_step <= peak_step <= p.step)
    at_peak = [p for p in placed if p.first <= peak_step <= p.last]
    buffers = _buffers(at_peak, where, frames, user)
    partitions = _PARTITIONS.search(hlo.header)
    peak_instr = where.get(live.sequence[peak_step])
    return MemoryPeak(
        peak_bytes=per_step[peak_step],
        peak_step=peak_step,
        peak_instruction=live.sequence[peak_step],
        peak_point=point,
        buffers=buffers,
        timeline=timeline,
        steps=len(live.sequence),
        allocations=allocations,
        by_kind=_by_kind(allocations),
        allocated_bytes=sum(a.size for a in allocations),
        figures=_figures(
            allocations, live, placed, per_step, peak_step, unplaced, usage_report, memory
        ),
        partitions=int(partitions.group(1)) if partitions else 1,
        peak_source=None
        if peak_instr is None
        else frames.user_location(peak_instr[1].stack_frame_id, user),
    )


def _place(allocations: Sequence[Allocation], live: LiveRanges) -> tuple[list[_Placed], list[Key]]:
    """Values XLA ranges over the schedule, with their slices; and those it assigns nowhere.

    Only the device's default memory (color 0) counts; thread-local scratch lives inside
    one kernel and is in no live range.
    """
    slot = {
        v.key: (v, a)
        for a in allocations
        if a.color == 0 and a.kind != "thread-local"
        for v in a.values
    }
    assigned = {v.key for a in allocations for v in a.values}
    placed, unplaced = [], []
    for key, (first, last) in live.ranges.items():
        if key in slot:
            value, allocation = slot[key]
            placed.append(_Placed(value, allocation, first, last))
        elif key not in assigned:
            unplaced.append(key)
    return placed, unplaced


def _live_bytes(placed: Sequence[_Placed], steps: int) -> list[int]:
    """Bytes occupied at each step, bytes that several live values share counted once."""
    starts: dict[int, list[_Placed]] = {}
    for p in placed:
        starts.setdefault(p.first, []).append(p)
    active: list[_Placed] = []
    out = []
    for step in range(steps):
        active = [p for p in active if p.last >= step] + starts.get(step, [])
        out.append(_occupied(active))
    return out


def _occupied(values: Iterable[_Placed]) -> int:
    by_allocation: dict[int, list[tuple[int, int]]] = {}
    for p in values:
        by_allocation.setdefault(p.allocation.index, []).append((p.value.offset, p.end))
    return sum(_union(spans) for spans in by_allocation.values())


def _union(spans: list[tuple[int, int]]) -> int:
    total, reached = 0, -1
    for start, end in sorted(spans):
        if end > reached:
            total += end - max(start, reached)
            reached = end
    return total


def _timeline(
    sequence: Sequence[str],
    per_step: Sequence[int],
    entry: set[str],
    where: dict[str, tuple[str, HloInstr]],
) -> tuple[TimelinePoint, ...]:
    """One point per entry instruction; a caller owns its callees' steps (scheduled before it)."""
    points = []
    first = 0
    for step, name in enumerate(sequence):
        if name not in entry:
            continue
        top = max(range(first, step + 1), key=lambda t: (per_step[t], -t))
        instr = where.get(name)
        points.append(
            TimelinePoint(
                step=step,
                first_step=first,
                instruction=name,
                opcode=None if instr is None else instr[1].opcode,
                live_bytes=per_step[top],
                at=sequence[top],
            )
        )
        first = step + 1
    return tuple(points)


def _buffers(
    at_peak: Sequence[_Placed],
    where: dict[str, tuple[str, HloInstr]],
    frames: FrameTable,
    user: UserCode,
) -> tuple[PeakBuffer, ...]:
    """Values live at the peak, those that share bytes merged, largest first."""
    groups: list[list[_Placed]] = []
    by_allocation: dict[int, list[_Placed]] = {}
    for p in at_peak:
        by_allocation.setdefault(p.allocation.index, []).append(p)
    for members in by_allocation.values():
        members.sort(key=lambda p: (p.value.offset, p.end))
        reached = -1
        for p in members:
            if p.value.offset < reached:
                groups[-1].append(p)
            else:
                groups.append([p])
            reached = max(reached, p.end)
    out = [_buffer(group, where, frames, user) for group in groups]
    return tuple(sorted(out, key=lambda b: (-b.bytes, b.instruction, b.index)))


def _buffer(
    group: list[_Placed],
    where: dict[str, tuple[str, HloInstr]],
    frames: FrameTable,
    user: UserCode,
) -> PeakBuffer:
    # The result written last names the bytes: the others are operands it overwrote.
    lead = max(group, key=lambda p: (p.first, p.value.size, p.value.id))
    value = lead.value
    computation, instr = where.get(value.instruction, (None, None))
    op_name = None if instr is None else instr.op_name
    is_parameter = instr is not None and instr.opcode == "parameter"
    return PeakBuffer(
        instruction=value.instruction,
        index=value.index,
        computation=computation,
        opcode=None if instr is None else instr.opcode,
        shape=_LAYOUT.sub("", value.shape).replace("  ", " "),
        bytes=_union([(p.value.offset, p.end) for p in group]),
        kind=lead.allocation.kind,
        allocation=lead.allocation.index,
        offset=min(p.value.offset for p in group),
        live=(lead.first, lead.last),
        argument=op_name.replace("\\'", "'") if is_parameter and op_name else None,
        op_name=None if is_parameter else op_name,
        source=None if instr is None else frames.user_location(instr.stack_frame_id, user),
        created_by_xla=instr is not None and instr.created_by_xla,
        shares=tuple(_label(p.value) for p in group if p is not lead),
    )


def _label(value: AssignedValue) -> str:
    return value.instruction if value.index == "{}" else value.instruction + value.index


def _by_kind(allocations: Sequence[Allocation]) -> tuple[KindTotal, ...]:
    totals: dict[str, list[int]] = {}
    for a in allocations:
        count_bytes = totals.setdefault(a.kind, [0, 0])
        count_bytes[0] += 1
        count_bytes[1] += a.size
    order = sorted(totals, key=_KIND_ORDER.index)
    return tuple(KindTotal(kind, *totals[kind]) for kind in order)


def _figures(
    allocations: Sequence[Allocation],
    live: LiveRanges,
    placed: Sequence[_Placed],
    per_step: Sequence[int],
    peak_step: int,
    unplaced: Sequence[Key],
    usage_report: str | None,
    memory: MemorySummary | None,
) -> tuple[XlaFigure, ...]:
    """XLA's figures beside the ones the buffer assignment gives, each relation explained."""
    peak = per_step[peak_step]
    out = [_live_range_figure(live, placed, per_step, peak_step, unplaced)]

    def total(*kinds: str, live_out: bool | None = None) -> int:
        return sum(
            a.size
            for a in allocations
            if a.kind in kinds and (live_out is None or a.live_out == live_out)
        )

    parameters, constants = total("parameter"), total("constant")
    outputs = total("output") + total("parameter", live_out=True)
    aliased = total("parameter", live_out=True)
    lasting = parameters + total("output") + constants
    if memory is not None:
        out.append(_peak_figure(memory.peak_bytes, peak, lasting, total("temp")))
        out += [
            _sum_figure("argument", memory.argument_bytes, parameters, "parameter allocations"),
            _sum_figure("output", memory.output_bytes, outputs, "allocations of the output"),
            _sum_figure("alias", memory.alias_bytes, aliased, "parameters the output reuses"),
            _sum_figure("temp", memory.temp_bytes, total("temp"), "temp allocations"),
        ]
    allocated = sum(a.size for a in allocations)
    report_total = None
    if usage_report is not None:
        report_total = sum(parse_usage_totals(usage_report).values()) or None
    slack = allocated - peak
    note = f"all {len(allocations)} allocations, constants and thread-local scratch included; " + (
        f"the peak is {slack:,} B below: bytes never live at one step"
        if slack
        else "all live at the peak"
    )
    if report_total is None:
        note = "XLA wrote no memory-usage report; " + note
    elif report_total != allocated:
        note = f"XLA's memory-usage report totals {report_total - allocated:+,} B more; " + note
    out.append(
        XlaFigure("usage_report_total", report_total, allocated, report_total == allocated, note)
    )
    return tuple(out)


def _live_range_figure(
    live: LiveRanges,
    placed: Sequence[_Placed],
    per_step: Sequence[int],
    peak_step: int,
    unplaced: Sequence[Key],
) -> XlaFigure:
    """XLA's live-range dump names a peak step and the bytes it lists there."""
    peak = per_step[peak_step]
    if live.peak_step is None or live.peak_bytes is None:
        return XlaFigure(
            "live_range_peak", None, peak, False, "XLA's live-range dump names no peak"
        )
    step, xla = live.peak_step, live.peak_bytes
    if xla == peak and step == peak_step:
        return XlaFigure(
            "live_range_peak", xla, peak, True, f"XLA's live-range dump, the same step ({step})"
        )
    reasons = []
    at_step = [p for p in placed if p.first <= step <= p.last]
    counted = sum(p.value.size for p in at_step)
    twice = counted - per_step[step] if step < len(per_step) else 0
    if twice > 0:
        pairs = _shared_pairs(at_step)
        reasons.append(
            f"at step {step} XLA adds every live value's size, so a result written over its "
            f"operand's bytes counts twice ({twice:,} B: {pairs})"
        )
    if step != peak_step and step < len(per_step) and per_step[step] < peak:
        reasons.append(
            f"XLA picks its step by adding each step's new values before dropping those that "
            f"ended at the step before; step {peak_step} holds {peak - per_step[step]:,} B "
            f"more than step {step}"
        )
    if unplaced:
        reasons.append(
            f"{len(unplaced)} values XLA ranges have no allocation and are left out "
            f"({', '.join(name + index for name, index in unplaced[:3])})"
        )
    if not reasons:
        reasons.append(f"XLA lists {xla:,} B at step {step}; jaxinspect finds {peak:,} B")
    note = f"XLA's live-range dump names step {step}: " + "; ".join(reasons)
    return XlaFigure("live_range_peak", xla, peak, xla == peak, note)


def _shared_pairs(values: Sequence[_Placed]) -> str:
    """``b in a's bytes`` for live values whose slices overlap, first three."""
    pairs = []
    ordered = sorted(values, key=lambda p: (p.allocation.index, p.value.offset, p.first))
    for i, p in enumerate(ordered):
        for q in ordered[i + 1 :]:
            if q.allocation.index != p.allocation.index or q.value.offset >= p.end:
                break
            first, later = (p, q) if p.first <= q.first else (q, p)
            pairs.append(f"{_label(later.value)} in {_label(first.value)}'s")
    return ", ".join(pairs[:3]) + (f" and {len(pairs) - 3} more" if len(pairs) > 3 else "")


def _peak_figure(jax_peak: int | None, peak: int, lasting: int, temp: int) -> XlaFigure:
    """JAX's ``peak_memory_in_bytes`` beside the timeline's peak."""
    name = "peak_memory_in_bytes"
    if jax_peak is None:
        return XlaFigure(name, None, peak, False, "the backend reports no peak")
    if jax_peak == peak:
        return XlaFigure(name, jax_peak, peak, True, "memory_analysis() gives the same peak")
    if jax_peak == lasting:
        note = (
            f"parameters + outputs + constants ({lasting:,} B): it leaves out the temp "
            f"allocation ({temp:,} B) that intermediate values live in"
        )
    else:
        note = (
            f"{jax_peak - peak:+,} B from the timeline's peak; it matches no sum of XLA's "
            "allocations that jaxinspect knows"
        )
    return XlaFigure(name, jax_peak, peak, False, note)


def _sum_figure(name: str, xla: int | None, ours: int, what: str) -> XlaFigure:
    """A ``memory_analysis()`` size beside the sum of the allocations it counts."""
    label = f"{name}_size_in_bytes"
    if xla is None:
        return XlaFigure(label, None, ours, False, "the backend does not report it")
    if xla == ours:
        return XlaFigure(label, xla, ours, True, f"sum of the {what}")
    return XlaFigure(label, xla, ours, False, f"{xla - ours:+,} B from the sum of the {what}")
