"""Rich output of a ``MemoryReport``: the peak, a live-bytes sparkline, the buffers at the peak."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.labels import shape_label, source_label
from jaxinspect.renderers.units import format_bytes
from jaxinspect.stages.console import device_line

if TYPE_CHECKING:
    from jaxinspect.memory.report import MemoryPeak, MemoryReport, TimelinePoint

#: Rows of the buffer and step tables when ``--top`` is not given.
TOP_ROWS = 10
#: Eight heights of a sparkline cell, lowest first.
_BLOCKS = "▁▂▃▄▅▆▇█"
#: Short labels of XLA's figures (the JSON has the names).
_FIGURE_LABELS = {
    "live_range_peak": "live-range peak",
    "peak_memory_in_bytes": "peak_memory_in_bytes",
    "argument_size_in_bytes": "argument size",
    "output_size_in_bytes": "output size",
    "alias_size_in_bytes": "alias size",
    "temp_size_in_bytes": "temp size",
    "usage_report_total": "usage report total",
}
_PLURAL = {"parameter": "parameters", "constant": "constants"}
#: Width of the bars in the step table.
_BAR_WIDTH = 16


def render_memory(report: MemoryReport, *, top: int | None = TOP_ROWS) -> RenderableType:
    """Every section of the ``memory`` report; ``top`` rows per table (None: all)."""
    parts: list[RenderableType] = [_header(report)]
    peak = report.peak
    if peak is None:
        why = report.reason("memory.peak") or "the backend gave no buffer assignment"
        parts.append(Text(f"\nno buffer assignment: {why}", style="yellow"))
        return Group(*parts)
    per_device = " (per device)" if peak.partitions > 1 else ""
    parts += [
        Text(""),
        _summary(report, peak, per_device),
        Text(""),
        Text(f"live bytes over the schedule{per_device}", style="bold"),
        Sparkline(peak),
        Text(""),
        _buffers_table(peak, top),
        Text(""),
        _steps_table(peak, top),
        Text(""),
        _allocations_table(peak),
        Text(""),
        _figures_table(peak),
    ]
    return Group(*parts)


def _header(report: MemoryReport) -> RenderableType:
    src = report.source
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("target", src.target)
    if src.target.rpartition(":")[2] != src.function_name:
        grid.add_row("function", src.function_name)
    grid.add_row("backend", device_line(src))
    grid.add_row("jax / jaxlib", f"{src.jax_version} / {src.jaxlib_version}")
    return grid


def _summary(report: MemoryReport, peak: MemoryPeak, per_device: str) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    point = peak.peak_point
    where = point.instruction
    if peak.peak_instruction != point.instruction:
        where = f"{peak.peak_instruction} in {point.instruction}"
    line = source_label(peak.peak_source, created_by_xla=False)
    grid.add_row(
        "peak",
        f"{format_bytes(peak.peak_bytes)}{per_device} at step {peak.peak_step} of "
        f"{peak.steps}, while {where} runs" + (f" ({line})" if line else ""),
    )
    kinds: dict[str, int] = {}
    for buffer in peak.buffers:
        kinds[buffer.kind] = kinds.get(buffer.kind, 0) + buffer.bytes
    largest = sorted(kinds.items(), key=lambda kb: -kb[1])
    grid.add_row("made of", ", ".join(f"{format_bytes(b)} {_PLURAL.get(k, k)}" for k, b in largest))
    if report.fit is not None:
        fit = report.fit
        verdict = "" if fit.fits else "  DOES NOT FIT"
        grid.add_row(
            "fit",
            f"peak {format_bytes(fit.peak_bytes)} of {format_bytes(fit.capacity_bytes)} HBM "
            f"on {fit.device} ({100 * fit.fraction:.3g}%){verdict}",
        )
    elif report.profile is not None:
        grid.add_row("fit", report.reason("memory.fit") or "the profile has no capacity")
    return grid


class Sparkline:
    """Live bytes at each entry instruction, one cell per instruction (or per group of them,
    their maximum, when there are more than the console is wide), the peak marked below."""

    def __init__(self, peak: MemoryPeak) -> None:
        self.peak = peak

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[RenderableType]:
        points = _computing(self.peak)
        cells = max(1, min(len(points), options.max_width - 2))
        buckets = _buckets(points, cells)
        values = [max(p.live_bytes for p in bucket) for bucket in buckets]
        low, high = min(values), max(values)
        line = "".join(_block(v, low, high) for v in values)
        # A peak at the entry parameters (nothing computed grows past them) is at cell 0.
        peak_cell = next(
            (i for i, b in enumerate(buckets) if any(p is self.peak.peak_point for p in b)), 0
        )
        yield Text(line, style="cyan")
        yield Text(" " * peak_cell + "▲ peak", style="bold")
        per_cell = f", {len(points) / cells:.3g} per cell" if cells < len(points) else ""
        yield Text(
            f"{len(points)} entry instructions in schedule order{per_cell} (parameters left "
            f"out); ▁ {format_bytes(low)} … █ {format_bytes(high)}",
            style="dim",
        )

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def _computing(peak: MemoryPeak) -> tuple[TimelinePoint, ...]:
    """The timeline less the entry parameters: they only open live ranges, all at step 0."""
    points = tuple(p for p in peak.timeline if p.opcode != "parameter")
    return points or peak.timeline


def _buckets(points: Sequence[TimelinePoint], cells: int) -> list[Sequence[TimelinePoint]]:
    return [points[i * len(points) // cells : (i + 1) * len(points) // cells] for i in range(cells)]


def _block(value: int, low: int, high: int) -> str:
    if high == low:
        return _BLOCKS[-1]
    return _BLOCKS[round((value - low) / (high - low) * (len(_BLOCKS) - 1))]


def _buffers_table(peak: MemoryPeak, top: int | None) -> RenderableType:
    shown = peak.buffers if top is None else peak.buffers[:top]
    table = FitTable(
        [
            Col("bytes", justify="right"),
            Col("%", justify="right", drop=3),
            Col("kind", drop=2),
            Col("shape"),
            Col("buffer"),
            Col("source", kind="prose", drop=1, unwrap_over=3),
        ],
        title=f"buffers live at the peak ({len(peak.buffers)}, largest first)",
    )
    for buffer in shown:
        what = buffer.argument or buffer.instruction + (
            "" if buffer.index == "{}" else buffer.index
        )
        table.add_row(
            format_bytes(buffer.bytes),
            _percent(buffer.bytes, peak.peak_bytes),
            buffer.kind,
            shape_label(buffer.shape),
            what,
            source_label(buffer.source, buffer.created_by_xla),
        )
    notes = []
    if len(shown) < len(peak.buffers):
        notes.append(f"… {len(peak.buffers) - len(shown)} more; --top 0 shows all.")
    shared = [b for b in shown if b.shares]
    if shared:
        notes.append(
            "Written in place (counted once): "
            + "; ".join(f"{b.instruction} over {', '.join(b.shares)}" for b in shared[:3])
            + "."
        )
    if notes:
        table.caption = Text(" ".join(notes), style="yellow")
    return table


def _steps_table(peak: MemoryPeak, top: int | None) -> RenderableType:
    every = points = _computing(peak)
    if top is not None and len(points) > top:
        highest = sorted(points, key=lambda p: (-p.live_bytes, p.step))[:top]
        points = tuple(sorted(highest, key=lambda p: p.step))
    table = FitTable(
        [
            Col("step", justify="right"),
            Col("instruction"),
            Col("live", justify="right"),
            Col("", drop=2),
            Col("highest inside", drop=1),
        ],
        title="live bytes by step"
        + (f" (the {len(points)} highest of {len(every)})" if len(points) < len(every) else ""),
    )
    for point in points:
        filled = round(_BAR_WIDTH * point.live_bytes / peak.peak_bytes) if peak.peak_bytes else 0
        marker = " ◀ peak" if point is peak.peak_point else ""
        table.add_row(
            _steps(point),
            point.instruction,
            format_bytes(point.live_bytes),
            "█" * filled + marker.replace(" ", "\u00a0"),
            "" if point.at == point.instruction else point.at,
        )
    return table


def _steps(point: TimelinePoint) -> str:
    if point.first_step == point.step:
        return str(point.step)
    return f"{point.first_step}–{point.step}"


def _allocations_table(peak: MemoryPeak) -> RenderableType:
    # Other memory spaces (a TPU's vmem, smem) get a column; most programs have none.
    spaces = any(total.color for total in peak.by_kind)
    columns = [Col("kind"), Col("allocations", justify="right"), Col("bytes", justify="right")]
    if spaces:
        columns.insert(1, Col("memory"))
    table = FitTable(
        columns,
        title=f"XLA's allocations ({format_bytes(peak.allocated_bytes)} in the device's memory)",
    )
    for total in peak.by_kind:
        row = [total.kind, str(total.count), format_bytes(total.bytes)]
        if spaces:
            row.insert(1, "device" if total.color == 0 else f"color {total.color}")
        table.add_row(*row)
    if spaces:
        # A TPU's vmem temp (color 1) can dwarf the peak: say where it is counted.
        table.caption = (
            "color ≠ 0: a TPU core's on-chip memories (color 1 is vmem), not the device's "
            "HBM: not in the peak; XLA's peak_memory_in_bytes adds vmem (figures below)"
        )
    return table


def _figures_table(peak: MemoryPeak) -> RenderableType:
    table = FitTable(
        [
            Col("XLA's figure", kind="prose"),
            Col("XLA", justify="right"),
            Col("jaxinspect", justify="right"),
            Col("", drop=1),
            Col("how they relate", kind="prose"),
        ],
        title="XLA's own figures beside the buffer assignment's",
    )
    for figure in peak.figures:
        table.add_row(
            _FIGURE_LABELS.get(figure.name, figure.name),
            "n/a" if figure.bytes is None else format_bytes(figure.bytes),
            "n/a" if figure.ours is None else format_bytes(figure.ours),
            "=" if figure.agrees else "≠",
            figure.note,
        )
    return table


def _percent(part: int, whole: int) -> str:
    # A peak of 0 bytes (zero-size arrays, a function that returns nothing) has no shares.
    return f"{100 * part / whole:.1f}" if whole else "-"
