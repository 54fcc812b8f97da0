"""Parse XLA's buffer-assignment, live-range and memory-usage dumps of one compiled module.

XLA writes them beside the optimized module when a compilation dumps
(``*-buffer-assignment.txt``, ``*-live-range.txt``, ``*-memory-usage-report.txt``). The
buffer assignment says where every logical value (an HLO instruction's result, or one element
of a tuple result) lives: which allocation, at which offset, with how many bytes. The live
range says when: each value's first and last step in the module's flattened schedule (called
computations inlined before their caller).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from jaxinspect.jsonfields import Count, js

# BufferAllocation::ToString: "allocation 3: size 5120, output shape is |f32[128,10]|, ...:"
_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):$")
_PARAMETER = re.compile(r", parameter (\d+), shape \|(.*?)\| at ShapeIndex (\{[\d,]*\})")
_OUTPUT = re.compile(r", output shape is \|(.*?)\|")
_COLOR = re.compile(r", color (\d+)")
# HloValue::ToShortString in an allocation: " value: <19 ynn_fusion.1 @0> (size=…,offset=…): f32[…]"
# (the shape index is printed for tuple-shaped instructions only; "@N" is the memory color).
_VALUE = re.compile(
    r"^ value: <(\d+) ([^\s{>]+)(\{[\d,]*\})?( \(phi\))?(?: @(\d+))?> "
    r"\(size=(\d+),offset=(\d+)\): (.*)$"
)
_SEQUENCE_ITEM = re.compile(r"^\s+(\d+):(\S+)$")
_LIVE_RANGE = re.compile(r"^\s+(\S+?)(\{[\d,]*\}):(\d+)-(\d+)$")
_PEAK_HEADER = re.compile(r"^\s+Live ranges at (\d+) \(peak\):$")
_PEAK_ITEM = re.compile(r"^\s+(\S+?)(\{[\d,]*\}): (\d+) bytes \(cumulative: (\d+) bytes\)$")
_TOTAL = re.compile(r"^Memory Space: (\S+) \(color=(\d+)\)\s*\nTotal bytes: (\d+)", re.M)

#: Allocation kinds, as jaxinspect names them (one per allocation).
KINDS = ("parameter", "output", "temp", "constant", "thread-local")


@dataclass(frozen=True, slots=True)
class AssignedValue:
    """One logical value placed in an allocation.

    Attributes:
        id: XLA's value id (unique in the module).
        instruction: The defining instruction's name.
        index: The tuple index (``{}`` for an array result, ``{1}`` for a tuple's element).
        phi: A loop-carried value merged at a while (XLA's "phi"): no instruction computes it.
        size: Bytes it occupies in the allocation.
        offset: Where it starts in the allocation.
        shape: Its shape with layout, as XLA prints it.
    """

    id: int = field(metadata=js(omit=True))
    instruction: str
    index: str
    phi: bool
    size: Count
    offset: Count
    shape: str

    @property
    def key(self) -> tuple[str, str]:
        """``(instruction, index)``: how the live-range dump names the value."""
        return self.instruction, self.index

    @property
    def label(self) -> str:
        """``name``, or ``name{1}`` for a tuple's element."""
        return self.instruction if self.index == "{}" else self.instruction + self.index


@dataclass(frozen=True, slots=True)
class Allocation:
    """One buffer allocation: a block of memory that values share at different times.

    Attributes:
        index: XLA's allocation number.
        size: Bytes.
        kind: ``parameter``, ``output``, ``temp``, ``constant`` or ``thread-local``.
        parameter: The entry parameter number of a parameter allocation.
        parameter_index: Its shape index within the parameter (``{}`` for an array).
        live_out: The allocation may hold the program's output (``maybe-live-out``); on a
            parameter, the output was placed in the (donated) input's buffer.
        color: XLA's memory color (0: the device's default memory).
        values: The values it holds, in XLA's order.
    """

    index: Count
    size: Count
    kind: str = field(metadata=js(schema={"enum": list(KINDS)}))
    parameter: Count | None
    parameter_index: str | None
    live_out: bool
    color: Count
    values: tuple[AssignedValue, ...]


@dataclass(frozen=True, slots=True)
class LiveRanges:
    """XLA's ``HloLiveRange``: the flattened schedule and each value's steps in it.

    Attributes:
        sequence: Instruction names by step (called computations' steps precede the caller).
        ranges: ``(instruction, index)`` -> ``(first, last)`` step, both inclusive.
        peak_step: The step XLA's dump calls the peak; ``None`` when it names none.
        peak_bytes: The bytes XLA's dump lists at that step (its last cumulative figure).
        peak_values: ``(instruction, index)`` of each value it lists there, largest first.
    """

    sequence: tuple[str, ...]
    ranges: dict[tuple[str, str], tuple[int, int]]
    peak_step: int | None
    peak_bytes: int | None
    peak_values: tuple[tuple[str, str], ...]


# The last dump parsed is kept (as ``hlotext.parse_module`` keeps its module): ``memory`` and
# the report read the peak for the stages summary and then again for the memory report, from
# the same dump of the run's one compilation. The results are not modified by any reader.
@functools.lru_cache(maxsize=1)
def parse_buffer_assignment(text: str) -> tuple[Allocation, ...]:
    """The allocations of a ``*-buffer-assignment.txt`` dump, in XLA's order.

    Raises:
        ValueError: The text has no allocation, or a value line comes before any allocation.
    """
    allocations: list[Allocation] = []
    header: re.Match[str] | None = None
    values: list[AssignedValue] = []
    for line in text.splitlines():
        if line.startswith("allocation "):
            if header is not None:
                allocations.append(_allocation(header, values))
            header, values = _ALLOCATION.match(line), []
            if header is None:
                raise ValueError(f"not an XLA allocation line: {line[:120]}")
            continue
        match = _VALUE.match(line)
        if match is None:
            continue  # the "BufferAssignment:" title, and later sections of some versions
        if header is None:
            raise ValueError(f"an XLA buffer value before any allocation: {line[:120]}")
        values.append(
            AssignedValue(
                id=int(match.group(1)),
                instruction=match.group(2),
                index=match.group(3) or "{}",
                phi=bool(match.group(4)),
                size=int(match.group(6)),
                offset=int(match.group(7)),
                shape=match.group(8).strip(),
            )
        )
    if header is not None:
        allocations.append(_allocation(header, values))
    if not allocations:
        raise ValueError("no allocation in XLA's buffer-assignment text")
    return tuple(allocations)


def _allocation(header: re.Match[str], values: list[AssignedValue]) -> Allocation:
    flags = header.group(3)
    parameter = _PARAMETER.search(flags)
    color = _COLOR.search(flags)
    live_out = ", maybe-live-out" in flags
    if parameter is not None:
        kind = "parameter"
    elif ", constant" in flags:
        kind = "constant"
    elif ", thread-local" in flags:
        kind = "thread-local"
    elif live_out or _OUTPUT.search(flags):
        kind = "output"
    else:  # "preallocated-temp", and plain temporaries of backends that print no flag
        kind = "temp"
    return Allocation(
        index=int(header.group(1)),
        size=int(header.group(2)),
        kind=kind,
        parameter=None if parameter is None else int(parameter.group(1)),
        parameter_index=None if parameter is None else parameter.group(3),
        live_out=live_out,
        color=0 if color is None else int(color.group(1)),
        values=tuple(values),
    )


@functools.lru_cache(maxsize=1)
def parse_live_ranges(text: str) -> LiveRanges:
    """XLA's ``*-live-range.txt``: schedule, live ranges and the peak it names.

    Raises:
        ValueError: The text has no ``InstructionSequence`` or no ``BufferLiveRange`` section.
    """
    section = ""
    sequence: dict[int, str] = {}
    ranges: dict[tuple[str, str], tuple[int, int]] = {}
    peak_step = peak_bytes = None
    peak_values: list[tuple[str, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in ("InstructionSequence:", "BufferLiveRange:"):
            section = stripped
            continue
        header = _PEAK_HEADER.match(line)
        if header is not None:
            section, peak_step = "peak", int(header.group(1))
            continue
        if section == "InstructionSequence:" and (item := _SEQUENCE_ITEM.match(line)):
            sequence[int(item.group(1))] = item.group(2)
        elif section == "BufferLiveRange:" and (live := _LIVE_RANGE.match(line)):
            ranges[(live.group(1), live.group(2))] = (int(live.group(3)), int(live.group(4)))
        elif section == "peak" and (item := _PEAK_ITEM.match(line)):
            peak_values.append((item.group(1), item.group(2)))
            peak_bytes = int(item.group(4))
        elif section == "peak" and stripped:
            section = ""  # the stack-trace breakdown that follows
    if not sequence or not ranges:
        raise ValueError("no instruction sequence or live ranges in XLA's live-range text")
    return LiveRanges(
        sequence=tuple(sequence[i] for i in sorted(sequence)),
        ranges=ranges,
        peak_step=peak_step,
        peak_bytes=peak_bytes if peak_values else (0 if peak_step is not None else None),
        peak_values=tuple(peak_values),
    )


def parse_usage_totals(text: str) -> dict[int, tuple[str, int]]:
    """Memory color -> (space name, ``Total bytes``) of a ``*-memory-usage-report.txt``.

    The device's default memory is color 0 (``default``); a TPU also has ``vmem``, ``smem``.
    """
    return {int(color): (name, int(total)) for name, color, total in _TOTAL.findall(text)}


@dataclass(frozen=True, slots=True)
class PlacedValue:
    """A value XLA ranges over the schedule, with the allocation that holds it."""

    value: AssignedValue
    allocation: Allocation
    first: int
    last: int

    @property
    def end(self) -> int:
        """Where its slice of the allocation ends."""
        return self.value.offset + self.value.size


def place_values(
    allocations: tuple[Allocation, ...], live: LiveRanges
) -> tuple[tuple[PlacedValue, ...], tuple[tuple[str, str], ...]]:
    """Each live-ranged value with its allocation; and the ranged values XLA assigns nowhere.

    Thread-local scratch lives inside one kernel and has no live range.
    """
    slot = {v.key: (v, a) for a in allocations if a.kind != "thread-local" for v in a.values}
    placed, unplaced = [], []
    for key, (first, last) in live.ranges.items():
        if key in slot:
            value, allocation = slot[key]
            placed.append(PlacedValue(value, allocation, first, last))
        else:
            unplaced.append(key)
    return tuple(placed), tuple(unplaced)
