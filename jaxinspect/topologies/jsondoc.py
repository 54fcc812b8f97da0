"""The ``topologies`` report as JSON (schema: ``jaxinspect/schemas/topologies.schema.json``)."""

from __future__ import annotations

from typing import Any

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
    return {
        "schema_version": SCHEMA_VERSION,
        "libtpu_version": report.libtpu_version,
        "topologies": [
            {
                "name": s.name,
                "devices": s.devices,
                "chips": s.chips,
                "kind": s.kind,
                "hbm_bytes_per_chip": s.hbm_bytes,
                "profile": s.profile,
                "hbm_source": s.hbm_source,
            }
            for s in report.slices
        ],
        "refused": list(report.refused),
        "sources": list(report.sources),
        "gpus": [
            {
                "name": g.name,
                "kind": g.kind,
                "hbm_bytes_per_gpu": g.hbm_bytes,
                "hbm_bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
                "compute_capability": g.compute_capability,
                "source": g.source,
            }
            for g in report.gpus
        ],
        "notes": list(report.notes),
    }
