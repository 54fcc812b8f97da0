"""The TPU slices this libtpu compiles for, as a table for people at a terminal."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_bytes
from jaxinspect.reports.topologies import TopologiesReport


def render_topologies(report: TopologiesReport) -> RenderableType:
    """One row per slice: name, chips, chip kind, HBM per chip and in all."""
    table = FitTable(
        [
            Col("topology"),
            Col("devices", justify="right"),
            Col("chips", justify="right", drop=3),
            Col("chip", kind="prose"),
            Col("HBM/chip", justify="right"),
            Col("HBM total", justify="right", drop=1),
            Col("--device", drop=2),
        ],
        title=f"TPU slices libtpu {report.libtpu_version} compiles for (--topology NAME)",
    )
    for item in report.slices:
        per_chip = "?" if item.hbm_bytes is None else format_bytes(item.hbm_bytes)
        total = "?" if item.hbm_bytes is None else format_bytes(item.hbm_bytes * item.chips)
        row = (item.name, str(item.devices), str(item.chips), item.kind, per_chip, total)
        table.add_row(*row, item.profile or "")
    parts: list[RenderableType] = [table]
    if report.refused:
        parts.append(Text(f"refused by this libtpu: {', '.join(report.refused)}"))
    if report.sources:
        parts.append(Text(f"HBM per chip from {', '.join(report.sources)}"))
    parts.append(Text("Other shapes of these generations may work too: try --topology NAME."))
    return Group(*parts)
