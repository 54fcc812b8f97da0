"""JSON documents of snapshot diffs and ``check`` reports (see ``schemas/``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxinspect.snapshot.check import CheckReport, TargetResult
    from jaxinspect.snapshot.compare import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict


#: Version of the diff and check JSON documents.
SCHEMA_VERSION = 1


def diff_to_dict(diff: SnapshotDiff, verdict: Verdict | None) -> dict[str, Any]:
    """A diff as ``schemas/snapshot-diff.schema.json`` describes it."""
    return {
        "schema_version": SCHEMA_VERSION,
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
        "schema_version": SCHEMA_VERSION,
        "manifest": report.manifest,
        "snapshot_dir": report.snapshot_dir,
        "update": report.update,
        "failed": report.failed,
        "counts": report.counts(),
        "targets": [_result(r) for r in report.results],
    }


def render_json(document: dict[str, Any]) -> str:
    """Sorted, indented JSON with a trailing newline."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


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
