"""The secondary tables of the ``cost`` report: fusions, data movement, roofline, memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.labels import shape_label, source_label
from jaxinspect.renderers.units import format_bytes, format_count, format_rate, format_seconds
from jaxinspect.stages.memoryfit import peak_rows

if TYPE_CHECKING:
    from jaxinspect.cost.report import CostReport

#: Printed under every roofline table.
ROOFLINE_CAPTION = (
    "A model, not a measurement: peak FLOP/s or peak bandwidth, whichever binds; "
    "times are lower bounds."
)


def cost_table(title: str, columns: list[Col] | tuple[Col, ...]) -> FitTable:
    """The report's table style: a rule under the header, no outer frame (half the lines)."""
    return FitTable(columns, title=title)


def caption_rest(
    table: FitTable, count: int, top: int | None, hidden: int = 0, note: str | None = None
) -> None:
    """Say how many rows ``top`` left out (and how many zero-cost ones were hidden); ``note``
    first, when the table's figures need one."""
    notes = [] if note is None else [note]
    if top is not None and count > top:
        notes.append(f"… {count - top} more rows; --top 0 shows all.")
    if hidden:
        notes.append(f"{hidden} zero-cost ops (tuples, constants...) hidden; JSON lists all.")
    if notes:
        table.caption = Text(" ".join(notes), style="yellow")


def first_names(names: tuple[str, ...], top: int | None) -> str:
    """``a, b, c … +7 more`` (all of them when ``top`` is None)."""
    shown = names if top is None else names[:top]
    rest = len(names) - len(shown)
    return ", ".join(shown) + (f" … +{rest} more" if rest else "")


def fusion_table(report: CostReport, top: int | None) -> RenderableType | None:
    """Each fusion with its kind, member ops and operand/output bytes."""
    if not report.fusions:
        return None
    kinds = ", ".join(f"{kind}: {n}" for kind, n in report.fusion_kinds)
    table = cost_table(
        f"fusions ({len(report.fusions)}; {kinds})",
        [
            Col("fusion"),
            Col("kind", drop=3),
            Col("fused ops", kind="prose", drop=4),
            Col("in", justify="right", drop=2),
            Col("out", justify="right", drop=2),
            Col("runs", justify="right", drop=1),
            Col("flops", justify="right"),
        ],
    )
    for op in report.fusions[:top]:
        members = ", ".join(f"{name}×{n}" for name, n in op.fused_ops[:_MEMBERS])
        if len(op.fused_ops) > _MEMBERS:
            members += f" +{len(op.fused_ops) - _MEMBERS} kinds"
        flops = "not counted" if op.total is None else format_count(op.total.flops)
        table.add_row(
            op.name,
            str(op.fusion_kind),
            members,
            format_bytes(op.input_bytes),
            format_bytes(op.output_bytes),
            format_count(op.runs),
            flops,
        )
    caption_rest(table, len(report.fusions), top)
    return table


#: Kinds of fused op named per fusion row (the JSON has them all).
_MEMBERS = 3


def data_movement_table(report: CostReport, top: int | None) -> RenderableType | None:
    """Copies, transposes and custom calls: where time hides without FLOPs."""
    ops = report.data_movement + report.custom_calls
    if not ops:
        return None
    table = cost_table(
        "copies, transposes and custom calls",
        [
            Col("op"),
            Col("opcode", drop=2),
            Col("target", drop=3),
            Col("shape"),
            Col("bytes", justify="right"),
            Col("runs", justify="right", drop=4),
            Col("source", kind="prose", drop=1),
        ],
    )
    for op in ops[:top]:
        moved = "not counted" if op.total is None else format_bytes(op.total.bytes_accessed)
        where = source_label(op.source, op.created_by_xla)
        table.add_row(
            op.name,
            op.opcode,
            op.custom_call_target or "",
            shape_label(op.shape),
            moved,
            format_count(op.runs),
            where,
        )
    caption_rest(table, len(ops), top)
    return table


def reconciliation_table(report: CostReport) -> RenderableType | None:
    """Why the per-op sum (every op once) differs from ``cost_analysis()``, cause by cause."""
    found = report.program.reconciliation
    if found is None:
        return None
    table = cost_table(
        "per-op sum against XLA's cost_analysis()",
        [
            Col("metric"),
            Col("cost_analysis()", justify="right"),
            Col("backend's model", justify="right"),
            Col("one by one", justify="right"),
            Col("per-op sum", justify="right"),
        ],
    )
    model, alone = found.backend_model, found.one_by_one
    for label, key, human in _RECONCILED:
        table.add_row(
            label,
            human(getattr(found.backend, key)),
            "n/a" if model is None else _signed(-getattr(model, key), human),
            "n/a" if alone is None else _signed(-getattr(alone, key), human),
            human(getattr(found.counted_once, key)),
        )
    table.caption = (
        "backend's model: cost_analysis() less XLA's generic HloCostAnalysis of the whole "
        "module, the model of the per-op figures (a TPU topology's are costed through the CPU "
        "client). one by one: the whole module less the per-op sum: "
        f"{found.not_counted} op(s) not counted (operands and outputs "
        f"{format_bytes(found.not_counted_io_bytes)}; XLA adds -1 for each into a module) and "
        "instructions whose figure alone differs from theirs in the module."
    )
    return table


_RECONCILED = (
    ("flops", "flops", format_count),
    ("transcendentals", "transcendentals", format_count),
    ("bytes accessed", "bytes_accessed", format_bytes),
)


def _signed(value: float, human: Callable[[float], str]) -> str:
    """``+1.2 MiB``, ``-8``, ``0``: a step from one column to the next."""
    if not value:
        return "0"
    return ("+" if value > 0 else "-") + human(abs(value))


def roofline_table(report: CostReport) -> RenderableType | None:
    """The whole program on the device profile's roofline."""
    profile, point = report.profile, report.program_roofline
    if profile is None or point is None:
        return None
    table = cost_table(
        f"roofline model: {profile.description}",
        [Col("metric", kind="prose"), Col("value", kind="prose")],
    )
    peaks = ", ".join(f"{t} {format_rate(v, 'FLOP/s')}" for t, v in profile.peak_flops)
    intensity = "n/a" if point.intensity is None else f"{point.intensity:.3g} flop/B"
    rows = [
        ("peaks", peaks),
        ("bandwidth", format_rate(profile.bandwidth_bytes_s, "B/s")),
        ("program intensity (loop-aware)", intensity),
        (f"ridge point ({point.peak_dtype})", f"{point.ridge:.3g} flop/B"),
        ("program bound", point.bound),
        ("time ≥ (program totals)", format_seconds(point.time_s)),
        ("time ≥ (sum of per-op bounds)", format_seconds(report.roofline_sum_s or 0.0)),
        ("source of the figures", profile.source),
    ]
    for label, value in rows:
        table.add_row(label, value)
    table.caption = ROOFLINE_CAPTION
    return table


def memory_table(report: CostReport) -> RenderableType:
    """Every ``CompiledMemoryStats`` field, the peak estimate and the fit on the device."""
    table = cost_table(
        "memory (buffer assignment, memory_analysis)",
        [Col("field", kind="prose"), Col("size", justify="right"), Col("note", kind="prose")],
    )
    memory = report.memory
    if memory is None:
        table.add_row("memory", "n/a", report.source.reason("memory") or "not reported")
        return table
    missing: dict[str, list[str]] = {}  # reason -> fields: one row per reason
    derived_is_estimate = report.peak is not None and report.peak.source == "derived"
    for label, key in _MEMORY_ROWS:
        value = getattr(memory, key)
        if value is None:
            reason = report.source.reason(f"memory.{key}") or "not reported by this backend"
            missing.setdefault(reason, []).append(label)
        else:
            table.add_row(label, format_bytes(value), "")
    for reason, labels in missing.items():
        table.add_row(_field_names(labels), "n/a", reason)
    # The peak and XLA's figures beside it, each saying what it counts (as `stages` shows them).
    for label, key, value, note in peak_rows(memory):
        if key == "derived_peak_bytes" and derived_is_estimate:
            continue  # the peak estimate row below shows the same figure
        if value is None:
            table.add_row(label, "n/a", report.source.reason(f"memory.{key}") or "not reported")
        else:
            table.add_row(label, format_bytes(value), note)
    if report.peak is not None and report.peak.source != "jaxinspect":  # else the peak row
        peak = report.peak
        table.add_row(f"peak estimate ({peak.source})", format_bytes(peak.bytes), peak.reason)
    if report.fit is not None and report.profile is not None:
        verdict = "fits" if report.fit.fits else "DOES NOT FIT"
        table.add_row(
            f"fit on {report.profile.name}",
            format_bytes(report.fit.capacity_bytes),
            f"{verdict}: {100 * report.fit.fraction:.3g}% of capacity",  # 0.00169%, not 0.00%
        )
    return table


def _field_names(labels: list[str]) -> str:
    """``host_*`` for all the host fields, else the labels themselves."""
    if len(labels) > 1 and all(label.startswith("host ") for label in labels):
        return f"host_* ({len(labels)} fields)"
    return ", ".join(labels)


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
)
