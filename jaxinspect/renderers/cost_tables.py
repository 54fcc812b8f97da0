"""The secondary tables of the ``cost`` report: fusions, data movement, roofline, memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.table import Table

from jaxinspect.units import format_bytes, format_count, format_seconds

if TYPE_CHECKING:
    from jaxinspect.costmodel.report import CostReport

#: Printed under every roofline table.
ROOFLINE_CAPTION = (
    "A model, not a measurement: peak FLOP/s or peak bandwidth, whichever binds; "
    "times are lower bounds."
)


def format_rate(value: float, unit: str) -> str:
    """``3.35e12, "B/s"`` -> ``3.35 TB/s`` (decimal prefixes, as datasheets use)."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_time(seconds: float) -> str:
    """Seconds down to nanoseconds (roofline bounds of small ops are tiny)."""
    if 0 < seconds < 1e-6:
        return f"{seconds * 1e9:.3g} ns"
    return format_seconds(seconds)


def fusion_table(report: CostReport, top: int | None) -> RenderableType | None:
    """Each fusion with its kind, member ops and operand/output bytes."""
    if not report.fusions:
        return None
    kinds = ", ".join(f"{kind}: {n}" for kind, n in report.fusion_kinds)
    table = Table(title=f"fusions ({len(report.fusions)}; {kinds})", title_justify="left")
    for column in ("fusion", "kind", "fused ops", "in", "out", "runs", "flops"):
        table.add_column(
            column,
            justify="right" if column in ("in", "out", "runs", "flops") else "left",
            overflow="fold",
        )
    for op in report.fusions[:top]:
        members = ", ".join(f"{name}×{n}" for name, n in op.fused_ops)
        flops = "not counted" if op.total is None else format_count(op.total.flops)
        table.add_row(
            op.name,
            str(op.fusion_kind),
            members,
            format_bytes(op.input_bytes),
            format_bytes(op.output_bytes),
            f"{op.runs:,}",
            flops,
        )
    return table


def data_movement_table(report: CostReport, top: int | None) -> RenderableType | None:
    """Copies, transposes and custom calls: where time hides without FLOPs."""
    ops = report.data_movement + report.custom_calls
    if not ops:
        return None
    table = Table(title="copies, transposes and custom calls", title_justify="left")
    for column in ("op", "opcode", "target", "shape", "bytes", "runs", "source"):
        table.add_column(column, overflow="fold")
    for op in ops[:top]:
        moved = "not counted" if op.total is None else format_bytes(op.total.bytes_accessed)
        where = "" if op.source is None else f"{op.source.label} {op.source.function}"
        table.add_row(
            op.name,
            op.opcode,
            op.custom_call_target or "",
            op.shape.split("{")[0],
            moved,
            f"{op.runs:,}",
            where,
        )
    return table


def roofline_table(report: CostReport) -> RenderableType | None:
    """The whole program on the device profile's roofline."""
    profile, point = report.profile, report.program_roofline
    if profile is None or point is None:
        return None
    table = Table(title=f"roofline model: {profile.description}", title_justify="left")
    table.add_column("metric")
    table.add_column("value")
    peaks = ", ".join(f"{t} {format_rate(v, 'FLOP/s')}" for t, v in profile.peak_flops)
    intensity = "n/a" if point.intensity is None else f"{point.intensity:.3g} flop/B"
    rows = [
        ("peaks", peaks),
        ("bandwidth", format_rate(profile.bandwidth_bytes_s, "B/s")),
        ("program intensity (loop-aware)", intensity),
        (f"ridge point ({point.peak_dtype})", f"{point.ridge:.3g} flop/B"),
        ("program bound", point.bound),
        ("time ≥ (program totals)", format_time(point.time_s)),
        ("time ≥ (sum of per-op bounds)", format_time(report.roofline_sum_s or 0.0)),
        ("source of the figures", profile.source),
    ]
    for label, value in rows:
        table.add_row(label, value)
    table.caption = ROOFLINE_CAPTION
    table.caption_justify = "left"
    return table


def memory_table(report: CostReport) -> RenderableType:
    """Every ``CompiledMemoryStats`` field, the peak estimate and the fit on the device."""
    table = Table(title="memory (compiled memory_analysis)", title_justify="left")
    table.add_column("field")
    table.add_column("bytes", justify="right")
    table.add_column("", overflow="fold")
    memory = report.memory
    if memory is None:
        table.add_row("memory", "n/a", report.source.reason("memory") or "not reported")
        return table
    for label, key in _MEMORY_ROWS:
        value = getattr(memory, key)
        if value is None:
            reason = report.source.reason(f"memory.{key}") or "not reported by this backend"
            table.add_row(label, "n/a", reason)
        else:
            table.add_row(label, f"{value:,}", format_bytes(value))
    if report.peak is not None:
        table.add_row(
            f"peak estimate ({report.peak.source})", f"{report.peak.bytes:,}", report.peak.reason
        )
    if report.fit is not None and report.profile is not None:
        verdict = "fits" if report.fit.fits else "DOES NOT FIT"
        table.add_row(
            f"fit on {report.profile.name}",
            f"{report.fit.capacity_bytes:,}",
            f"{verdict}: {100 * report.fit.fraction:.2f}% of capacity",
        )
    return table


_MEMORY_ROWS = (
    ("argument", "argument_bytes"),
    ("output", "output_bytes"),
    ("temp", "temp_bytes"),
    ("alias", "alias_bytes"),
    ("generated code", "generated_code_bytes"),
    ("host argument", "host_argument_bytes"),
    ("host output", "host_output_bytes"),
    ("host temp", "host_temp_bytes"),
    ("host alias", "host_alias_bytes"),
    ("host generated code", "host_generated_code_bytes"),
    ("peak (JAX)", "peak_bytes"),
    ("arg+out+temp-alias (jaxinspect)", "derived_peak_bytes"),
)
