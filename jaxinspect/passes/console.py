"""Rich output of a ``PassesReport``: the steps that changed the module, and the totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.stages.console import run_header

if TYPE_CHECKING:
    from jaxinspect.passes.report import PassesReport, PassStep


def render_passes(report: PassesReport, *, every: bool = False) -> RenderableType:
    """The header, the table of steps (changed ones, or ``every`` one) and the totals."""
    parts: list[RenderableType] = [_header(report)]
    steps = report.steps
    if steps is None:
        why = report.reason("passes") or "XLA wrote no pass snapshots"
        parts.append(Text(f"\nno pass snapshots: {why}", style="yellow"))
        return Group(*parts)
    last = len(steps) - 1
    shown = [s for s in steps if every or s.changed or s.index in (0, last)]
    parts += [Text(""), _table(report, shown, hidden=len(steps) - len(shown)), Text("")]
    parts.append(_totals(report))
    return Group(*parts)


def _header(report: PassesReport) -> RenderableType:
    grid = run_header(report.source)
    grid.add_row("module", report.module)
    return grid


def _table(report: PassesReport, shown: list[PassStep], hidden: int) -> FitTable:
    totals = report.totals
    table = FitTable(
        [
            Col("#", justify="right"),
            Col("pass"),
            Col("pipeline", kind="path", drop=1),
            Col("ops", justify="right"),
            Col("lines", justify="right"),
        ],
        title=f"XLA's passes over {report.module}: {totals.changed} of {totals.steps} "
        "snapshots changed the module",
    )
    for step in shown:
        table.add_row(
            str(step.index),
            step.name,
            step.pipeline,
            f"{_count(step.ops_before)} → {_count(step.ops_after)}",
            f"+{step.lines_added} -{step.lines_removed}",
        )
    notes = ["#0: StableHLO operations → HLO instructions."]
    if hidden:
        notes.append(f"{hidden} snapshots without a change not shown (--all shows them).")
    notes.append("--diff N prints a step's unified diff.")
    table.caption = Text(" ".join(notes), style="dim")
    return table


def _totals(report: PassesReport) -> Text:
    t = report.totals
    return Text(
        f"StableHLO {_count(t.stablehlo_ops)} ops → {_count(t.ops_entering)} instructions "
        f"entering XLA → {_count(t.ops_scheduled)} scheduled; XLA's passes: "
        f"+{t.lines_added} -{t.lines_removed} lines"
    )


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)
