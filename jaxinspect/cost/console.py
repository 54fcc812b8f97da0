"""Rich tables of a ``CostReport``: totals, per-op or grouped rows, loops, fusions, roofline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.cost.tables import (
    caption_rest,
    cost_table,
    data_movement_table,
    first_names,
    fusion_table,
    memory_table,
    reconciliation_table,
    roofline_table,
)
from jaxinspect.renderers.collectives import collectives_table
from jaxinspect.renderers.fit import Col
from jaxinspect.renderers.labels import shape_label, source_label
from jaxinspect.renderers.units import format_bytes, format_count, format_rate, format_seconds
from jaxinspect.stages.console import run_header

if TYPE_CHECKING:
    from jaxinspect.cost.report import CostReport
    from jaxinspect.xla.aggregate import CostGroup
    from jaxinspect.xla.breakdown import LoopInfo
    from jaxinspect.xla.roofline import RooflinePoint
    from jaxinspect.xla.xlacost import XlaCost


#: Rows of the main table, and of each detail table, when ``--top`` is not given.
MAIN_ROWS, DETAIL_ROWS = 10, 5


def render_cost(
    report: CostReport,
    *,
    by: str = "op",
    top: int | None = MAIN_ROWS,
    detail_top: int | None = DETAIL_ROWS,
) -> RenderableType:
    """Every section of the ``cost`` report.

    Args:
        report: The report.
        by: The main table: ``op``, or groups by ``line``, ``function`` or ``scope``.
        top: Rows of the main table and of the "not counted" groups (None: all).
        detail_top: Rows of the fusion and copy tables, and instructions named per
            "not counted" group (None: all).
    """
    parts: list[RenderableType | None] = [_header(report), _totals_table(report)]
    parts.append(reconciliation_table(report))
    if report.flag_groups:
        parts.append(_flags_table(report, top, detail_top))
    if report.program.loops:
        parts.append(_loops_table(report))
    if by == "op":
        parts.append(_ops_table(report, top))
    else:
        groups = {"line": report.by_line, "function": report.by_function}.get(by, report.by_scope)
        parts.append(_group_table(report, by, groups, top))
    parts += [fusion_table(report, detail_top), data_movement_table(report, detail_top)]
    parts += [measured_table(report), roofline_table(report), memory_table(report)]
    collectives = report.source.collectives
    if collectives is not None and collectives.items:
        parts.append(collectives_table(collectives))
    return Group(*[p for p in parts if p is not None])


def _header(report: CostReport) -> RenderableType:
    grid = run_header(report.source)
    if report.user_code is not None:
        roots = ", ".join(_short_path(r) for r in report.user_code.roots) or "(unknown)"
        origin = "--user-code" if report.user_code.chosen else "the target's folder"
        grid.add_row("your code", f"{roots}  ({origin})")
    return grid


def _short_path(path: str) -> str:
    """A root relative to the working directory when under it, else as given."""
    cwd = str(Path.cwd()) + "/"
    return ("./" + path[len(cwd) :]) if path.startswith(cwd) else path


def _totals_table(report: CostReport) -> RenderableType:
    proved = report.proved  # the lower bound, beside the estimate, when trips are assumed
    aware_title = "ASSUMED trips" if proved is not None else "loop-aware (jaxinspect)"
    columns = [Col("metric"), Col("XLA cost_analysis()", justify="right")]
    columns += [Col("lower bound", justify="right")] if proved is not None else []
    columns += [Col(aware_title, justify="right"), Col("per-op sum, loops once", justify="right")]
    table = cost_table("cost totals", columns)
    xla, aware, once = report.xla, report.program.loop_aware, report.program.counted_once
    rows = [
        ("flops", None if xla is None else xla.flops, "flops", format_count),
        (
            "transcendentals",
            None if xla is None else xla.transcendentals,
            "transcendentals",
            format_count,
        ),
        (
            "bytes accessed",
            None if xla is None else xla.bytes_accessed,
            "bytes_accessed",
            format_bytes,
        ),
    ]
    for label, raw, key, human in rows:
        cells = [label, "n/a" if raw is None else human(raw)]
        cells += [human(getattr(proved, key))] if proved is not None else []
        cells += [human(getattr(aware, key)), human(getattr(once, key))]
        table.add_row(*cells)
    notes = ["loop-aware: each while body x its known trip count (condition x trips+1)."]
    if report.assumed_trips:
        assumed = ", ".join(f"{a.loop} x {a.trips:,}" for a in report.assumed_trips)
        notes.append(f"ASSUMED trip counts (--assume-trips): {assumed}; an estimate.")
    if report.program.partitions > 1:
        notes.append(
            f"PER DEVICE: the program is split into {report.program.partitions} partitions."
        )
    if report.program.lower_bound:
        notes.append("LOWER BOUND: some work is not counted (see below).")
    table.caption = " ".join(notes)
    return table


def _flags_table(report: CostReport, top: int | None, names: int | None) -> RenderableType:
    lower = report.program.lower_bound
    title = "not counted / lower bound" if lower else "flagged"
    table = cost_table(
        title,
        [
            Col("kind"),
            Col("why", kind="prose"),
            Col("count", justify="right"),
            Col("instructions", kind="prose", drop=1),
        ],
    )
    table.title = Text(title, style="bold red" if lower else "bold yellow")
    for group in report.flag_groups[:top]:
        table.add_row(
            group.kind,
            group.reason,
            format_count(group.count),
            first_names(group.instructions, names),
        )
    caption_rest(table, len(report.flag_groups), top)
    return table


def _loops_table(report: CostReport) -> RenderableType:
    transc = any(loop.per_trip and loop.per_trip.transcendentals for loop in report.program.loops)
    columns = [
        Col("loop"),
        Col("trip count", kind="prose", justify="right"),
        Col("loop runs", justify="right", drop=5),
        Col("flops/trip", justify="right"),
        Col("bytes/trip", justify="right", drop=4),
    ]
    columns += [Col("transc./trip", justify="right", drop=5)] if transc else []
    columns += [Col("body", drop=6), Col("source", kind="prose", drop=1, unwrap_over=5)]
    table = cost_table("while loops", columns)
    for loop in report.program.loops:
        if loop.trip_count is not None:
            trips = format_count(loop.trip_count)
        elif loop.assumed_trips is not None:
            trips = f"{format_count(loop.assumed_trips)} (ASSUMED)"
        else:
            trips = "unknown"
        where = "" if loop.source is None else f"{loop.source.label} ({loop.source.function})"
        cells = [loop.name, trips, format_count(loop.runs), *_per_trip_cells(loop, transc)]
        table.add_row(*cells, loop.body, where)
    if report.unknown_loops:
        table.caption = Text(
            "unknown: no proved trip count, the loop counted once (one trip); totals are a "
            "lower bound and shares understate it; --assume-trips LOOP=N counts N trips.",
            style="yellow",
        )
    return table


def _per_trip_cells(loop: LoopInfo, transc: bool) -> list[str]:
    """One trip's FLOPs, bytes (and transcendentals): "≥" when some op is not counted."""
    cost = loop.per_trip
    if cost is None:
        return ["n/a", "n/a"] + (["n/a"] if transc else [])
    bound = "≥ " if loop.per_trip_lower_bound else ""
    cells = [bound + format_count(cost.flops), bound + format_bytes(cost.bytes_accessed)]
    return cells + ([bound + format_count(cost.transcendentals)] if transc else [])


def _basis(report: CostReport) -> str:
    return "loop-aware, ASSUMED trips" if report.assumed_trips else "loop-aware"


def _shares_caption(report: CostReport) -> str | None:
    """Under the ops and group tables: what the % column is a share of."""
    if report.assumed_trips:
        return "%: shares of the estimate with the assumed trip counts."
    if report.unknown_loops:
        loops = ", ".join(report.unknown_loops)
        return (
            f"%: shares of a LOWER BOUND: {loops} ran an unknown number of trips, counted "
            "once; --assume-trips LOOP=N gives shares of an estimate."
        )
    return None


def _ops_table(report: CostReport, top: int | None) -> RenderableType:
    roof = report.profile is not None
    rows = report.costly_ops
    shown = rows[:top]
    # Most programs have none: the column would only take width from the source lines.
    transc = any(op.total is not None and op.total.transcendentals for op in shown)
    # At 80 columns the op, its FLOPs, share, shape and source line stay; the sort key too.
    columns = [
        Col("op"),
        Col("kind", drop=5),
        Col("shape", drop=2),
        Col("runs", justify="right", drop=6),
        Col("flops", justify="right"),
        Col("%", justify="right"),
        Col("bytes", justify="right", drop=0 if report.sort == "bytes" else 3),
    ]
    measured = report.measured
    if measured is not None:
        # Measured time beside the model; its share and the rates it achieved go first.
        columns += [
            Col("measured", justify="right"),
            Col("t%", justify="right", drop=3),
            Col("FLOP/s", justify="right", drop=6),
            Col("B/s", justify="right", drop=6),
        ]
    columns += [Col("transc.", justify="right", drop=7)] if transc else []
    # kind, runs, transc. and flop/B go sooner than the source line wraps under each row.
    columns += [Col("source", kind="prose", drop=1, unwrap_over=5)]
    if roof:
        columns += [
            Col("flop/B", justify="right", drop=8),
            Col("bound", drop=4),
            Col("time ≥", justify="right", drop=4),
        ]
    table = cost_table(f"ops by {report.sort} ({_basis(report)})", columns)
    whole = report.program.loop_aware.flops
    points = dict(zip(report.program.ops, report.op_roofline, strict=True))
    times = (
        {} if measured is None else dict(zip(report.program.ops, measured.op_seconds, strict=True))
    )
    for op in shown:
        total = op.total
        kind = op.opcode if op.fusion_kind is None else op.fusion_kind
        if op.custom_call_target:
            kind += f" {op.custom_call_target}"
        cells = [op.name, kind, shape_label(op.shape), format_count(op.runs)]
        if total is None:
            # The transcendentals cell comes after the measured ones, below.
            cells += ["not counted", "", "—"]
        else:
            share = f"{100 * total.flops / whole:.1f}" if whole else ""
            cells += [format_count(total.flops), share, format_bytes(total.bytes_accessed)]
        if measured is not None:
            cells += _measured_cells(times.get(op), total, measured.total_s)
        if total is not None:
            cells += [format_count(total.transcendentals)] if transc else []
        elif transc:
            cells += ["—"]
        cells.append(source_label(op.source, op.created_by_xla))
        if roof:
            cells += _roofline_cells(points[op])
        table.add_row(*cells)
    hidden = len(report.program.ops) - len(rows)
    caption_rest(table, len(rows), top, hidden, _shares_caption(report))
    return table


def _measured_cells(seconds: float | None, total: XlaCost | None, all_s: float) -> list[str]:
    if not seconds:
        return ["—", "", "", ""]
    share = f"{100 * seconds / all_s:.1f}" if all_s else ""
    if total is None:
        return [format_seconds(seconds), share, "", ""]
    flops = format_rate(total.flops / seconds, "FLOP/s")
    return [
        format_seconds(seconds),
        share,
        flops,
        format_rate(total.bytes_accessed / seconds, "B/s"),
    ]


def measured_table(report: CostReport) -> RenderableType | None:
    """``--measure``: what the profiler saw, and how each static ranking agrees with it."""
    measured = report.measured
    if measured is None:
        return None
    table = cost_table(
        "measured (JAX's profiler; time per op, per program run)",
        [Col("metric", kind="prose"), Col("value", justify="right"), Col("note", kind="prose")],
    )
    coverage = measured.coverage
    profiled = measured.total_s / measured.profiled_call_median_s
    table.add_row("program runs traced", str(measured.program_runs), f"device {measured.device}")
    table.add_row(
        "cached call (median)", format_seconds(measured.call_median_s), "outside the profiler"
    )
    table.add_row(
        "under the profiler", format_seconds(measured.profiled_call_median_s), "its overhead shows"
    )
    table.add_row(
        "sum of op times",
        format_seconds(measured.total_s),
        ("" if coverage is None else f"{100 * coverage:.0f}% of the cached call, ")
        + f"{100 * profiled:.0f}% of a profiled one",
    )
    if measured.scale is not None:
        table.add_row(
            "sum, without the profiler",
            format_seconds(measured.total_s * measured.scale),
            f"jaxinspect's estimate: times x {measured.scale:.2f} (the calls' ratio)",
        )
    for name, rho in measured.agreement:
        label = {"flops": "FLOPs", "bytes": "bytes", "roofline": "roofline time"}[name]
        note = "Spearman, over the ops measured"
        if name == "roofline":  # the roofline's order depends on the profile: name it
            profile = report.profile
            note = "needs --device or --peak-*" if profile is None else f"{note}, on {profile.name}"
        value = "n/a" if rho is None else f"{rho:.2f}"
        table.add_row(f"rank agreement: {label}", value, note)
    return table


def _short(function: str) -> str:
    """``run.<locals>.step`` -> ``step``."""
    return function.rsplit(".", 1)[-1] if "<locals>" in function else function


def _group_time(seconds: float | None, all_s: float) -> list[str]:
    if not seconds:
        return ["—", ""]
    return [format_seconds(seconds), f"{100 * seconds / all_s:.1f}" if all_s else ""]


def _roofline_cells(point: RooflinePoint | None) -> list[str]:
    if point is None:
        return ["", "", ""]
    intensity = "" if point.intensity is None else f"{point.intensity:.3g}"
    bound = {"compute": "compute", "memory": "memory"}.get(point.bound, "-")
    return [intensity, bound, format_seconds(point.time_s)]


def _group_table(
    report: CostReport, by: str, groups: tuple[CostGroup, ...], top: int | None
) -> RenderableType:
    measured = report.measured
    columns = [
        Col(by, kind="prose", unwrap_over=2),  # opcodes, bytes... go before the key wraps
        Col("ops", justify="right", drop=3),
        Col("flops", justify="right"),
        Col("%", justify="right"),
    ]
    if measured is not None:  # beside the FLOPs: bytes and opcodes go first
        columns += [Col("measured", justify="right"), Col("t%", justify="right", drop=3)]
    columns += [
        Col("bytes", justify="right", drop=2),
        Col("transc.", justify="right", drop=4),
        Col("opcodes", kind="prose", drop=1),
    ]
    table = cost_table(f"cost by {by} ({_basis(report)})", columns)
    whole = report.program.loop_aware.flops
    for group in groups[:top]:
        share = f"{100 * group.flops / whole:.1f}" if whole else ""
        opcodes = ", ".join(f"{op}×{n}" for op, n in group.opcodes[:4])
        key = group.key  # the file relative to the current folder, as typed
        if by == "line" and group.function is not None:
            key = f"{group.key} {_short(group.function)}"
        cells = [key, str(group.ops), format_count(group.flops), share]
        if measured is not None:
            cells += _group_time(group.measured_s, measured.total_s)
        cells += [
            format_bytes(group.bytes_accessed),
            format_count(group.transcendentals),
            opcodes,
        ]
        table.add_row(*cells)
    caption_rest(table, len(groups), top, note=_shares_caption(report))
    return table
