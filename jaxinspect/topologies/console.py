"""The TPU slices this libtpu compiles for, as a table for people at a terminal."""

from __future__ import annotations

import re

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_bytes
from jaxinspect.topologies.report import TopologiesReport


def render_topologies(report: TopologiesReport) -> RenderableType:
    """One row per slice (name, chips, chip kind, HBM per chip and in all), then one per GPU
    model (name, kind, HBM, bandwidth, compute capability), then what is missing."""
    parts: list[RenderableType] = []
    if report.libtpu_version is not None:
        parts += _slices(report)
    if report.gpus:
        parts += _gpus(report)
    parts += [Text(note) for note in report.notes]
    return Group(*parts)


def _gpus(report: TopologiesReport) -> list[RenderableType]:
    table = FitTable(
        [
            Col("GPU"),
            Col("kind", kind="prose"),
            Col("HBM/GPU", justify="right"),
            Col("bandwidth", justify="right", drop=2),
            Col("sm", justify="right", drop=1),
            Col("source", kind="prose", drop=3),
        ],
        title="NVIDIA GPUs (--topology MODEL:GPUS or MODEL:HOSTSxGPUS, e.g. h100:8, a100-80gb:2x8)",
    )
    for gpu in report.gpus:
        bandwidth = gpu.bandwidth_bytes_per_s
        speed = "?" if bandwidth is None else f"{bandwidth / 1e9:,.0f} GB/s"
        row = (gpu.name, gpu.kind, format_bytes(gpu.hbm_bytes), speed, gpu.compute_capability)
        table.add_row(*row, _short_source(gpu.source))
    note = "Each config cites its sources in full (--format json: source)."
    return [table, Text(note)]


def _short_source(source: str) -> str:
    """``XLA h100_sxm.txtpb`` for a config read from XLA's spec file, else the first words."""
    spec = re.search(r"XLA's spec file (\S+\.txtpb)", source)
    return f"XLA {spec[1]}" if spec else source.split(" (")[0]


def _slices(report: TopologiesReport) -> list[RenderableType]:
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
    return parts
