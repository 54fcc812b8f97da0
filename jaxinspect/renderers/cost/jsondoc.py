"""The ``cost`` report as JSON (schema: ``jaxinspect/schemas/cost.schema.json``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxinspect.reports.cost import CostReport


def render_cost_json(report: CostReport) -> str:
    """Indented JSON with sorted keys."""
    from jaxinspect.renderers.cost.document import cost_report_to_dict

    return json.dumps(cost_report_to_dict(report), indent=2, sort_keys=True) + "\n"
