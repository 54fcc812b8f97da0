"""Live bytes over XLA's schedule, the buffers at the peak, and XLA's own figures beside them.

The inputs are XLA's dumps of one compilation (``xla/bufferassign.py`` reads them) and the
optimized module's text (instructions, metadata and source lines). At each step of XLA's
flattened schedule, the values XLA's live ranges hold live (an instruction's operands and its
result while it runs) occupy their slices of their allocations; where two share bytes (an op
writing its result over its operand, a loop-carried value) the bytes count once. The peak is
the most bytes live at one step (``stages/livepeak.py`` counts them, for ``stages`` and
``cost`` too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxinspect.base.inspection import MemorySummary
from jaxinspect.memory.figures import xla_figures
from jaxinspect.memory.report import (
    KindTotal,
    MemoryPeak,
    PeakBuffer,
    TimelinePoint,
)
from jaxinspect.stages.livepeak import schedule_steps
from jaxinspect.xla.bufferassign import KINDS, Allocation, PlacedValue
from jaxinspect.xla.hlotext import HloInstr, parse_module
from jaxinspect.xla.ownership import UserCode, library_prefixes
from jaxinspect.xla.sourcemap import FrameTable, parse_frame_table

_LAYOUT = re.compile(r"\{[^{}]*\}|/\*[^*]*\*/")
_PARTITIONS = re.compile(r"\bnum_partitions=(\d+)")


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
        module_text: The optimized module printed with metadata (``jaxapi.compiled_module_text``),
            for opcodes and source lines.
        usage_report: ``*-memory-usage-report.txt``, to compare its total; optional.
        memory: ``memory_analysis()`` as ``pipeline/analyses.py`` reads it, to compare.
        user: Whose frames are source lines (default: any frame outside the libraries).

    Raises:
        ValueError: A text does not parse.
    """
    steps = schedule_steps(buffer_assignment, live_range)  # counted once per run
    allocations, live, placed = steps.allocations, steps.live, steps.placed
    device, per_step, peak_step = steps.device, steps.per_step, steps.peak_step
    hlo = parse_module(module_text)
    frames = parse_frame_table(module_text)
    user = UserCode((), library_prefixes()) if user is None else user
    where = {
        instr.name: (comp.name, instr) for comp in hlo.computations for instr in comp.instructions
    }
    timeline = _timeline(live.sequence, per_step, {i.name for i in hlo.entry.instructions}, where)
    point = next(p for p in timeline if p.first_step <= peak_step <= p.step)
    at_peak = [p for p in device if p.first <= peak_step <= p.last]
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
        allocated_bytes=sum(a.size for a in allocations if a.color == 0),
        figures=xla_figures(
            allocations, live, placed, steps.unplaced, per_step, peak_step, usage_report, memory
        ),
        partitions=int(partitions.group(1)) if partitions else 1,
        peak_source=None
        if peak_instr is None
        else frames.user_location(peak_instr[1].stack_frame_id, user),
    )


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
    at_peak: Sequence[PlacedValue],
    where: dict[str, tuple[str, HloInstr]],
    frames: FrameTable,
    user: UserCode,
) -> tuple[PeakBuffer, ...]:
    """Values live at the peak, those that share bytes merged, largest first."""
    groups: list[list[PlacedValue]] = []
    by_allocation: dict[int, list[PlacedValue]] = {}
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
    group: list[PlacedValue],
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
        shares=tuple(p.value.label for p in group if p is not lead),
    )


def _by_kind(allocations: Sequence[Allocation]) -> tuple[KindTotal, ...]:
    """Count and bytes per (memory color, kind), the device's memory first."""
    totals: dict[tuple[int, str], list[int]] = {}
    for a in allocations:
        count_bytes = totals.setdefault((a.color, a.kind), [0, 0])
        count_bytes[0] += 1
        count_bytes[1] += a.size
    order = sorted(totals, key=lambda ck: (ck[0], KINDS.index(ck[1])))
    return tuple(KindTotal(kind, color, *totals[(color, kind)]) for color, kind in order)
