"""The ``diff`` and ``check`` reports as JSON (schemas: ``snapshot-diff``, ``snapshot-check``).

One module for both: a check document holds a diff document per changed target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jaxinspect.jsonfields import encode, encode_object
from jaxinspect.renderers.jsondoc import json_text

if TYPE_CHECKING:
    from jaxinspect.snapshot.checkreport import CheckReport
    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict

#: The schemas these documents follow, and their versions: bump a schema and its version
#: together on any incompatible change of paths or meanings (a test checks that they agree).
DIFF_SCHEMA = "snapshot-diff.schema.json"
DIFF_SCHEMA_VERSION = 1
CHECK_SCHEMA = "snapshot-check.schema.json"
CHECK_SCHEMA_VERSION = 1


def render_diff_json(diff: SnapshotDiff, verdict: Verdict | None) -> str:
    """Indented JSON with sorted keys."""
    return json_text(diff_to_dict(diff, verdict))


def render_check_json(report: CheckReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(check_to_dict(report))


def diff_to_dict(diff: SnapshotDiff, verdict: Verdict | None) -> dict[str, Any]:
    """A diff as ``schemas/snapshot-diff.schema.json`` describes it."""
    return {
        "schema_version": DIFF_SCHEMA_VERSION,
        "a": diff.a_label,
        "b": diff.b_label,
        "identical": diff.identical,
        "failed": (not diff.identical) if verdict is None else verdict.failed,
        "tripped": [] if verdict is None else list(verdict.tripped),
        "notes": [] if verdict is None else list(verdict.notes),
        "toolchain": [{"field": f, "before": b, "after": a} for f, b, a in diff.toolchain],
        "ops": encode(diff.op_changes),
        "metrics": {m.name: encode(m) for m in diff.changed_metrics},
        "texts": encode(diff.texts),
    }


def check_to_dict(report: CheckReport) -> dict[str, Any]:
    """A check report as ``schemas/snapshot-check.schema.json`` describes it."""
    return {
        "schema_version": CHECK_SCHEMA_VERSION,
        **encode_object(report),
        "counts": report.counts(),
        "targets": [
            {
                **encode_object(r),
                "diff": None if r.diff is None else diff_to_dict(r.diff, r.verdict),
            }
            for r in report.results
        ],
    }
