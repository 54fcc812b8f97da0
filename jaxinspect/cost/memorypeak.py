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

from jaxinspect.cost.bufferassign import (
    KINDS,
    Allocation,
    PlacedValue,
    parse_buffer_assignment,
    parse_live_ranges,
    parse_usage_totals,
    place_values,
)
from jaxinspect.cost.hlotext import HloInstr, parse_module
from jaxinspect.cost.memoryfigures import space_name, xla_figures
from jaxinspect.cost.ownership import UserCode, library_prefixes
from jaxinspect.cost.sourcemap import FrameTable, parse_frame_table
from jaxinspect.reports.memory import (
    KindTotal,
    MemoryPeak,
    PeakBuffer,
    TimelinePoint,
)
from jaxinspect.reports.stages import LivePeak, MemorySummary

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
    allocations = parse_buffer_assignment(buffer_assignment)
    live = parse_live_ranges(live_range)
    hlo = parse_module(module_text)
    frames = parse_frame_table(module_text)
    user = UserCode((), library_prefixes()) if user is None else user
    where = {
        instr.name: (comp.name, instr) for comp in hlo.computations for instr in comp.instructions
    }
    placed, unplaced = place_values(allocations, live)
    device, per_step, peak_step = _device_steps(placed, len(live.sequence))
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
            allocations, live, placed, unplaced, per_step, peak_step, usage_report, memory
        ),
        partitions=int(partitions.group(1)) if partitions else 1,
        peak_source=None
        if peak_instr is None
        else frames.user_location(peak_instr[1].stack_frame_id, user),
    )


def live_peak(buffer_assignment: str, live_range: str, usage_report: str | None = None) -> LivePeak:
    """The peak alone, from XLA's buffer assignment and live ranges (no module text).

    The same figure as ``analyse_dump_texts(...).peak_bytes``, computed the same way, for
    ``stages`` and ``cost``, which show the peak without its buffers and timeline.

    Raises:
        ValueError: A text does not parse.
    """
    allocations = parse_buffer_assignment(buffer_assignment)
    live = parse_live_ranges(live_range)
    placed, _ = place_values(allocations, live)
    _, per_step, peak_step = _device_steps(placed, len(live.sequence))
    spaces = {} if usage_report is None else parse_usage_totals(usage_report)
    others: dict[str, int] = {}
    for a in allocations:
        if a.color != 0:
            name = space_name(a.color, spaces)
            others[name] = others.get(name, 0) + a.size
    return LivePeak(
        bytes=per_step[peak_step],
        step=peak_step,
        steps=len(per_step),
        constant_bytes=sum(a.size for a in allocations if a.color == 0 and a.kind == "constant"),
        other_spaces=tuple(sorted(others.items(), key=lambda item: -item[1])),
    )


def _device_steps(
    placed: Sequence[PlacedValue], steps: int
) -> tuple[list[PlacedValue], list[int], int]:
    """The values in the device's memory, its live bytes per step, and the peak step.

    Only color 0 counts: a TPU's on-chip spaces (vmem) are not what must fit in HBM.
    """
    device = [p for p in placed if p.allocation.color == 0]
    per_step = _live_bytes(device, steps)
    if not per_step:
        raise ValueError("XLA's live-range dump lists an empty schedule")
    peak_step = max(range(len(per_step)), key=lambda t: (per_step[t], -t))
    return device, per_step, peak_step


def _live_bytes(placed: Sequence[PlacedValue], steps: int) -> list[int]:
    """Bytes occupied at each step, bytes that several live values share counted once.

    A value is live from its first step to its last (at least its first). The total is kept
    up to date as values start and stop, each allocation's bytes counted through how many
    live values cover them: the union of every live value is never recomputed, which made
    a long schedule (96 layers' parameters live throughout) quadratic.
    """
    starts: dict[int, list[PlacedValue]] = {}
    stops: dict[int, list[PlacedValue]] = {}
    for p in placed:
        if 0 <= p.first < steps:
            starts.setdefault(p.first, []).append(p)
            stops.setdefault(max(p.first, p.last) + 1, []).append(p)
    cover = _Coverage.of(placed)
    total, out = 0, []
    for step in range(steps):
        for p in stops.get(step, ()):
            total -= cover[p.allocation.index].change(p.value.offset, p.end, -1)
        for p in starts.get(step, ()):
            total += cover[p.allocation.index].change(p.value.offset, p.end, 1)
        out.append(total)
    return out


class _Coverage:
    """How many live values cover each stretch of one allocation between value boundaries."""

    def __init__(self, bounds: list[int]) -> None:
        self.bounds = bounds
        self.at = {b: i for i, b in enumerate(bounds)}
        self.counts = [0] * len(bounds)

    @staticmethod
    def of(placed: Iterable[PlacedValue]) -> dict[int, _Coverage]:
        bounds: dict[int, set[int]] = {}
        for p in placed:
            bounds.setdefault(p.allocation.index, set()).update((p.value.offset, p.end))
        return {index: _Coverage(sorted(b)) for index, b in bounds.items()}

    def change(self, start: int, end: int, step: int) -> int:
        """Add (+1) or remove (-1) one value; the bytes that became covered or uncovered."""
        bounds, counts, changed = self.bounds, self.counts, 0
        for i in range(self.at[start], self.at[end]):
            if counts[i] == (0 if step > 0 else 1):
                changed += bounds[i + 1] - bounds[i]
            counts[i] += step
        return changed


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
