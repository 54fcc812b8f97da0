"""Everything the HTML report shows, gathered from ONE compilation.

The compilation writes XLA's per-pass dump (``pipeline/dumps.py``); the stages texts, the cost
tables, the memory at the peak, the passes and the graph are all read from that compilation,
and the executable is run (timings, and ``--measure``) without compiling again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaxinspect import jaxapi
from jaxinspect.cost.hlotext import parse_module
from jaxinspect.cost.ownership import UserCode
from jaxinspect.cost.profiles import DeviceProfile
from jaxinspect.htmlreport.graph import Graph, entry_graph
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import LoadedTarget
from jaxinspect.reports.cost import CostReport
from jaxinspect.reports.memory import MemoryReport
from jaxinspect.reports.passes import PassesReport
from jaxinspect.reports.stages import InspectionReport

#: A stage text longer than this is cut in the report (the file stays small; the CLI's
#: `jaxinspect hlo` prints it whole).
MAX_TEXT_CHARS = 1_500_000


@dataclass(frozen=True, slots=True)
class ReportData:
    """What the HTML renderer reads; nothing here is computed by the renderer."""

    source: InspectionReport
    cost: CostReport
    memory: MemoryReport | None
    passes: PassesReport | None
    graph: Graph
    #: StableHLO printed with ``loc(...)`` source locations (for Model Explorer).
    stablehlo_debug: str | None
    #: (JSON-like path, reason) for each section that could not be built.
    unavailable: tuple[tuple[str, str], ...] = ()


def build_report_data(
    loaded: LoadedTarget,
    spec: Spec,
    *,
    backend: str | None,
    profile: DeviceProfile | None,
    user: UserCode,
    measure_runs: int | None,
) -> ReportData:
    """Compile ``loaded`` once with XLA's dump and gather every section.

    Raises:
        SpecError, UsageError, StageError: As ``stages`` does.
    """
    from jaxinspect.cost.analysis import cost_of_run
    from jaxinspect.cost.memoryrun import build_memory_report
    from jaxinspect.pipeline.dumps import compilation_dump
    from jaxinspect.pipeline.inspection import InspectOptions, run_inspection
    from jaxinspect.pipeline.passes import build_passes_report
    from jaxinspect.reports.cost import build_cost_report

    sections = ("jaxpr", "stablehlo", "hlo", "ops", "memory", "timings")
    with compilation_dump(passes=True) as dump:
        options = InspectOptions(
            backend=backend, sections=sections, compiler_options=dump.compiler_options
        )
        source, artifacts = run_inspection(loaded, spec, options)
        dumped = dump.read(artifacts.compiled)
    compiled = artifacts.compiled
    source, program, op_times = cost_of_run(source, artifacts, user, measure_runs)
    cost = build_cost_report(source, program, "flops", profile, user, op_times)
    gaps: list[tuple[str, str]] = []
    memory = _try(
        lambda: build_memory_report(source, compiled, dumped, profile=profile, user=user),
        "memory",
        gaps,
    )
    passes = _try(lambda: build_passes_report(source, dumped), "passes", gaps)
    return ReportData(
        source=source,
        cost=cost,
        memory=memory,
        passes=passes,
        graph=_graph(compiled, cost),
        stablehlo_debug=_debug_text(artifacts.lowered),
        unavailable=tuple(gaps),
    )


def _try(build: Any, name: str, gaps: list[tuple[str, str]]) -> Any:
    """A section's report, or ``None`` and why: one section failing leaves the others."""
    try:
        return build()
    except ValueError as exc:  # a dump text this XLA writes differently
        gaps.append((name, f"could not be read: {exc}"))
        return None


def _graph(compiled: Any, cost: CostReport) -> Graph:
    module = jaxapi.optimized_hlo_module(compiled, "the report's graph")
    hlo = parse_module(jaxapi.hlo_module_text(module, metadata=True))
    ops = cost.program.ops
    measured = cost.measured
    if measured is not None:
        weights = {op.name: s for op, s in zip(ops, measured.op_seconds, strict=True) if s}
        by = "measured time"
    else:
        weights = {op.name: op.total.flops for op in ops if op.total is not None}
        by = "FLOPs"
    sources = {
        op.name: f"{op.source.file}:{op.source.line} {op.source.function}"
        for op in ops
        if op.source is not None
    }
    return entry_graph(hlo, weights, sources, by)


def _debug_text(lowered: Any) -> str | None:
    if lowered is None:
        return None
    return str(lowered.as_text(debug_info=True))
