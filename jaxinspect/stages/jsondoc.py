"""The ``stages`` report as one JSON document (schema: ``schemas/stages.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.base.inspection import ArgInfo, InspectionReport
from jaxinspect.jsonfields import encode
from jaxinspect.renderers.collectives import collectives_to_list
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.sections import IR_STAGES

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
        stages[name] = encode(stage)
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
        "outputs": encode(report.outputs),
        "collectives": collectives_to_list(report.collectives),
        "communication_bytes": None
        if report.collectives is None
        else report.collectives.total_bytes,
        "jax_version": report.jax_version,
        "jaxlib_version": report.jaxlib_version,
        "x64": report.x64,
        "args": [_arg_to_dict(a) for a in report.args],
        "stages": stages,
        "cost": encode(report.cost),
        "memory": encode(report.memory),
        "timings": encode(report.timings),
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


def _placement(sharding: str | None, shard_shape: tuple[int, ...] | None) -> dict[str, Any]:
    return {
        "sharding": sharding,
        "shard_shape": None if shard_shape is None else list(shard_shape),
    }
