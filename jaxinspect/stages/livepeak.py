"""The peak: the most bytes live at one step of XLA's schedule, read off the buffer assignment
and live ranges of the run's one compilation (``stages``, ``cost`` and the report show it;
``memory/peak.py`` adds the buffers and the timeline), and what JAX's own peak counts beside it.

At each step of XLA's flattened schedule, the values XLA's live ranges hold live occupy their
slices of their allocations; where two share bytes (an op writing its result over its operand,
a loop-carried value) the bytes count once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxinspect.base.inspection import LivePeak, SpaceBytes
from jaxinspect.xla.bufferassign import (
    Allocation,
    LiveRanges,
    PlacedValue,
    parse_buffer_assignment,
    parse_live_ranges,
    parse_usage_totals,
    place_values,
)


def live_peak(buffer_assignment: str, live_range: str, usage_report: str | None = None) -> LivePeak:
    """The peak alone, from XLA's buffer assignment and live ranges (no module text).

    The same figure as ``analyse_dump_texts(...).peak_bytes``, computed the same way, for
    ``stages`` and ``cost``, which show the peak without its buffers and timeline.

    Raises:
        ValueError: A text does not parse.
    """
    steps = schedule_steps(buffer_assignment, live_range)
    allocations, per_step, peak_step = steps.allocations, steps.per_step, steps.peak_step
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
        other_spaces=tuple(
            SpaceBytes(name, size) for name, size in sorted(others.items(), key=lambda i: -i[1])
        ),
    )


@dataclass(frozen=True, slots=True)
class ScheduleSteps:
    """The dumps read and the device's live bytes counted at every step of the schedule."""

    allocations: tuple[Allocation, ...]
    live: LiveRanges
    #: Every live-ranged value with its allocation (all memory spaces), and those XLA assigns
    #: nowhere (``place_values``).
    placed: tuple[PlacedValue, ...]
    unplaced: tuple[tuple[str, str], ...]
    #: What ``device_steps`` gives.
    device: tuple[PlacedValue, ...]
    per_step: tuple[int, ...]
    peak_step: int


# The last count is kept: `memory` and the report count the steps for the peak of the run's
# stages report (``live_peak``), then for the buffers and the timeline, from the same dumps
# (placing the values and counting took 25 ms more at 96 transformer blocks).
@functools.lru_cache(maxsize=1)
def schedule_steps(buffer_assignment: str, live_range: str) -> ScheduleSteps:
    """Parse the buffer assignment and the live ranges, place the values and count the live
    bytes of the device's memory at each step; once per pair of texts.

    Raises:
        ValueError: A text does not parse.
    """
    allocations = parse_buffer_assignment(buffer_assignment)
    live = parse_live_ranges(live_range)
    placed, unplaced = place_values(allocations, live)
    device, per_step, peak_step = device_steps(placed, len(live.sequence))
    return ScheduleSteps(
        allocations, live, placed, unplaced, tuple(device), tuple(per_step), peak_step
    )


def device_steps(
    placed: Sequence[PlacedValue], steps: int
) -> tuple[list[PlacedValue], list[int], int]:
    """The values in the device's memory, its live bytes per step, and the peak step.

    Only color 0 counts: a TPU's on-chip spaces (vmem) are not what must fit in HBM.
    """
    device = [p for p in placed if p.allocation.color == 0]
    per_step = live_bytes(device, steps)
    if not per_step:
        raise ValueError("XLA's live-range dump lists an empty schedule")
    peak_step = max(range(len(per_step)), key=lambda t: (per_step[t], -t))
    return device, per_step, peak_step


def live_bytes(placed: Sequence[PlacedValue], steps: int) -> list[int]:
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


def space_name(color: int, spaces: dict[int, tuple[str, int]]) -> str:
    """``vmem (color 1)``: a memory space by its name in the usage report, else its color."""
    return f"{spaces[color][0]} (color {color})" if color in spaces else f"color {color}"


def jax_peak_relation(
    jax_peak: int | None,
    peak: int,
    lasting: int,
    temp: int,
    elsewhere: Sequence[tuple[str, int]] = (),
) -> tuple[bool, str]:
    """Whether JAX's ``peak_memory_in_bytes`` is the peak, and a note saying what it counts.

    One rule for every note: it names what XLA's figure counts and says on which side of the
    peak it falls, so it never contradicts the two numbers beside it.

    Args:
        jax_peak: ``memory_analysis().peak_memory_in_bytes``.
        peak: The buffer assignment's peak (the device's memory, color 0).
        lasting: Parameters + outputs (not aliased) + constants, in the device's memory.
        temp: The device's temp allocations.
        elsewhere: ``(memory space, bytes allocated)`` of the other memory colors.
    """
    if jax_peak is None:
        return False, "the backend reports no peak"
    if jax_peak == peak:
        return True, "the same figure as the peak"
    diff = jax_peak - peak
    side = f"{abs(diff):,} B {'above' if diff > 0 else 'below'} the peak"
    spaces = _spaces_adding_up(diff, elsewhere)
    if spaces:
        names = ", ".join(f"{size:,} B in {name}" for name, size in spaces)
        return False, (
            f"{side}: the peak plus other memory spaces ({names}): a TPU core's "
            "on-chip memory, not the HBM the peak counts"
        )
    if jax_peak == lasting:
        why = "temp values are live at the peak" if diff < 0 else "not all live at one step"
        return False, (
            f"{side}: parameters + outputs + constants ({lasting:,} B), without the temp "
            f"allocation ({temp:,} B); {why}"
        )
    return False, f"{side}; it matches no sum of XLA's allocations that jaxinspect knows"


def _spaces_adding_up(
    diff: int, elsewhere: Sequence[tuple[str, int]]
) -> tuple[tuple[str, int], ...]:
    """The fewest other memory spaces whose allocations add up to ``diff`` (none: ``()``).

    A TPU's ``peak_memory_in_bytes`` adds vmem (color 1) but not every small scratch space.
    """
    from itertools import combinations

    spaces = [s for s in elsewhere if s[1] > 0][:8]  # a handful of spaces at most
    for count in range(1, len(spaces) + 1):
        for chosen in combinations(spaces, count):
            if sum(size for _, size in chosen) == diff:
                return chosen
    return ()
