"""The report's "Compile time by pass" section (``report --passes-time``)."""

from __future__ import annotations

from html import escape

from jaxinspect.htmlreport.tables import Cell, sortable_table
from jaxinspect.passes.timereport import PassTimes
from jaxinspect.renderers.units import format_seconds


def pass_times_section(times: PassTimes, reasons: tuple[tuple[str, str], ...]) -> str:
    """The rows in tree order (indented by depth), and the lines ``passes --time`` prints."""
    # Imported here: passes/timeconsole.py brings rich (console renderers), which a report
    # without --passes-time otherwise never imports.
    from jaxinspect.passes.timeconsole import summary_lines

    why = dict(reasons)
    lines = "".join(f"<li>{escape(line)}</li>" for line in summary_lines(times, why.get))
    note = (
        "<p class=\"note\">One profile of the report's compilation; XLA's dump was written "
        "in it, so its writing is in the times (<code>jaxinspect passes --time</code> times a "
        "compilation without one). A row's time holds the rows indented under it.</p>"
    )
    if times.steps is None:
        return note + f"<ul>{lines}</ul>"
    rows = [
        (
            None,
            [
                Cell("\u00a0\u00a0" * step.depth + step.name, step.name),
                Cell(step.kind, step.kind),
                Cell(str(step.runs), step.runs),
                Cell(format_seconds(step.seconds), step.seconds),
                Cell(format_seconds(step.self_s), step.self_s),
            ],
        )
        for step in times.steps
    ]
    table = sortable_table(["step", "kind", "runs", "time", "self"], rows, "pass-times")
    return note + f"<ul>{lines}</ul>" + table
