"""The ``bench`` report as one JSON document (schema: ``jaxinspect/schemas/bench.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.bench.gatereport import GateVerdict
from jaxinspect.bench.report import BenchReport
from jaxinspect.jsonfields import encode_object
from jaxinspect.renderers.jsondoc import json_text

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "bench.schema.json"
SCHEMA_VERSION = 1


def render_bench_json(report: BenchReport, verdict: GateVerdict | None = None) -> str:
    """Indented JSON with sorted keys; with a latency gate's verdict under ``gate``."""
    document = bench_to_dict(report)
    if verdict is not None:
        document["gate"] = gate_to_dict(verdict)
    return json_text(document)


def gate_to_dict(verdict: GateVerdict) -> dict[str, Any]:
    """``gate.failed``, ``gate.rules[]`` (ratio, bounds, regressed), ``gate.environment_notes``."""
    return encode_object(verdict)


def bench_to_dict(report: BenchReport) -> dict[str, Any]:
    """Stable paths: ``bench.cold.<phase>.*``, ``bench.cached.*``, ``bench.pipelined.*``..."""
    return {"schema_version": SCHEMA_VERSION, "command": "bench", **encode_object(report)}
