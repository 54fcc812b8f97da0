"""Rich tables and panels of an ``InspectionReport`` for people at a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rich.columns import Columns
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from jaxinspect.base.inspection import ArgInfo, InspectionReport, StageText
from jaxinspect.renderers.collectives import collectives_table
from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.irpreview import preview, wrap_line
from jaxinspect.renderers.units import format_bytes, format_count, format_seconds
from jaxinspect.stages.memoryfit import peak_rows
from jaxinspect.stages.sections import IR_STAGES, SECTIONS

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
    metadata: bool = False,
    rerun: str | None = None,
) -> RenderableType:
    """Everything selected in ``sections``, headed by what was inspected and where.

    Args:
        report: The report to show.
        sections: Which sections to show, in any order (shown in pipeline order).
        max_lines: Lines of each IR to show; ``None`` shows them whole, and every argument
            (else an argument with many leaves is folded, see ``fold_arguments``).
        metadata: Keep the HLO's source-location tables and ``metadata=`` attributes.
        rerun: The options that name the inputs again (``--shapes spec.yaml``), for the hint
            under a shortened IR; ``None`` when they are unknown.
    """
    parts: list[RenderableType] = [_header(report, fold=max_lines is not None)]
    for name in IR_STAGES:
        if name in sections:
            parts.append(_stage_panel(report, name, max_lines, metadata, rerun))
    builders: dict[str, Callable[[InspectionReport], RenderableType]] = {
        "ops": _ops_table,
        "cost": _cost_and_collectives,
        "memory": _memory_table,
        "timings": _timings_table,
    }
    parts += [build(report) for name, build in builders.items() if name in sections]
    return Group(*parts)


def _header(report: InspectionReport, *, fold: bool = True) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("target", report.target)
    grid.add_row("function", report.function_name)
    if report.composition is not None:
        grid.add_row("compiled", report.composition)
    grid.add_row("backend", device_line(report))
    if report.mesh is not None:
        grid.add_row("mesh", " × ".join(f"{name}={size}" for name, size in report.mesh))
    grid.add_row("jax / jaxlib", f"{report.jax_version} / {report.jaxlib_version}")
    grid.add_row("x64", "on (the spec has a 64-bit leaf)" if report.x64 else "off")
    # Leaves of one layer share a long prefix: a path is cut in its middle, never its end.
    args = FitTable(
        [
            Col("argument", kind="path"),
            Col("kind", drop=1),
            Col("dtype"),
            Col("shape"),
            Col("sharding", drop=2),
            Col("per device", drop=3),
        ]
    )
    rows = fold_arguments(report.args) if fold else list(report.args)
    if len(rows) < len(report.args):
        args.caption = Text("--full lists every leaf.", style="dim")
    for arg in rows:
        if isinstance(arg, FoldedArgs):
            args.add_row(Text(arg.text, style="dim"), "", "", "", "", "")
        elif arg.kind == "static":
            args.add_row(arg.path, "static", "", arg.value or "", "", "")
        else:
            weak = " (weak)" if arg.weak_type else ""
            args.add_row(
                arg.path,
                arg.kind,
                f"{arg.dtype}{weak}",
                _dims(arg.shape),
                arg.sharding or "",
                _dims(arg.shard_shape) if arg.shard_shape is not None else "",
            )
    parts: list[RenderableType] = [grid, Text(""), args]
    if any(out.sharding is not None for out in report.outputs):
        outputs = FitTable(
            [
                Col("output", kind="path"),
                Col("dtype"),
                Col("shape"),
                Col("sharding"),
                Col("per device", drop=1),
            ]
        )
        for out in report.outputs:
            shard = _dims(out.shard_shape) if out.shard_shape is not None else ""
            outputs.add_row(out.path, out.dtype, _dims(out.shape), out.sharding or "", shard)
        parts += [Text(""), outputs]
    return Panel(Group(*parts), title="jaxinspect stages", title_align="left")


#: Argument rows shown whole; a longer table folds each argument's middle leaves.
MAX_ARG_ROWS = 30
#: Leaves kept at each end of a folded argument.
KEPT_LEAVES = 3


@dataclass(frozen=True, slots=True)
class FoldedArgs:
    """A row standing for leaves left out of the argument table."""

    text: str


def fold_arguments(args: tuple[ArgInfo, ...]) -> list[ArgInfo | FoldedArgs]:
    """``args`` with each long argument's middle leaves folded into one counted row.

    A train step's state has hundreds of leaves; listed whole they push the IR off the
    screen. Up to ``MAX_ARG_ROWS`` rows are shown as they are; beyond, an argument with more
    than ``2 * KEPT_LEAVES + 1`` leaves keeps its first and last ``KEPT_LEAVES``. ``--full``
    lists every leaf.
    """
    if len(args) <= MAX_ARG_ROWS:
        return list(args)
    groups: dict[str, list[ArgInfo]] = {}
    for arg in args:
        groups.setdefault(_argument_name(arg.path), []).append(arg)
    out: list[ArgInfo | FoldedArgs] = []
    for name, leaves in groups.items():
        if len(leaves) <= 2 * KEPT_LEAVES + 1:
            out += leaves
            continue
        hidden = leaves[KEPT_LEAVES:-KEPT_LEAVES]
        static = sum(1 for leaf in hidden if leaf.kind == "static")
        kinds = f", {static} static" if static else ""
        text = f"… {len(hidden)} more of {name}{kinds} ({len(leaves)} leaves)"
        out += [*leaves[:KEPT_LEAVES], FoldedArgs(text), *leaves[-KEPT_LEAVES:]]
    return out


def _argument_name(path: str) -> str:
    """``state`` of ``state.params['w']``: the parameter a leaf belongs to."""
    for i, char in enumerate(path):
        if char in ".[" and i > 0:
            return path[:i]
    return path


def run_header(report: InspectionReport) -> Table:
    """The run's facts, for a report's first lines: target, function, backend, mesh, versions.

    Callers add rows of their own (``grid.add_row(label, value)``).
    """
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("target", report.target)
    if report.target.rpartition(":")[2] != report.function_name:  # model.apply -> apply
        grid.add_row("function", report.function_name)
    grid.add_row("backend", device_line(report))
    if report.mesh is not None:
        grid.add_row("mesh", " × ".join(f"{name}={size}" for name, size in report.mesh))
    grid.add_row("jax / jaxlib", f"{report.jax_version} / {report.jaxlib_version}")
    return grid


def device_line(report: InspectionReport) -> str:
    """``cpu  (cpu:0 (cpu))`` for one device; the count and kind for several (a slice may
    have 256 chips); a topology says it was compiled here and not run."""
    count = len(report.devices)
    if report.topology is not None:
        chips = f"{count} × {report.device_kind}"
        line = f"{report.backend}  {chips} (topology {report.topology}: compiled here, not run)"
        return line if report.caveat is None else f"{line}\nnote: {report.caveat}"
    if count == 1:
        return f"{report.backend}  ({report.devices[0]})"
    first, last = (name.partition(" (")[0] for name in (report.devices[0], report.devices[-1]))
    return f"{report.backend}  {count} devices, {first} … {last} ({report.device_kind})"


def _dims(shape: tuple[int, ...] | None) -> str:
    return "[" + ",".join(str(d) for d in shape or ()) + "]"


def _per_device(report: InspectionReport) -> str:
    """A title's suffix saying XLA's figures are for one device of several."""
    return ", per device" if len(report.devices) > 1 else ""


def _stage_panel(
    report: InspectionReport, name: str, max_lines: int | None, metadata: bool, rerun: str | None
) -> RenderableType:
    stage = report.stage(name)
    title = _TITLES[name]
    if stage is None:
        return Panel(Text(_na(report, f"stages.{name}")), title=title, title_align="left")
    total = len(stage.text.splitlines())
    view = preview(name, stage.text, metadata=metadata, fold=max_lines is not None)
    lines = list(view.lines)
    shown = lines if max_lines is None else lines[:max_lines]
    body: list[RenderableType] = [_WrappedCode(shown, _LEXERS[name])]
    notes = []
    if len(shown) < len(lines):
        notes.append(f"… showing {len(shown)} of {len(lines)} lines.")
        inputs = f" {rerun}" if rerun is not None else " (with the same inputs)"
        notes.append(
            f"Pass --full, or run `jaxinspect {name} {report.target}{inputs}` for the whole text."
        )
    if view.hidden:
        notes.append(f"Hidden: {view.hidden} (--metadata shows them).")
    if notes:
        body.append(Text(" ".join(notes), style="yellow"))
    return Panel(Group(*body), title=f"{title} ({total} lines)", title_align="left")


class _WrappedCode:
    """IR lines highlighted and wrapped to the panel, each continuation marked ``↪``."""

    def __init__(self, lines: list[str], lexer: str) -> None:
        self._lines = lines
        self._lexer = lexer

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[RenderableType]:
        width = options.max_width
        wrapped = [piece for line in self._lines for piece in wrap_line(line, width)]
        yield Syntax("\n".join(wrapped), self._lexer, word_wrap=False)


def _ops_table(report: InspectionReport) -> RenderableType:
    # One small table per stage, side by side where they fit and stacked where they don't.
    tables = []
    for stage in report.stages:
        table = FitTable([Col(_TITLES[stage.name]), Col("n", justify="right")])
        for op, n in _op_rows(stage):
            table.add_row(op, n)
        tables.append(table)
    title = Text("operations per stage", style="bold")
    return Group(title, Columns([_Fixed(t) for t in tables], padding=(0, 2)))


class _Fixed:
    """A fitted table measured at its natural width, so ``Columns`` can place it."""

    def __init__(self, table: FitTable) -> None:
        self._table = table

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[RenderableType]:
        yield self._table

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self._table.natural_width(console, options)
        return Measurement(width, width)


def _op_rows(stage: StageText) -> list[tuple[str, str]]:
    rows = [(op, str(n)) for op, n in stage.op_counts[:OPS_PER_STAGE]]
    rest = stage.op_counts[OPS_PER_STAGE:]
    if rest:
        rows.append((f"… {len(rest)} more kinds", str(sum(n for _, n in rest))))
    return rows


def _cost_and_collectives(report: InspectionReport) -> RenderableType:
    """XLA's cost, then the collectives where the program has any (a sharded program)."""
    collectives = report.collectives
    if collectives is None or not collectives.items:
        return _cost_table(report)
    return Group(_cost_table(report), collectives_table(collectives))


def _cost_table(report: InspectionReport) -> RenderableType:
    table = _metric_table(f"cost (XLA cost_analysis of the compiled program{_per_device(report)})")
    cost = report.cost
    if cost is None:
        table.add_row("cost", *_na_cells(report, "cost"))
        return table
    rows = [
        ("flops", cost.flops, format_count),
        ("transcendentals", cost.transcendentals, format_count),
        ("bytes accessed", cost.bytes_accessed, format_bytes),
        ("arithmetic intensity", cost.arithmetic_intensity, lambda v: f"{v:.3g} flop/B"),
    ]
    for label, value, human in rows:
        path = "cost." + label.replace(" ", "_")
        if value is None:
            table.add_row(label, *_na_cells(report, path))
        else:
            table.add_row(label, human(value), "")
    if cost.optimal_seconds is not None:
        table.add_row("time estimate (XLA)", format_seconds(cost.optimal_seconds), "")
    _loop_aware_rows(report, table)
    return table


def _loop_aware_rows(report: InspectionReport, table: FitTable) -> None:
    """jaxinspect's loop-aware totals under JAX's own, labelled (``jaxinspect cost`` has more)."""
    aware = None if report.cost is None else report.cost.loop_aware
    if aware is None:
        table.add_row("loop-aware (jaxinspect)", *_na_cells(report, "cost.loop_aware"))
        return
    bound = _not_counted_note(aware.not_counted) if aware.lower_bound else ""
    table.add_row("loop-aware flops (jaxinspect)", format_count(aware.flops), bound)
    table.add_row("loop-aware transcendentals", format_count(aware.transcendentals), "")
    table.add_row("loop-aware bytes accessed", format_bytes(aware.bytes_accessed), "")


def _not_counted_note(not_counted: tuple[str, ...]) -> str:
    """``LOWER BOUND, not counted: 2 custom-call, 40 unanalysed (e.g. ...)``: kinds with counts,
    a few names; a TPU program can leave dozens out, and `jaxinspect cost` lists them all."""
    kinds: dict[str, int] = {}
    for item in not_counted:
        kind = item.rpartition("(")[2].rstrip(")")
        kinds[kind] = kinds.get(kind, 0) + 1
    if len(not_counted) <= 3:
        return "LOWER BOUND, not counted: " + ", ".join(not_counted)
    counts = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    names = ", ".join(item.rpartition(" (")[0] for item in not_counted[:3])
    return f"LOWER BOUND, not counted: {counts} (e.g. {names}; jaxinspect cost lists them)"


def _memory_table(report: InspectionReport) -> RenderableType:
    table = _metric_table(f"memory (buffer assignment, memory_analysis{_per_device(report)})")
    memory = report.memory
    if memory is None:
        table.add_row("memory", *_na_cells(report, "memory"))
        return table
    rows = [
        ("argument", "argument_bytes", memory.argument_bytes, ""),
        ("output", "output_bytes", memory.output_bytes, ""),
        ("temp", "temp_bytes", memory.temp_bytes, ""),
        ("alias", "alias_bytes", memory.alias_bytes, ""),
        ("generated code", "generated_code_bytes", memory.generated_code_bytes, ""),
    ]
    # The peak first, then XLA's figures, each saying what it counts (stages/memoryfit.py).
    for label, key, value, note in [*peak_rows(memory)[:1], *rows, *peak_rows(memory)[1:]]:
        if value is None:
            table.add_row(label, *_na_cells(report, f"memory.{key}"))
        else:
            table.add_row(label, format_bytes(value), note)
    if memory.capacity_bytes is not None:
        verdict = "" if memory.fits is None else ("fits" if memory.fits else "DOES NOT FIT")
        table.add_row(
            f"capacity ({report.device_kind})", format_bytes(memory.capacity_bytes), verdict
        )
    if memory.donated:
        table.add_row("donated (spec)", "", ", ".join(memory.donated))
    for alias in memory.aliases:
        source = alias.argument or f"parameter {alias.parameter}"
        table.add_row("input→output alias", "", f"{source} → {alias.output} ({alias.kind})")
    if memory.donated and not memory.aliases:
        table.add_row("input→output alias", "none", "XLA reused no donated buffer")
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
    if t.inputs is not None:
        table.add_row("inputs", t.inputs.source, t.inputs.summary)
    if t.caveat is None:
        return table
    # Under the table, not in its note column: a narrow terminal drops that column first.
    return Group(table, Text(f"note: {t.caveat}"))


def _metric_table(title: str) -> FitTable:
    # Values in the report's units (55.5 M, 5.39 MiB); exact integers are in the JSON.
    return FitTable(
        [
            Col("metric", kind="prose"),
            Col("value", justify="right"),
            Col("note", kind="prose", drop=1),
        ],
        title=title,
        boxed=True,
    )


def _na(report: InspectionReport, path: str) -> str:
    return f"n/a: {report.reason(path) or 'not reported'}"


def _na_cells(report: InspectionReport, path: str) -> tuple[str, str]:
    return "n/a", report.reason(path) or "not reported"
