"""The report as one JSON document (the schema is ``jaxinspect/schemas/stages.schema.json``)."""

from __future__ import annotations

import json

from jaxinspect.reports.stages import InspectionReport, report_to_dict


def render_json(report: InspectionReport) -> str:
    """Indented JSON with sorted keys, so two runs of the same program diff cleanly."""
    return json.dumps(report_to_dict(report), indent=2, sort_keys=True) + "\n"
