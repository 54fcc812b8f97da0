"""Rich output of ``passes --time``: the time tree, largest first, and what it accounts for."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.passes.timereport import STAGE
from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_seconds
from jaxinspect.stages.console import run_header

if TYPE_CHECKING:
    from jaxinspect.passes.report import PassesReport
    from jaxinspect.passes.timereport import PassTimes, TimedStep

#: Rows under the compile step below this share of it are counted, not listed.
SHOWN_SHARE = 0.001


def render_pass_times(report: PassesReport) -> RenderableType:
    """The run header, the table of steps and the coverage line."""
    times = report.time
    grid = run_header(report.source)
    grid.add_row("module", report.module)
    parts: list[RenderableType] = [grid, Text("")]
    if times is None or times.steps is None:
        why = report.reason("time.steps") or "not timed"
        parts.append(Text(f"no compile events: {why}", style="yellow"))
        return Group(*parts)
    parts += [_table(report.module, times), Text("")]
    parts += [Text(line) for line in summary_lines(times, report.reason)]
    return Group(*parts)


def _table(module: str, times: PassTimes) -> FitTable:
    table = FitTable(
        [
            Col("step", kind="prose"),
            Col("kind", drop=2),
            Col("runs", justify="right"),
            Col("time", justify="right"),
            Col("self", justify="right", drop=3),
            Col("% compile", justify="right", drop=1),
        ],
        title=f"Time of each step compiling {module} (a row's time holds the rows under it)",
    )
    hidden = 0
    under = ""
    for step in times.steps or ():
        under = step.name if step.depth == 0 else under
        share = _share(step, times) if under == "compile" else None
        if share is not None and step.depth > 1 and share < SHOWN_SHARE:
            hidden += 1
            continue
        table.add_row(
            "  " * step.depth + step.name,
            step.kind,
            f"×{step.runs}" if step.runs > 1 else "",
            format_seconds(step.seconds),
            format_seconds(step.self_s) if step.self_s != step.seconds else "",
            "" if share is None else f"{share:.1%}",
        )
    notes = ["self: in no row below it."]
    if hidden:
        notes.append(
            f"{hidden} steps under {SHOWN_SHARE:.1%} of the compile not shown (--format json "
            "lists them)."
        )
    table.caption = Text(" ".join(notes), style="dim")
    return table


def _share(step: TimedStep, times: PassTimes) -> float | None:
    if not times.compile_s or step.kind == STAGE and step.name != "compile":
        return None
    return step.seconds / times.compile_s


def summary_lines(times: PassTimes, reason: Callable[[str], str | None]) -> list[str]:
    """The sentences under the table (the HTML report shows them too).

    Args:
        times: The timed report.
        reason: Why the value at a JSON path is null (``PassesReport.reason``).
    """
    why = reason
    lines = []
    if times.accounted_s is not None and times.compile_s and times.coverage is not None:
        lines.append(
            f"compile events account for {format_seconds(times.accounted_s)} of "
            f"{format_seconds(times.compile_s)} compile ({times.coverage:.0%})"
        )
    else:
        lines.append(f"compile events: none ({why('time.accounted_s') or 'not read'})")
    if times.passes_s is not None and times.compile_s:
        lines.append(
            f"XLA's pass pipelines account for {format_seconds(times.passes_s)} of it "
            f"({times.passes_s / times.compile_s:.1%}); the rest: the backend, other steps"
        )
    top = times.top_pass
    lines.append(
        f"top pass: {top}" if top else f"top pass: none ({why('time.top_pass') or 'no events'})"
    )
    if times.worker_s is not None:
        lines.append(
            f"compiler worker threads: {format_seconds(times.worker_s)} busy alongside "
            "(concurrent, in no total)"
        )
    lines.append(f"profile: {times.profiler} (its cost: docs/passes.md)")
    return lines
