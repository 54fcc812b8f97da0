"""The ``cost`` report: JAX's totals, per-op rows, groupings, roofline and memory, frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.base.inspection import CostSummary, InspectionReport, LoopAwareCost, MemorySummary
from jaxinspect.cost.loopcost import AssumedTrips
from jaxinspect.jsonfields import Positive, Seconds, js
from jaxinspect.stages.memoryfit import MemoryFit, PeakEstimate
from jaxinspect.xla.aggregate import CostGroup, FlagGroup
from jaxinspect.xla.breakdown import OpCost, ProgramCost
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.profiles import DeviceProfile
from jaxinspect.xla.roofline import RooflinePoint
from jaxinspect.xla.xlacost import XlaCost

#: ``--sort`` keys: how per-op rows are ordered (``measured`` needs ``--measure``).
SORT_KEYS = ("flops", "bytes", "transcendentals", "time", "measured")
#: Opcodes listed apart because they move data without computing.
DATA_MOVEMENT = frozenset({"copy", "copy-start", "copy-done", "transpose"})


#: The static rankings ``MeasuredCost.agreement`` compares the measured times with, each
#: always present (null where it cannot be computed).
RANKINGS = ("flops", "bytes", "roofline")
_RANKINGS = {
    "required": list(RANKINGS),
    "additionalProperties": False,
    "properties": {name: {"type": ["number", "null"]} for name in RANKINGS},
}


@dataclass(frozen=True, slots=True)
class MeasuredCost:
    """``cost --measure``: each op's time under the profiler, beside the static model.

    Attributes:
        op_seconds: Mean seconds per program run, aligned with ``program.ops`` (``None``: the
            trace has no event of that op, e.g. a tuple or a bitcast that runs no code).
        program_runs: Program executions the trace holds.
        device: The device ordinal whose events were read.
        call_median_s: The cached-call median outside the profiler.
        profiled_call_median_s: The same under the profiler.
        agreement: Spearman's rank correlation of the measured time with each static ranking
            (``flops``, ``bytes``, ``roofline``), over the ops measured; ``None`` where it
            cannot be computed (too few ops, or no device profile for the roofline).
    """

    op_seconds: tuple[float | None, ...] = field(metadata=js(omit=True))
    program_runs: Positive
    device: str
    call_median_s: Seconds
    profiled_call_median_s: Seconds
    agreement: tuple[tuple[str, float | None], ...] = field(
        metadata=js("rank_agreement", mapping=True, schema=_RANKINGS)
    )
    #: The device profile whose ridge point ordered the roofline ranking (``None``: none).
    roofline_profile: str | None = None

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("total_s", "coverage", "scale", "scaled_coverage")

    @property
    def total_s(self) -> Seconds:
        """Summed measured time of the ops, per program run."""
        return sum(s for s in self.op_seconds if s is not None)

    @property
    def coverage(self) -> float | None:
        """``total_s`` over the cached-call median (overlapping ops can push it above 1)."""
        return self.total_s / self.call_median_s if self.call_median_s > 0 else None

    @property
    def scale(self) -> float | None:
        """The unprofiled call over the profiled one: the profiler slows every op, and times
        multiplied by this estimate them without it (assuming an even slowdown)."""
        if self.profiled_call_median_s <= 0:
            return None
        return self.call_median_s / self.profiled_call_median_s

    @property
    def scaled_coverage(self) -> float | None:
        """``coverage`` with the ops' times scaled to the unprofiled run."""
        coverage, scale = self.coverage, self.scale
        return None if scale is None or coverage is None else coverage * scale


@dataclass(frozen=True, slots=True)
class OpRow:
    """One op of the ``cost`` document: XLA's figures for it and what jaxinspect adds.

    ``flops``, ``transcendentals`` and ``bytes_accessed`` are the loop-aware totals (per run x
    runs), ``None`` where XLA does not count the op (``not_counted_reason`` says why); the
    shares are of the program's loop-aware totals; the ``measured_*`` and ``achieved_*``
    figures need ``--measure`` and a time for the op.
    """

    op: OpCost = field(metadata=js(flatten=True))
    #: False when XLA has no cost for it (custom calls): flops and bytes are then null, and
    #: the op sorts after every counted one.
    counted: bool
    flops: float | None  # per_run.flops x runs.
    transcendentals: float | None
    bytes_accessed: float | None
    flops_share: float | None  # Fraction of cost.loop_aware.flops.
    bytes_share: float | None
    #: Why counted is false (XLA's words where it gave some, e.g. "target 'ConcatBitcast':
    #: XLA has no cost model for it"); null when counted.
    not_counted_reason: str | None
    roofline: RooflinePoint | None
    #: ``cost --measure``: mean seconds per program run under JAX's profiler (every loop trip
    #: included), on device ``measured.device``; null without ``--measure`` or when the trace
    #: has no event of this op (tuples, bitcasts).
    measured_s: Seconds | None = None
    #: measured_s x measured.scale: the time without the profiler's slowdown, estimated
    #: (labelled jaxinspect's correction; measured_s is what the trace says).
    measured_scaled_s: Seconds | None = None
    measured_share: float | None = None  # measured_s / measured.total_s.
    achieved_flops_per_s: float | None = None  # flops / measured_s.
    achieved_bytes_per_s: float | None = None  # bytes_accessed / measured_s.


@dataclass(frozen=True, slots=True)
class CostReport:
    """Everything ``jaxinspect cost`` shows; renderers only read it."""

    source: InspectionReport  # target, backend, versions, JAX's cost and memory
    program: ProgramCost  # ops in ``sort`` order
    sort: str
    by_line: tuple[CostGroup, ...]
    by_function: tuple[CostGroup, ...]
    by_scope: tuple[CostGroup, ...]
    fusion_kinds: tuple[tuple[str, int], ...]
    profile: DeviceProfile | None
    op_roofline: tuple[RooflinePoint | None, ...]  # aligned with ``program.ops``
    program_roofline: RooflinePoint | None
    roofline_sum_s: float | None  # sum of per-op lower bounds: a tighter lower bound
    peak: PeakEstimate | None
    fit: MemoryFit | None
    #: (JSON path, reason) for the nulls this report adds to the stages report's.
    unavailable: tuple[tuple[str, str], ...] = ()
    #: Whose frames were the user's when ops were put on source lines.
    user_code: UserCode | None = None
    #: ``program.flags`` grouped by kind and reason.
    flag_groups: tuple[FlagGroup, ...] = ()
    #: Measured time per op (``--measure``); ``None`` when not measured (reason in unavailable).
    measured: MeasuredCost | None = None
    #: The program's loop-aware totals (``program.loop_aware``, with what they leave out).
    loop_aware: LoopAwareCost | None = None
    #: One row per op of ``program.ops``, in order, as the JSON document writes them.
    rows: tuple[OpRow, ...] = ()
    #: ``--assume-trips``: the loops counted with an assumed trip count (``program`` is then
    #: an estimate, its ops' runs and every share taken of the assumed total).
    assumed_trips: tuple[AssumedTrips, ...] = ()
    #: The loop-aware totals without the assumptions (a lower bound); ``None`` without any.
    proved: XlaCost | None = None

    @property
    def unknown_loops(self) -> tuple[str, ...]:
        """Loops still counted once for want of a trip count: shares understate them."""
        return tuple(loop.name for loop in self.program.loops if loop.trips is None)

    @property
    def xla(self) -> CostSummary | None:
        """JAX's own ``cost_analysis()`` figures (with the loop-aware totals beside them)."""
        return self.source.cost

    @property
    def memory(self) -> MemorySummary | None:
        """``memory_analysis()`` as the stages report has it."""
        return self.source.memory

    @property
    def costly_ops(self) -> tuple[OpCost, ...]:
        """Ops with any cost, or not counted: the rows worth a table (zero-cost ones dropped)."""
        return tuple(
            op
            for op in self.program.ops
            if op.total is None
            or op.total.flops
            or op.total.bytes_accessed
            or op.total.transcendentals
        )

    @property
    def fusions(self) -> tuple[OpCost, ...]:
        """Fusion instructions, in row order."""
        return tuple(op for op in self.program.ops if op.fusion_kind is not None)

    @property
    def data_movement(self) -> tuple[OpCost, ...]:
        """Copies and transposes, in row order."""
        return tuple(op for op in self.program.ops if op.opcode in DATA_MOVEMENT)

    @property
    def custom_calls(self) -> tuple[OpCost, ...]:
        """Custom calls (LAPACK, callbacks...), which XLA does not cost."""
        return tuple(op for op in self.program.ops if op.opcode == "custom-call")
