"""The ``memory`` report as one JSON document: :class:`MemoryDocument`, encoded by
``jsonfields`` (schema: ``schemas/memory.schema.json``, generated from the same type)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaxinspect.base.inspection import MemorySummary
from jaxinspect.jsonfields import Count, Positive, encode_object, js
from jaxinspect.memory.report import (
    DeviceFit,
    KindTotal,
    MemoryPeak,
    MemoryReport,
    PeakBuffer,
    TimelinePoint,
    XlaFigure,
)
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import RunFacts
from jaxinspect.xla.bufferassign import Allocation

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "memory.schema.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class PeakFigures:
    """Where the peak is: the most bytes live at one step of XLA's schedule.

    Attributes:
        bytes: The most bytes live at one step: the sum of ``buffers[].bytes`` and the maximum
            of ``timeline[].live_bytes``.
        step: The first step of XLA's flattened schedule where it is reached.
        instruction: The instruction at the peak step (possibly inside a loop body).
        entry_instruction: The entry instruction that owns the peak step.
        steps: Steps in XLA's flattened schedule.
        allocated_bytes: All of XLA's allocations in the device's memory (color 0) together.
        partitions: SPMD partitions: above 1, every figure is per device.
    """

    bytes: Count
    step: Count
    instruction: str
    entry_instruction: str
    steps: Positive
    allocated_bytes: Count
    partitions: Positive

    @classmethod
    def of(cls, peak: MemoryPeak) -> PeakFigures:
        """The peak figures of ``peak``."""
        return cls(
            bytes=peak.peak_bytes,
            step=peak.peak_step,
            instruction=peak.peak_instruction,
            entry_instruction=peak.peak_point.instruction,
            steps=peak.steps,
            allocated_bytes=peak.allocated_bytes,
            partitions=peak.partitions,
        )


@dataclass(frozen=True, slots=True)
class MemorySection:
    """XLA's buffer assignment read over its schedule (every key read off it is null
    together, with its reason under ``unavailable['memory.peak']``), and XLA's own figures.

    Attributes:
        buffers: What is live at the peak, largest first.
        timeline: One point per entry instruction, in schedule order.
        allocations: XLA's allocations, in its order.
        by_kind: Allocations per memory color and kind, the device's memory (color 0) first.
        figures: XLA's own figures beside jaxinspect's, each with how they relate.
        memory_analysis: The stages report's memory section: ``compiled.memory_analysis()``
            in bytes.
        fit: With ``--device``, when the profile has a memory capacity: the peak against it.
    """

    peak: PeakFigures | None
    buffers: tuple[PeakBuffer, ...] | None
    timeline: tuple[TimelinePoint, ...] | None
    allocations: tuple[Allocation, ...] | None
    by_kind: tuple[KindTotal, ...] | None
    figures: tuple[XlaFigure, ...] | None
    memory_analysis: MemorySummary | None
    fit: DeviceFit | None

    @classmethod
    def of(cls, report: MemoryReport) -> MemorySection:
        """The ``memory`` object of ``report``'s document."""
        peak = report.peak
        analysis = report.source.memory
        if peak is None:
            return cls(None, None, None, None, None, None, analysis, report.fit)
        return cls(
            peak=PeakFigures.of(peak),
            buffers=peak.buffers,
            timeline=peak.timeline,
            allocations=peak.allocations,
            by_kind=peak.by_kind,
            figures=peak.figures,
            memory_analysis=analysis,
            fit=report.fit,
        )


@dataclass(frozen=True, slots=True)
class MemoryDocument:
    """The ``memory`` document: the run, ``memory.*`` and the reasons for nulls."""

    run: RunFacts = field(metadata=js(flatten=True))
    memory: MemorySection
    #: Dotted JSON path -> why the value there is null.
    unavailable: tuple[tuple[str, str], ...] = field(metadata=js(mapping=True))

    @classmethod
    def of(cls, report: MemoryReport) -> MemoryDocument:
        """The document of ``report``."""
        source = report.source
        return cls(
            run=RunFacts.of(source),
            memory=MemorySection.of(report),
            unavailable=tuple({**dict(source.unavailable), **dict(report.unavailable)}.items()),
        )


def render_memory_json(report: MemoryReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(memory_to_dict(report))


def memory_to_dict(report: MemoryReport) -> dict[str, Any]:
    """The document: run facts, ``memory.*`` and the reasons for nulls."""
    document = encode_object(MemoryDocument.of(report))
    return {"schema_version": SCHEMA_VERSION, "command": "memory", **document}
