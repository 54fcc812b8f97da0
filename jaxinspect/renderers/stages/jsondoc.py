"""The ``stages`` report as one JSON document (schema: ``schemas/stages.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.renderers.collectives import collectives_to_list
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.reports.sections import IR_STAGES
from jaxinspect.reports.stages import (
    ArgInfo,
    CostSummary,
    InputOrigins,
    InspectionReport,
    LoopAwareCost,
    MemorySummary,
    OutputInfo,
    Timings,
)

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "stages.schema.json"
SCHEMA_VERSION = 2


def render_json(report: InspectionReport) -> str:
    """Indented JSON with sorted keys, so two runs of the same program diff cleanly."""
    return json_text(stages_to_dict(report))


#: Top-level keys that say what ran where: every report of a run (cost, memory, passes) starts
#: with them, as the stages report has them.
RUN_KEYS = (
    "target",
    "function",
    "composition",
    "backend",
    "devices",
    "mesh",
    "jax_version",
    "jaxlib_version",
    "x64",
    "args",
)


def run_keys(stages: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """``RUN_KEYS`` (and ``extra``) of a stages document, for another report of the same run."""
    return {k: stages[k] for k in (*RUN_KEYS, *extra) if k in stages}


def stages_to_dict(report: InspectionReport) -> dict[str, Any]:
    """The report as the JSON document described by ``schemas/stages.schema.json``."""
    stages: dict[str, Any] = {}
    for name in IR_STAGES:
        stage = report.stage(name)
        stages[name] = (
            None
            if stage is None
            else {
                "text": stage.text,
                "line_count": stage.line_count,
                "op_counts": dict(stage.op_counts),
            }
        )
    return {
        "schema_version": SCHEMA_VERSION,
        "target": report.target,
        "function": report.function_name,
        "composition": report.composition,
        "backend": report.backend,
        "devices": {
            "count": len(report.devices),
            "kind": report.device_kind,
            "platform": report.backend,
            "topology": report.topology,
            "caveat": report.caveat,
            "list": list(report.devices),
        },
        "mesh": None if report.mesh is None else dict(report.mesh),
        "outputs": [_output_to_dict(o) for o in report.outputs],
        "collectives": collectives_to_list(report.collectives),
        "communication_bytes": None
        if report.collectives is None
        else report.collectives.total_bytes,
        "jax_version": report.jax_version,
        "jaxlib_version": report.jaxlib_version,
        "x64": report.x64,
        "args": [_arg_to_dict(a) for a in report.args],
        "stages": stages,
        "cost": _cost_to_dict(report.cost),
        "memory": _memory_to_dict(report.memory),
        "timings": _timings_to_dict(report.timings),
        "unavailable": dict(report.unavailable),
    }


def _arg_to_dict(arg: ArgInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"path": arg.path, "kind": arg.kind}
    if arg.kind == "static":
        out["value"] = arg.value
    else:
        out.update(dtype=arg.dtype, shape=list(arg.shape or ()), weak_type=arg.weak_type)
        out.update(_placement(arg.sharding, arg.shard_shape))
    return out


def _output_to_dict(output: OutputInfo) -> dict[str, Any]:
    return {
        "path": output.path,
        "dtype": output.dtype,
        "shape": list(output.shape),
        **_placement(output.sharding, output.shard_shape),
    }


def _placement(sharding: str | None, shard_shape: tuple[int, ...] | None) -> dict[str, Any]:
    return {
        "sharding": sharding,
        "shard_shape": None if shard_shape is None else list(shard_shape),
    }


def _cost_to_dict(cost: CostSummary | None) -> dict[str, Any] | None:
    if cost is None:
        return None
    return {
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "bytes_accessed": cost.bytes_accessed,
        "arithmetic_intensity": cost.arithmetic_intensity,
        "optimal_seconds": cost.optimal_seconds,
        "xla_raw": dict(cost.raw),
        "loop_aware": None if cost.loop_aware is None else _loop_aware_to_dict(cost.loop_aware),
    }


def _loop_aware_to_dict(cost: LoopAwareCost) -> dict[str, Any]:
    return {
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "bytes_accessed": cost.bytes_accessed,
        "lower_bound": cost.lower_bound,
        "not_counted": list(cost.not_counted),
    }


def _memory_to_dict(memory: MemorySummary | None) -> dict[str, Any] | None:
    if memory is None:
        return None
    return {
        "argument_bytes": memory.argument_bytes,
        "output_bytes": memory.output_bytes,
        "temp_bytes": memory.temp_bytes,
        "alias_bytes": memory.alias_bytes,
        "generated_code_bytes": memory.generated_code_bytes,
        "peak_bytes": memory.peak_bytes,
        "derived_peak_bytes": memory.derived_peak_bytes,
        "host_argument_bytes": memory.host_argument_bytes,
        "host_output_bytes": memory.host_output_bytes,
        "host_temp_bytes": memory.host_temp_bytes,
        "host_alias_bytes": memory.host_alias_bytes,
        "host_generated_code_bytes": memory.host_generated_code_bytes,
        "donated": list(memory.donated),
        "capacity_bytes": memory.capacity_bytes,
        "fits": memory.fits,
        "input_output_aliases": [
            {"output": a.output, "parameter": a.parameter, "argument": a.argument, "kind": a.kind}
            for a in memory.aliases
        ],
    }


def _timings_to_dict(t: Timings) -> dict[str, Any]:
    cached = t.cached_call
    return {
        "trace_s": t.trace_s,
        "lower_s": t.lower_s,
        "compile_s": t.compile_s,
        "first_call_s": t.first_call_s,
        "cached_call_s": None if cached is None else cached.median_s,
        "cached_call": None
        if cached is None
        else {
            "median_s": cached.median_s,
            "min_s": cached.min_s,
            "max_s": cached.max_s,
            "runs": cached.runs,
        },
        "inputs": None if t.inputs is None else inputs_to_dict(t.inputs),
        "data_dependent_loops": t.data_dependent_loops,
        "caveat": t.caveat,
    }


def inputs_to_dict(origins: InputOrigins) -> dict[str, Any]:
    """Where the executed inputs' values came from (``timings.inputs``)."""
    return {
        "source": origins.source,
        "random": list(origins.random),
        "factory": list(origins.factory),
    }
