"""The report's sortable tables (ops, buffers at the peak), kept as wide as their box.

A cell's text may be folded (a tuple shape as ``(5 elements)``, layouts left out, a long text
cut with ``…``); its full text is then the cell's ``title``, shown on hover, and the JSON of
``jaxinspect cost`` has it whole. A tuple-shaped all-reduce made lm_step's op table 2,085 px
wide, the FLOPs and source columns off-screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from jaxinspect.cost.report import CostReport
from jaxinspect.memory.report import MemoryPeak
from jaxinspect.renderers.labels import shape_label, source_label
from jaxinspect.renderers.units import format_bytes, format_count, format_seconds
from jaxinspect.xla.breakdown import OpCost

#: Characters of a folded cell's text; the CSS cuts at about the same width.
FOLD_CHARS = 36


@dataclass(frozen=True, slots=True)
class Cell:
    """One table cell: its text, the value its column sorts on, and what shows on hover.

    Attributes:
        text: What the cell shows.
        value: The sort key; ``None`` sorts last in either direction (a figure XLA does not
            give: "not counted" stays under the counted ops however the column is sorted).
        title: The full text when ``text`` is folded.
        wrap: The text may wrap at its spaces (source lines), rather than widen the table.
    """

    text: str
    value: float | str | None
    title: str | None = None
    wrap: bool = False


def folded(text: str, short: str | None = None) -> Cell:
    """``short`` (or ``text``) cut to :data:`FOLD_CHARS`, with ``text`` on hover if changed."""
    shown = text if short is None else short
    if len(shown) > FOLD_CHARS:
        shown = shown[: FOLD_CHARS - 1] + "…"
    return Cell(shown, text, None if shown == text else text)


def shape_cell(shape: str) -> Cell:
    """An HLO shape without layouts, a long tuple as its element count; whole on hover."""
    return folded(shape, shape_label(shape))


def sortable_table(
    head: Sequence[str], rows: Sequence[tuple[str | None, Sequence[Cell]]], name: str
) -> str:
    """A table the report's script sorts by a click on a heading; ``rows`` are ``(op, cells)``
    pairs, a row with an op showing that op's details when clicked."""
    ths = "".join(f'<th data-col="{i}">{escape(h)}</th>' for i, h in enumerate(head))
    trs = []
    for op, cells in rows:
        attr = f' data-op="{escape(op)}"' if op else ""
        trs.append(f"<tr{attr}>{''.join(_td(c) for c in cells)}</tr>")
    return (
        f'<div class="scroll"><table class="sortable" id="t-{name}"><thead><tr>{ths}</tr>'
        f"</thead><tbody>{''.join(trs)}</tbody></table></div>"
    )


def _td(cell: Cell) -> str:
    value = "" if cell.value is None else escape(str(cell.value))
    attrs = f' data-v="{value}"'
    if cell.title is not None:
        attrs += f' class="fold" title="{escape(cell.title)}"'
    elif cell.wrap:
        attrs += ' class="wrap"'
    return f"<td{attrs}>{escape(cell.text)}</td>"


def op_table(cost: CostReport, top: int | None = None, name: str = "ops") -> str:
    """Every op with a cost (the first ``top``), in FLOPs order (not counted ones last),
    shapes folded; ``name`` makes the table's id (``t-NAME``)."""
    measured = cost.measured
    times = (
        {} if measured is None else dict(zip(cost.program.ops, measured.op_seconds, strict=True))
    )
    head = ["op", "kind", "shape", "runs", "FLOPs", "bytes", "source"]
    head += ["measured"] if measured is not None else []
    rows = []
    for op in cost.costly_ops[:top]:
        cells = _op_cells(op)
        if measured is not None:
            seconds = times.get(op)
            cells.append(Cell("—", None) if not seconds else Cell(format_seconds(seconds), seconds))
        rows.append((op.name, cells))
    return sortable_table(head, rows, name)


def _op_cells(op: OpCost) -> list[Cell]:
    total = op.total
    kind = op.opcode if op.fusion_kind is None else op.fusion_kind
    if op.custom_call_target:
        kind += f" {op.custom_call_target}"
    source = source_label(op.source, op.created_by_xla)
    return [
        folded(op.name),
        folded(kind),
        shape_cell(op.shape),
        Cell(str(op.runs), op.runs),
        Cell("not counted", None)
        if total is None
        else Cell(format_count(total.flops), total.flops),
        Cell("—", None)
        if total is None
        else Cell(format_bytes(total.bytes_accessed), total.bytes_accessed),
        Cell(source, source, wrap=True),
    ]


def line_table(cost: CostReport) -> str:
    """Loop-aware totals per source line: the file relative to the current folder, the
    function, and with ``--measure`` the measured time of the ops on the line."""
    measured = cost.measured
    head = ["line", "function", "FLOPs", "bytes", "ops"]
    head += ["measured"] if measured is not None else []
    rows = []
    for group in cost.by_line:
        cells = [
            folded(group.key),
            Cell(group.function or "", group.function or ""),
            Cell(format_count(group.flops), group.flops),
            Cell(format_bytes(group.bytes_accessed), group.bytes_accessed),
            Cell(str(group.ops), group.ops),
        ]
        if measured is not None:
            seconds = group.measured_s
            cells.append(Cell("—", None) if not seconds else Cell(format_seconds(seconds), seconds))
        rows.append((None, cells))
    return sortable_table(head, rows, "lines")


def loop_table(cost: CostReport) -> str:
    """Each while loop: its trip count (proved, ASSUMED, or unknown) and the cost of one trip."""
    rows = []
    for loop in cost.program.loops:
        if loop.trip_count is not None:
            trips = Cell(format_count(loop.trip_count), loop.trip_count)
        elif loop.assumed_trips is not None:
            trips = Cell(f"{format_count(loop.assumed_trips)} (ASSUMED)", loop.assumed_trips)
        else:
            trips = Cell("unknown (counted once)", None)
        per_trip = loop.per_trip
        bound = "≥ " if loop.per_trip_lower_bound else ""
        source = source_label(loop.source, created_by_xla=False)
        cells = [
            folded(loop.name),
            trips,
            Cell(str(loop.runs), loop.runs),
            Cell("—", None)
            if per_trip is None
            else Cell(bound + format_count(per_trip.flops), per_trip.flops),
            Cell("—", None)
            if per_trip is None
            else Cell(bound + format_bytes(per_trip.bytes_accessed), per_trip.bytes_accessed),
            Cell(source, source, wrap=True),
        ]
        rows.append((loop.name, cells))
    head = ["loop", "trip count", "loop runs", "FLOPs / trip", "bytes / trip", "source"]
    return sortable_table(head, rows, "loops")


def peak_table(peak: MemoryPeak, name: str = "peak", top: int | None = None) -> str:
    """The buffers live at the peak (the ``top`` largest); a parameter named by its argument
    (``params['w1']``), as the graph and ``jaxinspect memory`` name it, with its instruction
    on hover. ``name`` makes the table's id (``t-NAME``)."""
    rows = []
    for b in peak.buffers[:top]:
        label = Cell(b.argument, b.argument, b.instruction) if b.argument else folded(b.instruction)
        source = source_label(b.source, b.created_by_xla)
        cells = [
            label,
            Cell(b.kind, b.kind),
            shape_cell(b.shape),
            Cell(format_bytes(b.bytes), b.bytes),
            Cell(source, source, wrap=True),
        ]
        rows.append((b.instruction, cells))
    return sortable_table(["buffer", "kind", "shape", "bytes", "source"], rows, name)
