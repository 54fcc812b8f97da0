"""The bench report as one JSON document (schema: ``jaxinspect/schemas/bench.schema.json``)."""

from __future__ import annotations

import json

from jaxinspect.renderers.bench.document import bench_to_dict
from jaxinspect.reports.bench import BenchReport


def render_bench_json(report: BenchReport) -> str:
    """Indented JSON with sorted keys."""
    return json.dumps(bench_to_dict(report), indent=2, sort_keys=True) + "\n"
