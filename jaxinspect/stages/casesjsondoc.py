"""The multi-case ``stages`` report as JSON (schema: ``jaxinspect/schemas/cases.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.renderers.jsondoc import failure_to_dict, json_text
from jaxinspect.stages.casereport import CaseComparison
from jaxinspect.stages.jsondoc import stages_to_dict

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "cases.schema.json"
SCHEMA_VERSION = 1


def render_cases_json(comparison: CaseComparison) -> str:
    """Indented JSON with sorted keys."""
    return json_text(cases_to_dict(comparison))


def cases_to_dict(comparison: CaseComparison) -> dict[str, Any]:
    """The comparison as JSON: one full ``stages`` document (or an error) per case, in order."""
    return {
        "schema_version": SCHEMA_VERSION,
        "target": comparison.target,
        "composition": comparison.composition,
        "cases": [
            {
                "name": case.name,
                "source": case.source,
                "distinct_args": list(case.distinct_args),
                "report": None if case.report is None else stages_to_dict(case.report),
                "error": None if case.error is None else failure_to_dict(case.error),
            }
            for case in comparison.cases
        ],
    }
