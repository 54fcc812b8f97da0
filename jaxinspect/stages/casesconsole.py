"""One comparative table of a multi-case ``stages`` run: compile time, FLOPs, memory per case."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_bytes, format_count, format_seconds
from jaxinspect.stages.casereport import CaseComparison, CaseReport

_NA = "n/a"


def render_cases_console(comparison: CaseComparison) -> RenderableType:
    """The cases side by side, one column each; n/a cells have their reasons below.

    Rows: devices, XLA compile seconds, FLOPs and bytes accessed (cost_analysis), argument,
    output and temp bytes and JAX's peak (memory_analysis), median cached call; then each case's
    arguments that differ from the other cases. A failed case's cells read ``failed``, and its
    error's first line follows the tables.
    """
    failed = len(comparison.failures)
    title = f"{comparison.composition or comparison.target}: {len(comparison.cases)} cases"
    title += f", {failed} failed" if failed else ""
    sharded = any(c.report is not None and len(c.report.devices) > 1 for c in comparison.cases)
    # Case names head the columns: they may wrap at spaces, and every case stays.
    table = FitTable(
        [
            Col("metric", style="bold"),
            *(Col(case.name, justify="right") for case in comparison.cases),
        ],
        title=title,
        caption="cost and memory figures are per device" if sharded else None,
        boxed=True,
    )
    notes: dict[str, str] = {}
    columns = [_cells(case, notes) for case in comparison.cases]
    for i, label in enumerate(_ROWS):
        table.add_row(label, *(column[i] for column in columns))
    args = FitTable(
        [Col("case", style="bold"), Col("arguments", kind="prose")],
        title="arguments that differ between cases",
        boxed=True,
    )
    for case in comparison.cases:
        if case.error is not None:
            args.add_row(case.name, "(failed)")
        else:
            args.add_row(case.name, ", ".join(case.distinct_args) or "(same as every case)")
    parts: list[RenderableType] = [table, args]
    parts += [Text(f"n/a {path}: {reason}", style="dim") for path, reason in notes.items()]
    parts += [
        Text(f"case {case.name} failed (exit {int(error.exit_code)}): {error.summary}", style="red")
        for case in comparison.cases
        if (error := case.error) is not None
    ]
    return Group(*parts)


_ROWS = (
    "devices",
    "compile",
    "FLOPs",
    "bytes accessed",
    "argument bytes",
    "output bytes",
    "temp bytes",
    "peak_memory_in_bytes (XLA)",
    "cached call",
)


def _cells(case: CaseReport, notes: dict[str, str]) -> list[str]:
    report = case.report
    if report is None:
        return ["failed"] * len(_ROWS)

    def na(path: str) -> str:
        reason = report.reason(path) or next(
            (r for p, r in report.unavailable if path.startswith(p + ".")), None
        )
        if reason is not None:
            notes.setdefault(path, reason)
        return _NA

    cost, memory, timings = report.cost, report.memory, report.timings
    cached = timings.cached_call
    return [
        str(len(report.devices)),
        na("timings.compile_s") if timings.compile_s is None else format_seconds(timings.compile_s),
        _count(cost.flops if cost else None, "cost.flops", na),
        _count(cost.bytes_accessed if cost else None, "cost.bytes_accessed", na, nbytes=True),
        _count(memory.argument_bytes if memory else None, "memory.argument_bytes", na, True),
        _count(memory.output_bytes if memory else None, "memory.output_bytes", na, True),
        _count(memory.temp_bytes if memory else None, "memory.temp_bytes", na, True),
        _count(memory.peak_bytes if memory else None, "memory.peak_bytes", na, True),
        na("timings.cached_call_s") if cached is None else format_seconds(cached.median_s),
    ]


def _count(value: float | None, path: str, na: Callable[[str], str], nbytes: bool = False) -> str:
    if value is None:
        return na(path)
    return format_bytes(value) if nbytes else format_count(value)
