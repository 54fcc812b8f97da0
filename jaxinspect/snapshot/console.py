"""Rich tables for snapshot diffs and ``check`` reports (the diff text itself is written raw)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.snapshot.text import (
    SummaryLine,
    diff_summary_blocks,
    toolchain_line,
)

if TYPE_CHECKING:
    from jaxinspect.snapshot.checkreport import CheckReport, TargetResult
    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict

_STATUS_STYLE = {
    "error": "bold red",
    "unchanged": "green",
    "changed": "yellow",
    "new": "cyan",
    "missing": "red",
    "stale": "magenta",
}


def render_diff_summary(diff: SnapshotDiff, verdict: Verdict | None) -> RenderableType:
    """Toolchain note first, then the verdict, op changes, metric deltas and text line counts."""
    parts: list[RenderableType] = []
    for block in diff_summary_blocks(diff, verdict):
        if isinstance(block, SummaryLine):
            parts.append(Text(block.text, style=block.style))
            continue
        table = FitTable(
            [
                *(Col(h) for h in block.headers[: block.left]),
                *(Col(h, justify="right") for h in block.headers[block.left :]),
            ],
            title=block.title,
        )
        for row in block.rows:
            table.add_row(*row)
        parts.append(table)
    return Group(*parts)


def render_check(report: CheckReport) -> RenderableType:
    """One row per target, then each changed target's summary."""
    table = FitTable(
        [Col("target", kind="path"), Col("status"), Col("details", kind="prose")],
        title=f"jaxinspect check ({report.manifest})",
        boxed=True,
    )
    for r in report.results:
        status = r.status + (" (written)" if r.written else " (removed)" if r.removed else "")
        table.add_row(r.name, Text(status, style=_STATUS_STYLE[r.status]), _details(r))
    counts = report.counts_line()
    verdict = "FAILED" if report.failed else "passed"
    parts: list[RenderableType] = [table, Text(f"{verdict}: {counts}")]
    for r in report.results:
        if r.diff is not None and r.status == "changed":
            parts.append(Text(f"\n{r.name}", style="bold"))
            parts.append(render_diff_summary(r.diff, r.verdict))
    return Group(*parts)


def _details(result: TargetResult) -> str:
    if result.error is not None:
        return result.error.splitlines()[0]
    if result.status == "missing":
        return "no stored snapshot (run check --update)"
    if result.status == "stale":
        return "no target produces it" + ("; removed" if result.removed else "")
    diff = result.diff
    if diff is None:
        return ""
    bits = [f"{c.stage} +{c.added} -{c.removed}" for c in diff.texts]
    note = toolchain_line(diff)
    if note:
        bits.append(note)
    if result.verdict is not None and result.verdict.failed:
        bits.extend(result.verdict.tripped)
    return "; ".join(bits)
