"""A snapshot diff as a compact HTML block, for notebooks (``jaxinspect.diff(a, b)``).

The same content as the Markdown of ``jaxinspect check`` (verdict, op counts, metrics, each
stage's ``diff -u`` folded): plain elements with inline styles, no script, no stylesheet,
so nothing reaches the notebook's page or the network.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from jaxinspect.snapshot import text

if TYPE_CHECKING:
    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict

#: Diff lines shown per stage; the rest are counted (``jaxinspect diff`` prints them all).
MAX_DIFF_LINES = 400
_CELL = "padding:2px 10px;text-align:left;border-top:1px solid #e3e7ee"
_LINE_COLOURS = (("@@", "#0b5cad"), ("+", "#116329"), ("-", "#a40e26"))
_HEADS = ("---", "+++")  # the file names above the hunks, left uncoloured


def render_diff_html(diff: SnapshotDiff, verdict: Verdict | None) -> str:
    """Toolchain note, verdict, op and metric tables, then each changed stage's diff."""
    title = f"jaxinspect diff · {diff.a_label} → {diff.b_label}"
    out = [f'<div class="jaxinspect-diff"><p><b>{escape(title)}</b></p>']
    note = text.toolchain_line(diff)
    if note:
        out.append(f"<p><b>{escape(note)}</b></p>")
    if diff.identical:
        out.append("<p>Identical.</p></div>")
        return "".join(out)
    if verdict is not None:
        items = [f"fails <code>{escape(t)}</code>" for t in verdict.tripped]
        if not verdict.failed:
            items.append("different, within the fail-on thresholds")
        items += [f"note: {escape(n)}" for n in verdict.notes]
        out.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    if diff.op_changes:
        rows = [
            [c.stage, c.op, str(c.before), str(c.after), f"{c.after - c.before:+d}"]
            for c in diff.op_changes
        ]
        out.append(_table(["stage", "op", "before", "after", "Δ"], rows))
    if diff.changed_metrics:
        rows = [
            [m.name, text.format_metric(m.name, m.before), text.format_metric(m.name, m.after)]
            + [text.format_delta(m)]
            for m in diff.changed_metrics
        ]
        out.append(_table(["metric", "before", "after", "Δ"], rows))
    for change in diff.texts:
        out.append(
            f"<details><summary>{escape(text.text_change_line(change))}</summary>"
            f"{_diff_lines(list(text.text_diff_lines(change)))}</details>"
        )
    out.append("</div>")
    return "".join(out)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    ths = "".join(f'<th style="{_CELL}">{escape(h)}</th>' for h in head)
    trs = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{escape(c)}</td>' for c in row) + "</tr>"
        for row in rows
    )
    return (
        '<table style="border-collapse:collapse;font-size:13px;margin:6px 0">'
        f"<thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>"
    )


def _diff_lines(lines: list[str]) -> str:
    shown = []
    for line in lines[:MAX_DIFF_LINES]:
        colour = next(
            (c for mark, c in _LINE_COLOURS if line.startswith(mark) and line[:3] not in _HEADS),
            None,
        )
        shown_line = escape(line.rstrip("\n"))
        shown.append(f'<span style="color:{colour}">{shown_line}</span>' if colour else shown_line)
    cut = len(lines) - MAX_DIFF_LINES
    more = f"\n… {cut} more lines (jaxinspect diff prints them all)" if cut > 0 else ""
    return (
        '<pre style="font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;max-height:420px;'
        f'overflow:auto;margin:4px 0">{chr(10).join(shown)}{escape(more)}</pre>'
    )
