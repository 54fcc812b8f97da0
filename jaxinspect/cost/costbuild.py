"""Build the ``cost`` report: sort, group and place ops on the roofline, join measured times.

The computing half of ``jaxinspect cost``; the report (``cost/report.py``) is data only and its
renderers format it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from jaxinspect.base.inspection import InspectionReport
from jaxinspect.cost.loopcost import TripAssumption, apply_assumptions, with_per_trip
from jaxinspect.cost.rankcorr import spearman
from jaxinspect.cost.report import CostReport, MeasuredCost, OpRow
from jaxinspect.pipeline.opcost import loop_aware_summary
from jaxinspect.stages.memoryfit import MemoryFit, PeakEstimate, estimate_peak, fit_memory
from jaxinspect.xla.aggregate import fusion_kinds, group_flags, group_ops
from jaxinspect.xla.breakdown import OpCost, ProgramCost
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.profiles import DeviceProfile
from jaxinspect.xla.roofline import RooflinePoint, roofline_point
from jaxinspect.xla.xlacost import XlaCost

if TYPE_CHECKING:
    from jaxinspect.cost.optimes import OpTimes

#: Why an op has no figures when no flag says it (XLA returned none for it).
_UNKNOWN = "XLA gives no cost for this instruction"


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
    measured_cost = None if op_times is None else _measured(ops, op_points, op_times, profile)
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
        measured=measured_cost,
        loop_aware=loop_aware_summary(program),
        rows=_rows(program, op_points, measured_cost),
        assumed_trips=assumed,
        proved=proved if assumed else None,
    )


def _rows(
    program: ProgramCost, points: tuple[RooflinePoint | None, ...], measured: MeasuredCost | None
) -> tuple[OpRow, ...]:
    total = program.loop_aware
    why = {f.instruction: f.detail for f in program.flags}
    return tuple(
        _row(op, point, total, why, measured, i)
        for i, (op, point) in enumerate(zip(program.ops, points, strict=True))
    )


def _row(
    op: OpCost,
    point: RooflinePoint | None,
    total: XlaCost,
    why: dict[str, str],
    measured: MeasuredCost | None,
    index: int,
) -> OpRow:
    cost = op.total
    seconds = None if measured is None else measured.op_seconds[index]
    whole = None if measured is None else measured.total_s
    scale = None if measured is None else measured.scale
    return OpRow(
        op=op,
        counted=cost is not None,
        flops=None if cost is None else cost.flops,
        transcendentals=None if cost is None else cost.transcendentals,
        bytes_accessed=None if cost is None else cost.bytes_accessed,
        flops_share=_share(None if cost is None else cost.flops, total.flops),
        bytes_share=_share(None if cost is None else cost.bytes_accessed, total.bytes_accessed),
        not_counted_reason=None if cost is not None else why.get(op.name, _UNKNOWN),
        roofline=point,
        measured_s=seconds,
        measured_scaled_s=None if seconds is None or scale is None else seconds * scale,
        measured_share=None if not seconds or not whole else seconds / whole,
        achieved_flops_per_s=None if not seconds or cost is None else cost.flops / seconds,
        achieved_bytes_per_s=None if not seconds or cost is None else cost.bytes_accessed / seconds,
    )


def _share(part: float | None, whole: float) -> float | None:
    return None if part is None or not whole else part / whole


def _measured(
    ops: tuple[OpCost, ...],
    points: tuple[RooflinePoint | None, ...],
    times: OpTimes,
    profile: DeviceProfile | None,
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
        # The roofline's order depends on the profile (its ridge point): say which.
        roofline_profile=None if profile is None else profile.name,
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
