"""The ``bench`` report as one JSON document (schema: ``jaxinspect/schemas/bench.schema.json``,
generated from :class:`BenchDocument`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.bench.gatereport import GateVerdict
from jaxinspect.bench.report import BenchReport
from jaxinspect.jsonfields import encode_object, js
from jaxinspect.renderers.jsondoc import json_text

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "bench.schema.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class BenchDocument:
    """Stable paths: ``bench.cold.<phase>.*``, ``bench.cached.*``, ``bench.pipelined.*``..."""

    report: BenchReport = field(metadata=js(flatten=True))
    #: With ``--baseline``: the latency gate's verdict.
    gate: GateVerdict | None = field(default=None, metadata=js(skip_none=True))


def render_bench_json(report: BenchReport, verdict: GateVerdict | None = None) -> str:
    """Indented JSON with sorted keys; with a latency gate's verdict under ``gate``."""
    document = encode_object(BenchDocument(report, verdict))
    return json_text({"schema_version": SCHEMA_VERSION, "command": "bench", **document})
