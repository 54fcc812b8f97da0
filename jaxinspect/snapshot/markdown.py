"""Markdown for snapshot diffs and ``check`` reports: a CI job summary or a PR comment."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxinspect.snapshot.text import (
    format_delta,
    format_metric,
    text_change_line,
    text_diff_lines,
    toolchain_line,
)

if TYPE_CHECKING:
    from jaxinspect.snapshot.checkreport import CheckReport
    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict

#: Diff lines shown per stage before the rest is cut (PR comments have a size limit).
MAX_DIFF_LINES = 200

_ICONS = {
    "error": "💥",
    "unchanged": "✅",
    "changed": "⚠️",
    "new": "🆕",
    "missing": "❌",
    "stale": "🗑️",
}


def render_diff_markdown(diff: SnapshotDiff, verdict: Verdict | None, title: str) -> str:
    """A section with the toolchain note, verdict, op and metric tables, and folded diffs."""
    out = [f"### {title}", ""]
    note = toolchain_line(diff)
    if note:
        out += [f"> **{note}**", ""]
    if diff.identical:
        return "\n".join([*out, "Identical.", ""])
    if verdict is not None:
        if verdict.failed:
            out += [f"- ❌ fails `{t}`" for t in verdict.tripped]
        else:
            out.append("- ✅ different, within the `--fail-on` thresholds")
        out += [f"- note: {n}" for n in verdict.notes]
        out.append("")
    if diff.op_changes:
        out += ["| stage | op | before | after | Δ |", "|---|---|---:|---:|---:|"]
        out += [
            f"| {c.stage} | `{c.op}` | {c.before} | {c.after} | {c.after - c.before:+d} |"
            for c in diff.op_changes
        ]
        out.append("")
    if diff.changed_metrics:
        out += ["| metric | before | after | Δ |", "|---|---:|---:|---:|"]
        out += [
            f"| {m.name} | {format_metric(m.name, m.before)} | {format_metric(m.name, m.after)} "
            f"| {format_delta(m)} |"
            for m in diff.changed_metrics
        ]
        out.append("")
    for change in diff.texts:
        lines = list(text_diff_lines(change))
        cut = len(lines) - MAX_DIFF_LINES
        shown = "".join(lines[:MAX_DIFF_LINES]).replace("```", "` ` `")
        out += [
            f"<details><summary>{text_change_line(change)}</summary>",
            "",
            "```diff",
            shown.rstrip("\n"),
            "```",
        ]
        if cut > 0:
            out.append(f"\n… {cut} more lines (run `jaxinspect check` locally for all)")
        out += ["", "</details>", ""]
    return "\n".join(out)


def render_check_markdown(report: CheckReport) -> str:
    """A status table of every target, then one section per changed target."""
    verdict = "❌ failed" if report.failed else "✅ passed"
    counts = report.counts_line()
    out = [
        "## jaxinspect snapshot check",
        "",
        f"**{verdict}**: {counts}",
        "",
        "| target | status |",
        "|---|---|",
    ]
    for r in report.results:
        suffix = " (written)" if r.written else " (removed)" if r.removed else ""
        out.append(f"| `{r.name}` | {_ICONS[r.status]} {r.status}{suffix} |")
    out.append("")
    for r in report.results:
        if r.error is not None:
            out += [f"### `{r.name}`", "", "```", r.error, "```", ""]
        if r.diff is not None and r.status == "changed":
            out.append(render_diff_markdown(r.diff, r.verdict, f"`{r.name}`"))
    return "\n".join(out).rstrip("\n") + "\n"
