"""The ``cost`` report as one JSON document (schema: ``jaxinspect/schemas/cost.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.cost.aggregate import CostGroup
from jaxinspect.cost.analysis import loop_aware_summary
from jaxinspect.cost.breakdown import LoopInfo, OpCost
from jaxinspect.cost.roofline import RooflinePoint
from jaxinspect.cost.xlacost import XlaCost
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.renderers.jsondoc import source_to_dict as _source
from jaxinspect.renderers.stages.jsondoc import run_keys, stages_to_dict
from jaxinspect.reports.cost import CostReport

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "cost.schema.json"
SCHEMA_VERSION = 2


def render_cost_json(report: CostReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(cost_to_dict(report))


#: What every roofline figure is; repeated in the JSON so it travels with the numbers.
ROOFLINE_NOTE = (
    "A model, not a measurement: each op is assumed to run at the device's peak FLOP/s or "
    "peak bandwidth, whichever binds; times are lower bounds."
)


#: Why an op has no figures when no flag says it (XLA returned none for it).
_UNKNOWN = "XLA gives no cost for this instruction"

#: JAX's own figures when ``cost_analysis()`` failed (the reason is under ``unavailable``).
_NO_JAX_COST: dict[str, Any] = {
    "flops": None,
    "transcendentals": None,
    "bytes_accessed": None,
    "arithmetic_intensity": None,
    "optimal_seconds": None,
    "xla_raw": {},
}


def cost_to_dict(report: CostReport) -> dict[str, Any]:
    """The document: run facts, ``cost.*``, ``memory.*`` and the reasons for nulls."""
    base = stages_to_dict(report.source)
    # The program's collectives travel with its cost.
    doc = run_keys(base, extra=("collectives", "communication_bytes"))
    jax_cost = {k: v for k, v in (base["cost"] or _NO_JAX_COST).items() if k in _NO_JAX_COST}
    doc.update(
        schema_version=SCHEMA_VERSION,
        command="cost",
        cost={**jax_cost, **_cost_sections(report)},
        memory=_memory(report, base["memory"]),
        unavailable={**base["unavailable"], **dict(report.unavailable)},
    )
    return doc


def _cost_sections(report: CostReport) -> dict[str, Any]:
    program = report.program
    total = program.loop_aware
    summary = loop_aware_summary(program)
    why = {f.instruction: f.detail for f in program.flags}
    return {
        "loop_aware": {
            **(_xla(total) or {}),
            "lower_bound": summary.lower_bound,
            "not_counted": list(summary.not_counted),
        },
        "assumed_trips": [
            {"loop": a.loop, "trips": a.trips, "assumption": a.assumption}
            for a in report.assumed_trips
        ],
        "proved": _xla(report.proved),
        "reconciliation": _reconciliation(report),
        "counted_once": _xla(program.counted_once),
        "ops": [
            {
                **_op(op, p, total, _measured_op(report, i, op)),
                "not_counted_reason": None if op.total is not None else why.get(op.name, _UNKNOWN),
            }
            for i, (op, p) in enumerate(zip(program.ops, report.op_roofline, strict=True))
        ],
        "measured": _measured(report),
        "sort": report.sort,
        "partitions": program.partitions,
        "by_line": [_group(g) for g in report.by_line],
        "by_function": [_group(g) for g in report.by_function],
        "by_scope": [_group(g) for g in report.by_scope],
        "loops": [_loop(loop) for loop in program.loops],
        "not_counted": [
            {
                "instruction": f.instruction,
                "computation": f.computation,
                "kind": f.kind,
                "reason": f.reason,
                "detail": f.detail,
            }
            for f in program.flags
        ],
        "not_counted_groups": [
            {
                "kind": g.kind,
                "reason": g.reason,
                "count": g.count,
                "lower_bound": g.lower_bound,
                "instructions": list(g.instructions),
            }
            for g in report.flag_groups
        ],
        "user_code": _user_code(report),
        "fusions": {"by_kind": dict(report.fusion_kinds), "count": len(report.fusions)},
        "data_movement": [op.name for op in report.data_movement],
        "custom_calls": [
            {"instruction": op.name, "target": op.custom_call_target} for op in report.custom_calls
        ],
        "roofline": _roofline(report),
    }


def _memory(report: CostReport, memory: dict[str, Any] | None) -> dict[str, Any] | None:
    if memory is None:
        return None
    peak, fit = report.peak, report.fit
    memory["peak_estimate"] = (
        None
        if peak is None
        else {"bytes": peak.bytes, "source": peak.source, "reason": peak.reason}
    )
    memory["fit"] = (
        None
        if fit is None
        else {
            "capacity_bytes": fit.capacity_bytes,
            "needed_bytes": fit.needed_bytes,
            "fraction": fit.fraction,
            "fits": fit.fits,
        }
    )
    return memory


def _xla(cost: XlaCost | None) -> dict[str, float] | None:
    if cost is None:
        return None
    return {
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "bytes_accessed": cost.bytes_accessed,
    }


def _measured(report: CostReport) -> dict[str, Any] | None:
    measured = report.measured
    if measured is None:
        return None
    return {
        "program_runs": measured.program_runs,
        "device": measured.device,
        "call_median_s": measured.call_median_s,
        "profiled_call_median_s": measured.profiled_call_median_s,
        "total_s": measured.total_s,
        "coverage": measured.coverage,
        "scale": measured.scale,
        "scaled_coverage": None
        if measured.scale is None or measured.coverage is None
        else measured.coverage * measured.scale,
        "rank_agreement": dict(measured.agreement),
        # The roofline's order depends on the profile (its ridge point): say which.
        "roofline_profile": None if report.profile is None else report.profile.name,
    }


def _measured_op(report: CostReport, index: int, op: OpCost) -> dict[str, Any]:
    """``measured_s`` (null unless --measure timed it), its share, and achieved rates."""
    measured = report.measured
    seconds = None if measured is None else measured.op_seconds[index]
    cost = op.total
    total = None if measured is None else measured.total_s
    scale = None if measured is None else measured.scale
    return {
        "measured_s": seconds,
        "measured_scaled_s": None if seconds is None or scale is None else seconds * scale,
        "measured_share": None if not seconds or not total else seconds / total,
        "achieved_flops_per_s": None if not seconds or cost is None else cost.flops / seconds,
        "achieved_bytes_per_s": None
        if not seconds or cost is None
        else cost.bytes_accessed / seconds,
    }


def _op(
    op: OpCost, point: RooflinePoint | None, total: XlaCost, measured: dict[str, Any]
) -> dict[str, Any]:
    cost = op.total
    return {
        **measured,
        "name": op.name,
        "computation": op.computation,
        "opcode": op.opcode,
        "fusion_kind": op.fusion_kind,
        "fused_ops": dict(op.fused_ops),
        "custom_call_target": op.custom_call_target,
        "shape": op.shape,
        "dtype": op.dtype,
        "runs": op.runs,
        "counted": cost is not None,
        "per_run": _xla(op.per_run),
        **(_xla(cost) or {"flops": None, "transcendentals": None, "bytes_accessed": None}),
        "flops_share": _share(cost.flops if cost else None, total.flops),
        "bytes_share": _share(cost.bytes_accessed if cost else None, total.bytes_accessed),
        "input_bytes": op.input_bytes,
        "output_bytes": op.output_bytes,
        "op_name": op.op_name,
        "source": _source(op.source),
        "created_by_xla": op.created_by_xla,
        "source_from": op.source_from,
        "roofline": _point(point),
    }


def _user_code(report: CostReport) -> dict[str, Any]:
    user = report.user_code
    return {
        "roots": [] if user is None else list(user.roots),
        "chosen": user is not None and user.chosen,
    }


def _share(part: float | None, whole: float) -> float | None:
    return None if part is None or not whole else part / whole


def _group(group: CostGroup) -> dict[str, Any]:
    return {
        "key": group.key,
        "file": group.file,
        "line": group.line,
        "function": group.function,
        "flops": group.flops,
        "transcendentals": group.transcendentals,
        "bytes_accessed": group.bytes_accessed,
        "ops": group.ops,
        "opcodes": dict(group.opcodes),
        "measured_s": group.measured_s,
    }


def _loop(loop: LoopInfo) -> dict[str, Any]:
    return {
        "instruction": loop.name,
        "computation": loop.computation,
        "body": loop.body,
        "condition": loop.condition,
        "trip_count": loop.trip_count,
        "runs": loop.runs,
        "source": _source(loop.source),
        "assumed_trips": loop.assumed_trips,
        "per_trip": _xla(loop.per_trip),
        "per_trip_lower_bound": loop.per_trip_lower_bound,
    }


def _reconciliation(report: CostReport) -> dict[str, Any] | None:
    found = report.program.reconciliation
    if found is None:
        return None
    return {
        "cost_analysis": _xla(found.backend),
        "generic_module": _xla(found.generic_module),
        "backend_model": _xla(found.backend_model),
        "one_by_one": _xla(found.one_by_one),
        "counted_once": _xla(found.counted_once),
        "not_counted": found.not_counted,
        "not_counted_io_bytes": found.not_counted_io_bytes,
    }


def _point(point: RooflinePoint | None) -> dict[str, Any] | None:
    if point is None:
        return None
    return {
        "arithmetic_intensity": point.intensity,
        "peak_flops": point.peak_flops,
        "peak_dtype": point.peak_dtype,
        "ridge_intensity": point.ridge,
        "bound": point.bound,
        "time_lower_bound_s": point.time_s,
    }


def _roofline(report: CostReport) -> dict[str, Any] | None:
    profile = report.profile
    if profile is None:
        return None
    return {
        "note": ROOFLINE_NOTE,
        "device": {
            "name": profile.name,
            "description": profile.description,
            "peak_flops": dict(profile.peak_flops),
            "bandwidth_bytes_s": profile.bandwidth_bytes_s,
            "memory_bytes": profile.memory_bytes,
            "source": profile.source,
        },
        "program": _point(report.program_roofline),
        "sum_of_op_lower_bounds_s": report.roofline_sum_s,
    }
