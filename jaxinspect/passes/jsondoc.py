"""The ``passes`` report as one JSON document (schema: ``schemas/passes.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.jsonfields import encode
from jaxinspect.passes.report import PassesReport
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import run_keys, stages_to_dict

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "passes.schema.json"
SCHEMA_VERSION = 1


def render_passes_json(report: PassesReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(passes_to_dict(report))


def passes_to_dict(report: PassesReport) -> dict[str, Any]:
    """The document: run facts, ``passes[]``, ``totals`` and the reasons for nulls."""
    base = stages_to_dict(report.source)
    doc = run_keys(base)
    doc.update(
        schema_version=SCHEMA_VERSION,
        command="passes",
        module=report.module,
        passes=encode(report.steps),
        totals=encode(report.totals),
    )
    # The stages report's reasons for keys this document has (not its cost, timings...).
    inherited = {k: v for k, v in base["unavailable"].items() if _top_key(k) in doc}
    if report.time is not None:  # only with --time: the document without it is unchanged
        doc["time"] = encode(report.time)
    doc["unavailable"] = {**inherited, **dict(report.unavailable)}
    return doc


def _top_key(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]
