"""The ``memory`` report as one JSON document (schema: ``schemas/memory.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.memory.report import MemoryPeak, MemoryReport, PeakBuffer, TimelinePoint
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import run_keys, stages_to_dict
from jaxinspect.xla.bufferassign import Allocation
from jaxinspect.xla.sourcemap import SourceLocation

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "memory.schema.json"
SCHEMA_VERSION = 1

#: The keys read off XLA's buffer assignment; all null together when there is none.
_ASSIGNMENT_KEYS = ("peak", "buffers", "timeline", "allocations", "by_kind", "figures")


def render_memory_json(report: MemoryReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(memory_to_dict(report))


def memory_to_dict(report: MemoryReport) -> dict[str, Any]:
    """The document: run facts, ``memory.*`` and the reasons for nulls."""
    base = stages_to_dict(report.source)
    doc = run_keys(base)
    memory: dict[str, Any] = dict.fromkeys(_ASSIGNMENT_KEYS)
    if report.peak is not None:
        memory.update(_assignment(report.peak))
    memory["memory_analysis"] = base["memory"]
    memory["fit"] = None
    if report.fit is not None:
        fit = report.fit
        memory["fit"] = {
            "device": fit.device,
            "capacity_bytes": fit.capacity_bytes,
            "peak_bytes": fit.peak_bytes,
            "fraction": fit.fraction,
            "fits": fit.fits,
        }
    doc.update(
        schema_version=SCHEMA_VERSION,
        command="memory",
        memory=memory,
        unavailable={**base["unavailable"], **dict(report.unavailable)},
    )
    return doc


def _assignment(peak: MemoryPeak) -> dict[str, Any]:
    return {
        "peak": {
            "bytes": peak.peak_bytes,
            "step": peak.peak_step,
            "instruction": peak.peak_instruction,
            "entry_instruction": peak.peak_point.instruction,
            "steps": peak.steps,
            "allocated_bytes": peak.allocated_bytes,
            "partitions": peak.partitions,
        },
        "buffers": [_buffer(b) for b in peak.buffers],
        "timeline": [_point(p) for p in peak.timeline],
        "allocations": [_allocation(a) for a in peak.allocations],
        "by_kind": [
            {"kind": t.kind, "color": t.color, "count": t.count, "bytes": t.bytes}
            for t in peak.by_kind
        ],
        "figures": [
            {
                "name": f.name,
                "xla_bytes": f.bytes,
                "jaxinspect_bytes": f.ours,
                "agrees": f.agrees,
                "note": f.note,
            }
            for f in peak.figures
        ],
    }


def _buffer(buffer: PeakBuffer) -> dict[str, Any]:
    return {
        "instruction": buffer.instruction,
        "index": buffer.index,
        "computation": buffer.computation,
        "opcode": buffer.opcode,
        "shape": buffer.shape,
        "bytes": buffer.bytes,
        "kind": buffer.kind,
        "allocation": buffer.allocation,
        "offset": buffer.offset,
        "live": {"first": buffer.live[0], "last": buffer.live[1]},
        "argument": buffer.argument,
        "op_name": buffer.op_name,
        "source": _source(buffer.source),
        "created_by_xla": buffer.created_by_xla,
        "shares": list(buffer.shares),
    }


def _point(point: TimelinePoint) -> dict[str, Any]:
    return {
        "step": point.step,
        "first_step": point.first_step,
        "instruction": point.instruction,
        "opcode": point.opcode,
        "live_bytes": point.live_bytes,
        "at": point.at,
    }


def _allocation(allocation: Allocation) -> dict[str, Any]:
    return {
        "index": allocation.index,
        "size": allocation.size,
        "kind": allocation.kind,
        "parameter": allocation.parameter,
        "parameter_index": allocation.parameter_index,
        "live_out": allocation.live_out,
        "color": allocation.color,
        "values": [
            {
                "instruction": v.instruction,
                "index": v.index,
                "phi": v.phi,
                "size": v.size,
                "offset": v.offset,
                "shape": v.shape,
            }
            for v in allocation.values
        ],
    }


def _source(loc: SourceLocation | None) -> dict[str, Any] | None:
    if loc is None:
        return None
    return {"file": loc.file, "line": loc.line, "column": loc.column, "function": loc.function}
