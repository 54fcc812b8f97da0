"""The ``cost`` report: JAX's totals, per-op rows, groupings, roofline and memory, frozen."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from jaxinspect.cost.aggregate import (
    CostGroup,
    FlagGroup,
    fusion_kinds,
    group_flags,
    group_ops,
)
from jaxinspect.cost.breakdown import OpCost, ProgramCost
from jaxinspect.cost.loopcost import AssumedTrips, TripAssumption, apply_assumptions, with_per_trip
from jaxinspect.cost.memoryfit import MemoryFit, PeakEstimate, estimate_peak, fit_memory
from jaxinspect.cost.ownership import UserCode
from jaxinspect.cost.profiles import DeviceProfile
from jaxinspect.cost.rankcorr import spearman
from jaxinspect.cost.roofline import RooflinePoint, roofline_point
from jaxinspect.cost.xlacost import XlaCost
from jaxinspect.reports.stages import CostSummary, InspectionReport, MemorySummary

if TYPE_CHECKING:
    from jaxinspect.cost.profiled import OpTimes

#: ``--sort`` keys: how per-op rows are ordered (``measured`` needs ``--measure``).
SORT_KEYS = ("flops", "bytes", "transcendentals", "time", "measured")
#: Opcodes listed apart because they move data without computing.
DATA_MOVEMENT = frozenset({"copy", "copy-start", "copy-done", "transpose"})


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

    op_seconds: tuple[float | None, ...]
    program_runs: int
    device: str
    call_median_s: float
    profiled_call_median_s: float
    agreement: tuple[tuple[str, float | None], ...]

    @property
    def total_s(self) -> float:
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


def build_cost_report(
    source: InspectionReport,
    program: ProgramCost,
    sort: str,
    profile: DeviceProfile | None,
    user_code: UserCode | None = None,
    op_times: OpTimes | None = None,
    assume: tuple[TripAssumption, ...] = (),
) -> CostReport:
    """Apply the trip counts in ``assume``, sort, group and place ``program`` on
    ``profile``'s roofline; join ``op_times``.

    Raises:
        UsageError: An assumption names no loop of the program, or one XLA counted.
    """
    proved = program.loop_aware
    program, assumed = apply_assumptions(program, assume)
    measured = {} if op_times is None else op_times.seconds
    ops = tuple(sorted(program.ops, key=lambda op: _sort_value(op, sort, profile, measured)))
    program = with_per_trip(replace(program, ops=ops))
    op_points = tuple(_op_point(op, profile) for op in ops)
    peak = None if source.memory is None else estimate_peak(source.memory)
    fit = None
    if peak is not None and profile is not None and profile.memory_bytes is not None:
        fit = fit_memory(peak, profile.memory_bytes)
    return CostReport(
        source=source,
        program=program,
        sort=sort,
        by_line=group_ops(ops, "line", None if op_times is None else measured),
        by_function=group_ops(ops, "function", None if op_times is None else measured),
        by_scope=group_ops(ops, "scope", None if op_times is None else measured),
        fusion_kinds=fusion_kinds(ops),
        profile=profile,
        op_roofline=op_points,
        program_roofline=_program_point(program, profile),
        roofline_sum_s=None
        if profile is None
        else sum(p.time_s for p in op_points if p is not None),
        peak=peak,
        fit=fit,
        unavailable=_reasons(source, profile, peak, fit),
        user_code=user_code,
        flag_groups=group_flags(program.flags),
        measured=None if op_times is None else _measured(ops, op_points, op_times),
        assumed_trips=assumed,
        proved=proved if assumed else None,
    )


def _measured(
    ops: tuple[OpCost, ...], points: tuple[RooflinePoint | None, ...], times: OpTimes
) -> MeasuredCost:
    seconds = tuple(times.seconds.get(op.name) for op in ops)
    measured = [(op, s, p) for op, s, p in zip(ops, seconds, points, strict=True) if s]
    static = {
        "flops": [(s, op.total.flops if op.total else None) for op, s, _ in measured],
        "bytes": [(s, op.total.bytes_accessed if op.total else None) for op, s, _ in measured],
        "roofline": [(s, p.time_s if p is not None else None) for _, s, p in measured],
    }
    agreement = []
    for name, pairs in static.items():
        known = [(s, v) for s, v in pairs if v is not None]
        rho = spearman([v for _, v in known], [s for s, _ in known]) if known else None
        agreement.append((name, rho))
    return MeasuredCost(
        op_seconds=seconds,
        program_runs=times.program_runs,
        device=times.device,
        call_median_s=times.call_median_s,
        profiled_call_median_s=times.profiled_call_median_s,
        agreement=tuple(agreement),
    )


def _reasons(
    source: InspectionReport,
    profile: DeviceProfile | None,
    peak: PeakEstimate | None,
    fit: MemoryFit | None,
) -> tuple[tuple[str, str], ...]:
    out = []
    if profile is None:
        out.append(("cost.roofline", "no --device, --peak-flops or --peak-bandwidth given"))
    if source.memory is not None and peak is None:
        out.append(("memory.peak_estimate", "the backend reports neither a peak nor all sizes"))
    if source.memory is not None and fit is None:
        why = "no --device profile with a memory capacity"
        out.append(("memory.fit", why if peak is not None else "no peak estimate"))
    return tuple(out)


def _op_point(op: OpCost, profile: DeviceProfile | None) -> RooflinePoint | None:
    total = op.total
    if profile is None or total is None:
        return None
    return roofline_point(total.flops, total.bytes_accessed, op.dtype, profile)


def _program_point(program: ProgramCost, profile: DeviceProfile | None) -> RooflinePoint | None:
    if profile is None:
        return None
    counted = [op for op in program.ops if op.total is not None]
    # The element type doing most of the FLOPs picks the ceiling the program is drawn under.
    heaviest = max(counted, key=lambda op: op.total.flops if op.total else 0.0, default=None)
    total = program.loop_aware
    dtype = None if heaviest is None else heaviest.dtype
    point = roofline_point(total.flops, total.bytes_accessed, dtype, profile)
    # Each op's FLOPs at its own element type's peak, as the per-op bounds take them: the
    # program's compute time is then their sum, and the sum of per-op bounds (each the larger
    # of its compute and memory time) can never come out below the program's bound. With the
    # heaviest type's peak alone, bf16 ops beside an f32 one made it do so.
    compute_s = sum(
        op.total.flops / profile.peak_for(op.dtype)[0] for op in counted if op.total is not None
    )
    memory_s = total.bytes_accessed / profile.bandwidth_bytes_s
    bound = point.bound if point.bound == "none" else _bound(compute_s, memory_s)
    return replace(point, time_s=max(compute_s, memory_s), bound=bound)


def _bound(compute_s: float, memory_s: float) -> str:
    return "compute" if compute_s >= memory_s else "memory"


def _sort_value(
    op: OpCost, sort: str, profile: DeviceProfile | None, measured: dict[str, float]
) -> tuple[float, ...]:
    if sort == "measured":
        return (0, -measured.get(op.name, -1.0), 0.0)
    total = op.total
    if total is None:
        # Uncounted ops last: an unknown figure is no reason to head a list of the largest
        # (five ConcatBitcast custom calls headed lm_step's on a TPU, its matmuls sixth).
        return (1, 0.0, 0.0)
    if sort == "time" and profile is not None:
        point = roofline_point(total.flops, total.bytes_accessed, op.dtype, profile)
        return (0, -point.time_s, -total.flops)
    primary = {
        "bytes": total.bytes_accessed,
        "transcendentals": total.transcendentals,
    }.get(sort, total.flops)
    return (0, -primary, -total.bytes_accessed)
