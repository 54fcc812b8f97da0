"""The ``topologies`` report as JSON (schema: ``jaxinspect/schemas/topologies.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.jsonfields import encode_object
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.topologies.report import TopologiesReport

#: The schema this document follows, and its version (a test checks that they agree).
SCHEMA = "topologies.schema.json"
SCHEMA_VERSION = 2


def render_topologies_json(report: TopologiesReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(topologies_to_dict(report))


def topologies_to_dict(report: TopologiesReport) -> dict[str, Any]:
    """The document: libtpu's version, the accepted slices, the refused names, the sources,
    the GPU models and what is missing."""
    return {"schema_version": SCHEMA_VERSION, **encode_object(report)}
