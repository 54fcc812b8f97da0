"""The ``memory`` report as one JSON document (schema: ``schemas/memory.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.jsonfields import encode
from jaxinspect.memory.report import MemoryPeak, MemoryReport
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import run_keys, stages_to_dict

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
    memory["fit"] = encode(report.fit)
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
        **{key: encode(getattr(peak, key)) for key in _ASSIGNMENT_KEYS if key != "peak"},
    }
