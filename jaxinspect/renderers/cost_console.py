"""Rich tables of a ``CostReport``: totals, per-op or grouped rows, loops, fusions, roofline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from jaxinspect.renderers.cost_tables import (
    data_movement_table,
    format_time,
    fusion_table,
    memory_table,
    roofline_table,
)
from jaxinspect.units import format_bytes, format_count

if TYPE_CHECKING:
    from jaxinspect.costmodel.aggregate import CostGroup
    from jaxinspect.costmodel.report import CostReport
    from jaxinspect.costmodel.roofline import RooflinePoint


def render_cost(report: CostReport, *, by: str = "op", top: int | None = 20) -> RenderableType:
    """Every section of the ``cost`` report; ``by`` picks the main table, ``top`` its rows."""
    parts: list[RenderableType | None] = [_header(report), _totals_table(report)]
    if report.program.flags:
        parts.append(_flags_table(report))
    if report.program.loops:
        parts.append(_loops_table(report))
    if by == "op":
        parts.append(_ops_table(report, top))
    else:
        groups = {"line": report.by_line, "function": report.by_function}.get(by, report.by_scope)
        parts.append(_group_table(report, by, groups, top))
    parts += [fusion_table(report, top), data_movement_table(report, top)]
    parts += [roofline_table(report), memory_table(report)]
    return Group(*[p for p in parts if p is not None])


def _header(report: CostReport) -> RenderableType:
    src = report.source
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("target", src.target)
    grid.add_row("function", src.function_name)
    grid.add_row("backend", f"{src.backend}  ({', '.join(src.devices)})")
    grid.add_row("jax / jaxlib", f"{src.jax_version} / {src.jaxlib_version}")
    return grid


def _totals_table(report: CostReport) -> RenderableType:
    table = Table(title="cost totals", title_justify="left")
    table.add_column("metric")
    table.add_column("XLA cost_analysis()", justify="right")
    table.add_column("loop-aware (jaxinspect)", justify="right")
    table.add_column("per-op sum, loops once", justify="right")
    xla, aware, once = report.xla, report.program.loop_aware, report.program.counted_once
    rows = [
        ("flops", None if xla is None else xla.flops, aware.flops, once.flops, format_count),
        (
            "transcendentals",
            None if xla is None else xla.transcendentals,
            aware.transcendentals,
            once.transcendentals,
            format_count,
        ),
        (
            "bytes accessed",
            None if xla is None else xla.bytes_accessed,
            aware.bytes_accessed,
            once.bytes_accessed,
            format_bytes,
        ),
    ]
    for label, raw, loop_aware, counted_once, human in rows:
        table.add_row(
            label, "n/a" if raw is None else human(raw), human(loop_aware), human(counted_once)
        )
    notes = ["loop-aware: each while body x its known trip count (condition x trips+1)."]
    if report.program.partitions > 1:
        notes.append(
            f"PER DEVICE: the program is split into {report.program.partitions} partitions."
        )
    if report.program.lower_bound:
        notes.append("LOWER BOUND: some work is not counted (see below).")
    table.caption = " ".join(notes)
    table.caption_justify = "left"
    return table


def _flags_table(report: CostReport) -> RenderableType:
    table = Table(title="not counted / lower bound", title_justify="left", title_style="bold red")
    for column in ("kind", "instruction", "computation", "why"):
        table.add_column(column, overflow="fold")
    for flag in report.program.flags:
        table.add_row(flag.kind, flag.instruction, flag.computation, flag.detail)
    return table


def _loops_table(report: CostReport) -> RenderableType:
    table = Table(title="while loops", title_justify="left")
    for column in ("loop", "trip count", "loop runs", "body", "source"):
        table.add_column(
            column, justify="right" if "runs" in column or "trip" in column else "left"
        )
    for loop in report.program.loops:
        trips = "unknown (counted once)" if loop.trip_count is None else f"{loop.trip_count:,}"
        where = "" if loop.source is None else f"{loop.source.label} ({loop.source.function})"
        table.add_row(loop.name, trips, f"{loop.runs:,}", loop.body, where)
    return table


def _ops_table(report: CostReport, top: int | None) -> RenderableType:
    roof = report.profile is not None
    table = Table(title=f"ops by {report.sort} (loop-aware)", title_justify="left")
    columns = ["op", "kind", "shape", "runs", "flops", "%", "bytes", "transc.", "source"]
    for column in columns + (["flop/B", "bound", "time ≥"] if roof else []):
        table.add_column(column, justify="right" if column in _NUMERIC else "left", overflow="fold")
    whole = report.program.loop_aware.flops
    points = dict(zip(report.program.ops, report.op_roofline, strict=True))
    rows = report.costly_ops
    for op in rows[:top]:
        total = op.total
        kind = op.opcode if op.fusion_kind is None else op.fusion_kind
        if op.custom_call_target:
            kind += f" {op.custom_call_target}"
        where = "" if op.source is None else f"{op.source.label} {_short(op.source.function)}"
        cells = [op.name, kind, op.shape.split("{")[0], f"{op.runs:,}"]
        if total is None:
            cells += ["not counted", "", "not counted", "", where]
        else:
            share = f"{100 * total.flops / whole:.1f}" if whole else ""
            cells += [
                format_count(total.flops),
                share,
                format_bytes(total.bytes_accessed),
                format_count(total.transcendentals),
                where,
            ]
        if roof:
            cells += _roofline_cells(points[op])
        table.add_row(*cells)
    hidden = len(report.program.ops) - len(rows)
    _caption_rest(table, len(rows), top, hidden)
    return table


def _short(function: str) -> str:
    """``run.<locals>.step`` -> ``step``."""
    return function.rsplit(".", 1)[-1] if "<locals>" in function else function


_NUMERIC = frozenset({"runs", "flops", "%", "bytes", "transc.", "ops"})


def _roofline_cells(point: RooflinePoint | None) -> list[str]:
    if point is None:
        return ["", "", ""]
    intensity = "" if point.intensity is None else f"{point.intensity:.3g}"
    bound = {"compute": "compute", "memory": "memory"}.get(point.bound, "-")
    return [intensity, bound, format_time(point.time_s)]


def _group_table(
    report: CostReport, by: str, groups: tuple[CostGroup, ...], top: int | None
) -> RenderableType:
    table = Table(title=f"cost by {by} (loop-aware)", title_justify="left")
    for column in (by, "ops", "flops", "%", "bytes", "transc.", "opcodes"):
        table.add_column(column, justify="right" if column in _NUMERIC else "left", overflow="fold")
    whole = report.program.loop_aware.flops
    for group in groups[:top]:
        share = f"{100 * group.flops / whole:.1f}" if whole else ""
        opcodes = ", ".join(f"{op}×{n}" for op, n in group.opcodes[:4])
        key = group.key
        if by == "line" and group.file is not None:
            key = f"{Path(group.file).name}:{group.line} {_short(group.function or '')}"
        elif by == "function" and group.function is not None:
            key = f"{group.function} ({Path(group.file or '').name})"
        table.add_row(
            key,
            str(group.ops),
            format_count(group.flops),
            share,
            format_bytes(group.bytes_accessed),
            format_count(group.transcendentals),
            opcodes,
        )
    _caption_rest(table, len(groups), top)
    return table


def _caption_rest(table: Table, count: int, top: int | None, hidden: int = 0) -> None:
    notes = []
    if top is not None and count > top:
        notes.append(f"… {count - top} more rows; --top 0 shows all.")
    if hidden:
        notes.append(f"{hidden} zero-cost ops (tuples, constants...) hidden; JSON lists all.")
    if notes:
        table.caption = Text(" ".join(notes), style="yellow")
        table.caption_justify = "left"
