"""The ``recompile`` report as JSON (schema: ``jaxinspect/schemas/recompile.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.jsonfields import encode_object
from jaxinspect.recompile.report import SweepReport
from jaxinspect.renderers.jsondoc import json_text

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "recompile.schema.json"
SCHEMA_VERSION = 1


def render_sweep_json(report: SweepReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(sweep_to_dict(report))


def sweep_to_dict(report: SweepReport) -> dict[str, Any]:
    """The one JSON shape of a sweep; paths are stable across versions of schema 1."""
    return {"schema_version": SCHEMA_VERSION, **encode_object(report)}
