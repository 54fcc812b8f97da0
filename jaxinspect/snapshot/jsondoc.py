"""The ``diff`` and ``check`` reports as JSON (schemas: ``snapshot-diff``, ``snapshot-check``).

One module for both: a check document holds a diff document per changed target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jaxinspect.renderers.jsondoc import json_text

if TYPE_CHECKING:
    from jaxinspect.snapshot.checkreport import CheckReport, TargetResult
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
        "ops": [
            {"stage": c.stage, "op": c.op, "before": c.before, "after": c.after}
            for c in diff.op_changes
        ],
        "metrics": {
            m.name: {
                "before": m.before,
                "after": m.after,
                "delta": m.delta,
                "percent": None
                if m.percent is None or abs(m.percent) == float("inf")
                else m.percent,
            }
            for m in diff.changed_metrics
        },
        "texts": [
            {
                "stage": t.stage,
                "added": t.added,
                "removed": t.removed,
                "renamed": t.renamed,
                "values": {
                    "added": list(t.added_names),
                    "removed": list(t.removed_names),
                    "changed": list(t.changed_names),
                },
                "hunks": [
                    {
                        "a_start": h.a_start,
                        "a_len": h.a_len,
                        "b_start": h.b_start,
                        "b_len": h.b_len,
                        "lines": [mark + line for mark, line in h.lines],
                    }
                    for h in t.hunks
                ],
            }
            for t in diff.texts
        ],
    }


def check_to_dict(report: CheckReport) -> dict[str, Any]:
    """A check report as ``schemas/snapshot-check.schema.json`` describes it."""
    return {
        "schema_version": CHECK_SCHEMA_VERSION,
        "manifest": report.manifest,
        "snapshot_dir": report.snapshot_dir,
        "update": report.update,
        "failed": report.failed,
        "counts": report.counts(),
        "targets": [_result(r) for r in report.results],
    }


def _result(r: TargetResult) -> dict[str, Any]:
    return {
        "name": r.name,
        "target": r.target,
        "status": r.status,
        "failed": r.failed,
        "written": r.written,
        "removed": r.removed,
        "diff": None if r.diff is None else diff_to_dict(r.diff, r.verdict),
        "error": r.error,
    }
