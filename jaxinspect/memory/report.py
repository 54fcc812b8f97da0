"""The ``memory`` report: live bytes over the schedule, the buffers at the peak, frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.base.inspection import InspectionReport
from jaxinspect.jsonfields import Count, NonNegative, Positive, js
from jaxinspect.xla.bufferassign import KINDS, Allocation
from jaxinspect.xla.profiles import DeviceProfile
from jaxinspect.xla.sourcemap import SourceLocation


@dataclass(frozen=True, slots=True)
class PeakBuffer:
    """Bytes live at the peak: one logical value, or several that share the same bytes.

    Attributes:
        instruction: The instruction whose result it is (the latest, when results share).
        index: Its tuple index (``{}`` for an array result).
        computation: The computation holding the instruction.
        opcode: The instruction's opcode (``fusion``, ``parameter``, ``while``...).
        shape: Its shape, without layout (``f32[128,256]``).
        bytes: The bytes it occupies (counted once when results share them).
        kind: The allocation's kind: ``parameter``, ``output``, ``temp``, ``constant``.
        allocation: XLA's allocation number, and ``offset`` within it.
        live: Its first and last step in the schedule, inclusive.
        argument: For a parameter, the argument it is (``params['w1']``).
        op_name: JAX's ``op_name`` metadata (``jit(predict)/dot_general``).
        source: The line of your code that made it; ``None``: see ``created_by_xla``.
        created_by_xla: No source metadata at all: XLA made the instruction.
        shares: Other results live at the peak in the same bytes (an op writing in place
            over its operand), counted once with this one.
    """

    instruction: str
    index: str
    computation: str | None
    opcode: str | None
    shape: str
    bytes: Count
    kind: str = field(metadata=js(schema={"enum": list(KINDS)}))
    allocation: Count
    offset: Count
    live: tuple[int, int] = field(metadata=js(omit=True))
    argument: str | None
    op_name: str | None
    source: SourceLocation | None
    created_by_xla: bool
    shares: tuple[str, ...] = ()

    JSON_PROPERTIES: ClassVar[tuple[tuple[str, str], ...]] = (("live", "live_range"),)

    @property
    def live_range(self) -> LiveRange:
        """``live`` as the JSON writes it."""
        return LiveRange(*self.live)


@dataclass(frozen=True, slots=True)
class LiveRange:
    """The first and last step of the schedule where a buffer is live, inclusive."""

    first: Count
    last: Count


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """Live bytes at one instruction of the entry computation.

    Attributes:
        step: The instruction's step in XLA's flattened schedule.
        first_step: The first step accounted to it: a while loop, conditional or call owns
            the steps of the computations it runs (scheduled just before it).
        instruction: The entry instruction.
        opcode: Its opcode.
        live_bytes: The most bytes live at any of its steps (its operands and its result
            while it runs; inside a loop body, the body's values too).
        at: The instruction at the step of that maximum (itself, or one in a called
            computation).
    """

    step: Count
    first_step: Count
    instruction: str
    opcode: str | None
    live_bytes: Count
    at: str


@dataclass(frozen=True, slots=True)
class KindTotal:
    """Allocations of one kind in one memory space: how many and how many bytes."""

    kind: str = field(metadata=js(schema={"enum": list(KINDS)}))
    color: Count  # XLA's memory color: 0 is the device's default memory.
    count: Positive
    bytes: Count


#: ``XlaFigure.name``: XLA's figures that ``memory/figures.py`` sets beside jaxinspect's.
FIGURE_NAMES = (
    "live_range_peak",
    "peak_memory_in_bytes",
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "usage_report_total",
)


@dataclass(frozen=True, slots=True)
class XlaFigure:
    """One of XLA's own memory figures beside jaxinspect's, and how they relate.

    Attributes:
        name: A stable label (``live_range_peak``, ``peak_memory_in_bytes``, ``temp``...).
        bytes: XLA's figure; ``None`` when XLA gave none (``note`` says why).
        ours: The figure jaxinspect computes for the same thing from the buffer assignment.
        agrees: ``bytes == ours``.
        note: Why they differ, or what the figure counts.
    """

    name: str = field(metadata=js(schema={"enum": list(FIGURE_NAMES)}))
    bytes: Count | None = field(metadata=js("xla_bytes"))
    ours: Count | None = field(metadata=js("jaxinspect_bytes"))
    agrees: bool
    note: str


@dataclass(frozen=True, slots=True)
class MemoryPeak:
    """What XLA's buffer assignment says about memory over the schedule.

    Attributes:
        peak_bytes: The most bytes live at one step (values sharing bytes counted once).
        peak_step: The first step where that is reached.
        peak_instruction: The instruction at that step.
        peak_point: The entry instruction that owns that step.
        buffers: What is live at the peak, largest first; their bytes sum to ``peak_bytes``.
        timeline: Live bytes at each entry instruction, in schedule order.
        steps: Steps in XLA's flattened schedule.
        allocations: XLA's allocations, in its order.
        by_kind: Allocation totals per kind.
        allocated_bytes: All allocations in the device's memory (color 0) together.
        figures: XLA's own figures beside jaxinspect's, each with its relation.
        partitions: SPMD partitions: above 1, every figure is per device.
        peak_source: The line of your code that made ``peak_instruction``, if any.
    """

    peak_bytes: int
    peak_step: int
    peak_instruction: str
    peak_point: TimelinePoint
    buffers: tuple[PeakBuffer, ...]
    timeline: tuple[TimelinePoint, ...]
    steps: int
    allocations: tuple[Allocation, ...]
    by_kind: tuple[KindTotal, ...]
    allocated_bytes: int
    figures: tuple[XlaFigure, ...]
    partitions: int = 1
    peak_source: SourceLocation | None = None


@dataclass(frozen=True, slots=True)
class DeviceFit:
    """The peak against one device profile's memory capacity."""

    device: str
    capacity_bytes: Positive
    peak_bytes: Count
    fraction: NonNegative
    fits: bool


@dataclass(frozen=True, slots=True)
class MemoryReport:
    """Everything ``jaxinspect memory`` shows; renderers only read it.

    ``peak`` is ``None`` when the backend gave no buffer assignment (``unavailable`` says why);
    ``fit`` is ``None`` without ``--device`` or when the profile has no capacity.
    """

    source: InspectionReport  # target, backend, versions, memory_analysis()
    peak: MemoryPeak | None
    profile: DeviceProfile | None = None
    fit: DeviceFit | None = None
    #: (JSON path, reason) for the nulls this report adds to the stages report's.
    unavailable: tuple[tuple[str, str], ...] = ()

    def reason(self, path: str) -> str | None:
        """Why ``path`` is null, from this report or the stages report it extends."""
        own = dict(self.unavailable).get(path)
        return own if own is not None else self.source.reason(path)


def device_fit(device: str, capacity_bytes: int, peak_bytes: int) -> DeviceFit:
    """``peak_bytes`` against a device's memory capacity."""
    return DeviceFit(
        device=device,
        capacity_bytes=capacity_bytes,
        peak_bytes=peak_bytes,
        fraction=peak_bytes / capacity_bytes,
        fits=peak_bytes <= capacity_bytes,
    )
