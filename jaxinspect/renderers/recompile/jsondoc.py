"""The ``recompile`` report as JSON (schema: ``jaxinspect/schemas/recompile.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.jsonfields import encode, encode_object
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.reports.recompile import SweepReport

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "recompile.schema.json"
SCHEMA_VERSION = 1


def render_sweep_json(report: SweepReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(sweep_to_dict(report))


def sweep_to_dict(report: SweepReport) -> dict[str, Any]:
    """The one JSON shape of a sweep; paths are stable across versions of schema 1."""
    return {
        "schema_version": SCHEMA_VERSION,
        **encode_object(report),
        # A case that ran has no error; one that failed has only its name, source and error.
        "cases": [c if "error" in c else {**c, "error": None} for c in encode(report.cases)],
    }
