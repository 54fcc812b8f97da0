"""Rich tables and panels of an ``InspectionReport`` for people at a terminal."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from jaxinspect.renderers.units import format_bytes, format_count, format_seconds
from jaxinspect.reports.sections import IR_STAGES, SECTIONS
from jaxinspect.reports.stages import InspectionReport, StageText

#: Lines of each IR shown in table mode unless ``--full``.
DEFAULT_MAX_LINES = 40
#: Kinds of operation listed per stage in the histogram.
OPS_PER_STAGE = 12

_LEXERS = {"jaxpr": "python", "stablehlo": "llvm", "hlo": "llvm"}
_TITLES = {"jaxpr": "jaxpr", "stablehlo": "StableHLO", "hlo": "optimized HLO"}


def render_console(
    report: InspectionReport,
    *,
    sections: tuple[str, ...] = SECTIONS,
    max_lines: int | None = DEFAULT_MAX_LINES,
) -> RenderableType:
    """Everything selected in ``sections``, headed by what was inspected and where.

    Args:
        report: The report to show.
        sections: Which sections to show, in any order (shown in pipeline order).
        max_lines: Lines of each IR to show; ``None`` shows them whole.
    """
    parts: list[RenderableType] = [_header(report)]
    for name in IR_STAGES:
        if name in sections:
            parts.append(_stage_panel(report, name, max_lines))
    builders: dict[str, Callable[[InspectionReport], RenderableType]] = {
        "ops": _ops_table,
        "cost": _cost_table,
        "memory": _memory_table,
        "timings": _timings_table,
    }
    parts += [build(report) for name, build in builders.items() if name in sections]
    return Group(*parts)


def _header(report: InspectionReport) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("target", report.target)
    grid.add_row("function", report.function_name)
    if report.composition is not None:
        grid.add_row("compiled", report.composition)
    grid.add_row("backend", f"{report.backend}  ({', '.join(report.devices)})")
    grid.add_row("jax / jaxlib", f"{report.jax_version} / {report.jaxlib_version}")
    grid.add_row("x64", "on (the spec has a 64-bit leaf)" if report.x64 else "off")
    args = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for column in ("argument", "kind", "dtype", "shape"):
        args.add_column(column)
    for arg in report.args:
        if arg.kind == "static":
            args.add_row(arg.path, "static", "", arg.value or "")
        else:
            weak = " (weak)" if arg.weak_type else ""
            shape = "[" + ",".join(str(d) for d in arg.shape or ()) + "]"
            args.add_row(arg.path, arg.kind, f"{arg.dtype}{weak}", shape)
    return Panel(Group(grid, Text(""), args), title="jaxinspect stages", title_align="left")


def _stage_panel(report: InspectionReport, name: str, max_lines: int | None) -> RenderableType:
    stage = report.stage(name)
    title = _TITLES[name]
    if stage is None:
        return Panel(Text(_na(report, f"stages.{name}")), title=title, title_align="left")
    lines = stage.text.splitlines()
    shown = lines if max_lines is None else lines[:max_lines]
    body: list[RenderableType] = [Syntax("\n".join(shown), _LEXERS[name], word_wrap=False)]
    if len(shown) < len(lines):
        body.append(
            Text(
                f"… showing {len(shown)} of {len(lines)} lines. Pass --full, or run "
                f"`jaxinspect {name} {report.target} --shapes SPEC` for the whole text.",
                style="yellow",
            )
        )
    return Panel(Group(*body), title=f"{title} ({len(lines)} lines)", title_align="left")


def _ops_table(report: InspectionReport) -> RenderableType:
    table = Table(title="operations per stage", title_justify="left")
    for stage in report.stages:
        table.add_column(_TITLES[stage.name])
        table.add_column("n", justify="right")
    columns = [_op_rows(stage) for stage in report.stages]
    depth = max((len(c) for c in columns), default=0)
    for i in range(depth):
        row: list[str] = []
        for column in columns:
            row += list(column[i]) if i < len(column) else ["", ""]
        table.add_row(*row)
    return table


def _op_rows(stage: StageText) -> list[tuple[str, str]]:
    rows = [(op, str(n)) for op, n in stage.op_counts[:OPS_PER_STAGE]]
    rest = stage.op_counts[OPS_PER_STAGE:]
    if rest:
        rows.append((f"… {len(rest)} more kinds", str(sum(n for _, n in rest))))
    return rows


def _cost_table(report: InspectionReport) -> RenderableType:
    table = _metric_table("cost (XLA cost_analysis of the compiled program)")
    cost = report.cost
    if cost is None:
        table.add_row("cost", *_na_cells(report, "cost"))
        return table
    rows = [
        ("flops", cost.flops, format_count),
        ("transcendentals", cost.transcendentals, format_count),
        ("bytes accessed", cost.bytes_accessed, format_bytes),
        ("arithmetic intensity", cost.arithmetic_intensity, lambda v: f"{v:.3g} flop/byte"),
    ]
    for label, value, human in rows:
        path = "cost." + label.replace(" ", "_")
        if value is None:
            table.add_row(label, *_na_cells(report, path))
        else:
            table.add_row(label, _exact(value), human(value))
    _loop_aware_rows(report, table)
    return table


def _loop_aware_rows(report: InspectionReport, table: Table) -> None:
    """jaxinspect's loop-aware totals under JAX's own, labelled (``jaxinspect cost`` has more)."""
    aware = None if report.cost is None else report.cost.loop_aware
    if aware is None:
        table.add_row("loop-aware (jaxinspect)", *_na_cells(report, "cost.loop_aware"))
        return
    bound = (
        " LOWER BOUND, not counted: " + ", ".join(aware.not_counted) if aware.lower_bound else ""
    )
    table.add_row(
        "loop-aware flops (jaxinspect)", _exact(aware.flops), format_count(aware.flops) + bound
    )
    table.add_row(
        "loop-aware transcendentals",
        _exact(aware.transcendentals),
        format_count(aware.transcendentals),
    )
    table.add_row(
        "loop-aware bytes accessed",
        _exact(aware.bytes_accessed),
        format_bytes(aware.bytes_accessed),
    )


def _memory_table(report: InspectionReport) -> RenderableType:
    table = _metric_table("memory (compiled memory_analysis)")
    memory = report.memory
    if memory is None:
        table.add_row("memory", *_na_cells(report, "memory"))
        return table
    rows = [
        ("argument", "argument_bytes", memory.argument_bytes),
        ("output", "output_bytes", memory.output_bytes),
        ("temp", "temp_bytes", memory.temp_bytes),
        ("alias", "alias_bytes", memory.alias_bytes),
        ("generated code", "generated_code_bytes", memory.generated_code_bytes),
        ("peak (JAX)", "peak_bytes", memory.peak_bytes),
        ("arg+out+temp-alias (jaxinspect)", "derived_peak_bytes", memory.derived_peak_bytes),
    ]
    for label, key, value in rows:
        if value is None:
            table.add_row(label, *_na_cells(report, f"memory.{key}"))
        else:
            table.add_row(label, f"{value:,}", format_bytes(value))
    if memory.donated:
        table.add_row("donated (spec)", ", ".join(memory.donated), "")
    for alias in memory.aliases:
        source = alias.argument or f"parameter {alias.parameter}"
        table.add_row("input→output alias", f"{source} → {alias.output}", alias.kind)
    if memory.donated and not memory.aliases:
        table.add_row("input→output alias", "none: XLA reused no donated buffer", "")
    return table


def _timings_table(report: InspectionReport) -> RenderableType:
    table = _metric_table("timings (time.perf_counter, this process)")
    t = report.timings
    steps = [
        ("trace", "trace_s", t.trace_s),
        ("lower", "lower_s", t.lower_s),
        ("compile", "compile_s", t.compile_s),
        ("first call", "first_call_s", t.first_call_s),
    ]
    for label, key, value in steps:
        if value is None:
            table.add_row(label, *_na_cells(report, f"timings.{key}"))
        else:
            table.add_row(label, format_seconds(value), "")
    cached = t.cached_call
    if cached is None:
        table.add_row("cached call", *_na_cells(report, "timings.cached_call_s"))
    else:
        spread = f"min {format_seconds(cached.min_s)}, max {format_seconds(cached.max_s)}"
        table.add_row(
            "cached call (median)", format_seconds(cached.median_s), f"{spread}, {cached.runs} runs"
        )
    return table


def _metric_table(title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("", overflow="fold")
    return table


def _na(report: InspectionReport, path: str) -> str:
    return f"n/a: {report.reason(path) or 'not reported'}"


def _na_cells(report: InspectionReport, path: str) -> tuple[str, str]:
    return "n/a", report.reason(path) or "not reported"


def _exact(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.6g}"
