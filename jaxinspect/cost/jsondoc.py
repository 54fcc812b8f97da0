"""The ``cost`` report as one JSON document (schema: ``jaxinspect/schemas/cost.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.cost.report import CostReport
from jaxinspect.jsonfields import encode
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import run_keys, stages_to_dict
from jaxinspect.xla.ownership import UserCode

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
    return {
        "loop_aware": encode(report.loop_aware),
        "assumed_trips": encode(report.assumed_trips),
        "proved": encode(report.proved),
        "reconciliation": encode(program.reconciliation),
        "counted_once": encode(program.counted_once),
        "ops": encode(report.rows),
        "measured": encode(report.measured),
        "sort": report.sort,
        "partitions": program.partitions,
        "by_line": encode(report.by_line),
        "by_function": encode(report.by_function),
        "by_scope": encode(report.by_scope),
        "loops": encode(program.loops),
        "not_counted": encode(program.flags),
        "not_counted_groups": encode(report.flag_groups),
        "user_code": encode(report.user_code or UserCode(())),
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
    memory["peak_estimate"] = encode(report.peak)
    memory["fit"] = encode(report.fit)
    return memory


def _roofline(report: CostReport) -> dict[str, Any] | None:
    if report.profile is None:
        return None
    return {
        "note": ROOFLINE_NOTE,
        "device": encode(report.profile),
        "program": encode(report.program_roofline),
        "sum_of_op_lower_bounds_s": report.roofline_sum_s,
    }
