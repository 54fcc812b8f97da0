"""The collectives of a compiled program: a table for the terminal and a JSON list."""

from __future__ import annotations

from typing import Any

from jaxinspect.jsonfields import encode
from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_bytes, format_count
from jaxinspect.xla.collectivemodel import CollectiveSummary


def collectives_to_list(summary: CollectiveSummary | None) -> list[dict[str, Any]] | None:
    """One object per kind of collective and device groups (``None`` before compilation).

    Each follows ``$defs/collective`` of ``schemas/collectives.schema.json``.
    """
    if summary is None:
        return None
    return encode(summary.items)  # type: ignore[no-any-return]


def collectives_table(summary: CollectiveSummary, *, per_device_note: bool = True) -> FitTable:
    """Op, count (loop trips applied), bytes per device, mesh axes and groups, async, line.

    When the terminal is narrow the source line goes first, then the async mark, the group
    size, and the groups (the axes say the same on a mesh); no cell is ever split.
    """
    total = format_bytes(summary.total_bytes)
    n = summary.total_count
    caption = f"{n} collective{'s' if n != 1 else ''} per run, {total} per device in all"
    if per_device_note:
        caption += " (bytes: the larger of operands and result, per execution, x count)"
    if summary.lower_bound:
        caption += "; count+: a loop with no proved trip count, counted once (a lower bound)"
    table = FitTable(
        [
            Col("collective"),
            Col("count", justify="right"),
            Col("bytes/device", justify="right"),
            Col("axes"),
            Col("size", justify="right", drop=2),
            Col("async", drop=3),
            Col("line", drop=4),
            Col("groups", kind="prose", drop=1),
        ],
        title="collectives (from the SPMD partitioner)",
        caption=caption,
    )
    for c in summary.items:
        count = format_count(c.count) + ("+" if c.trip_count_unknown else "")
        axes = "?" if c.axes is None else (",".join(c.axes) or "(none)")
        size = "" if c.group_size is None else str(c.group_size)
        line = "" if c.source is None else c.source.label
        asynchronous = "yes" if c.is_async else ""
        table.add_row(c.op, count, format_bytes(c.bytes), axes, size, asynchronous, line, c.groups)
    return table
