"""Everything the HTML report shows, gathered from ONE compilation.

The compilation writes XLA's per-pass dump (``pipeline/dumps.py``); the stages texts, the cost
tables, the memory at the peak, the passes and the graph are all read from that compilation,
and the executable is run (timings, and ``--measure``) without compiling again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from jaxinspect import jaxapi
from jaxinspect.base.inspection import InspectionReport
from jaxinspect.cost.loopcost import TripAssumption
from jaxinspect.cost.report import CostReport
from jaxinspect.htmlreport.graph import Graph, entry_graph
from jaxinspect.htmlreport.sources import (
    SourceContext,
    UserStacks,
    source_contexts,
    user_stacks,
)
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import LoadedTarget
from jaxinspect.inputs.transforms import Transform
from jaxinspect.memory.report import MemoryReport
from jaxinspect.passes.report import PassesReport
from jaxinspect.passes.timereport import PassTimes
from jaxinspect.xla.breakdown import LoopInfo, OpCost, ProgramCost
from jaxinspect.xla.hlotext import HloText, parse_module
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.profiles import DeviceProfile, profile_for_kind
from jaxinspect.xla.sourcemap import parse_frame_table, shown_path
from jaxinspect.xla.xlacost import callees

if TYPE_CHECKING:
    from jaxinspect.cost.optimes import OpTimes
    from jaxinspect.passes.timing import Profile
    from jaxinspect.stages.dumprun import DumpedRun

#: Characters of stage text the report holds, the three stages together (the CLI's
#: `jaxinspect hlo` prints a text whole). Highlighted and escaped, a character takes about
#: 2.4 in the file: the texts stay under 3 MB. The 12-layer stack's texts (0.62 million) are
#: whole; 48 layers (2.6 million) made a 4.4 MB file, the HLO cut.
STAGE_TEXT_BUDGET = 1_200_000


@dataclass(frozen=True, slots=True)
class OpDetail:
    """What clicking an instruction (a graph node, a table row) shows."""

    opcode: str
    shape: str
    jaxpr: str | None  # JAX's op_name: the jaxpr equation's path
    source: str | None  # file:line function
    flops: float | None
    bytes_accessed: float | None
    measured_s: float | None
    #: A loop, call or conditional: the FLOPs of the ops run inside it (trip counts included).
    flops_inside: float | None = None
    #: The user-code frames of its stack, innermost first (``file:line function``).
    stack: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RooflineChart:
    """Each op at (FLOP per byte, FLOP/s) under a device's roofs."""

    profile: str
    chosen_by: str  # "--device", or the compiled device whose profile it is
    peak_flops: float
    bandwidth: float
    #: (instruction, intensity, FLOP/s): measured FLOP/s with --measure, else the model's.
    points: tuple[tuple[str, float, float], ...]
    measured: bool


@dataclass(frozen=True, slots=True)
class StageSection:
    """One stage text as the report shows it."""

    name: str  # jaxpr, stablehlo, hlo
    title: str
    text: str  # cut to its share of STAGE_TEXT_BUDGET
    line_count: int  # of the whole text
    cut: bool
    #: The text carries ``loc(...)`` locations (the StableHLO for Model Explorer).
    with_locations: bool


@dataclass(frozen=True, slots=True)
class ReportData:
    """What the HTML renderer reads; nothing here is computed by the renderer."""

    source: InspectionReport
    cost: CostReport
    memory: MemoryReport | None
    passes: PassesReport | None
    graph: Graph
    #: By instruction name: every graph node and every op of the cost analysis.
    ops: dict[str, OpDetail]
    #: ``None`` without a device profile (``--device``, or one known for the compiled device).
    roofline: RooflineChart | None
    stages: tuple[StageSection, ...]
    #: (JSON-like path, reason) for each section that could not be built.
    unavailable: tuple[tuple[str, str], ...] = ()
    #: By ``file:line``: each line of an op's stack, with the lines around it.
    contexts: dict[str, SourceContext] = field(default_factory=dict)
    #: ``--passes-time``: the compilation's time by step, from a profile of it; else ``None``.
    pass_times: PassTimes | None = None


def profiled_report(
    loaded: LoadedTarget,
    spec: Spec,
    *,
    backend: str | None,
    profile: DeviceProfile | None,
    user: UserCode,
    measure_runs: int | None,
    passes: bool = False,
    assume: tuple[TripAssumption, ...] = (),
    execute: bool = True,
    passes_time: bool = False,
    transforms: tuple[Transform, ...] = (),
) -> tuple[DumpedRun, ReportData]:
    """Compile ``loaded`` once with XLA's dump (``report_run``, profiled when ``passes_time``),
    then gather every section (``report_data_of``): the run and the report's data, for the
    ``report`` command and the Python API's ``inspect_loaded``.

    ``passes``: XLA also dumps the module after every pass, for the passes section. Off by
    default: at 48 transformer blocks that dump made the whole report about 45% slower
    (XLA prints the module hundreds of times), for a section `jaxinspect passes` also gives.
    ``passes_time``: the run is profiled, for the time by pass (the dump's writing included).

    Raises:
        SpecError, UsageError, StageError: As ``stages`` does.
    """
    from jaxinspect.passes.timing import profiled_run

    # The profile stops before the analyses: op times (``measure_runs``) take their own.
    with profiled_run(spec, on=passes_time) as timed:
        run = report_run(
            loaded, spec, backend=backend, passes=passes, execute=execute, transforms=transforms
        )
    data = report_data_of(
        run,
        profile=profile,
        user=user,
        measure_runs=measure_runs,
        passes=passes,
        assume=assume,
        timed=timed if passes_time else None,
    )
    return run, data


def report_run(
    loaded: LoadedTarget,
    spec: Spec,
    *,
    backend: str | None,
    passes: bool = False,
    execute: bool = True,
    transforms: tuple[Transform, ...] = (),
) -> DumpedRun:
    """The report's one trace/lower/compile (with XLA's dump), and the run of the executable
    for the timings; ``report_data_of`` assembles the sections from it."""
    from jaxinspect.stages.dumprun import run_dumped
    from jaxinspect.stages.runner import InspectOptions

    sections = ("jaxpr", "stablehlo", "hlo", "ops", "memory", "timings")
    options = InspectOptions(
        backend=backend, sections=sections, execute=execute, live_peak=True, transforms=transforms
    )
    return run_dumped(loaded, spec, options, passes=passes)


def report_data_of(
    run: DumpedRun,
    *,
    profile: DeviceProfile | None,
    user: UserCode,
    measure_runs: int | None,
    passes: bool = False,
    assume: tuple[TripAssumption, ...] = (),
    timed: Profile | None = None,
) -> ReportData:
    """Every section of the report, read from ``run`` (``report_run``): nothing compiles.

    ``passes``: the run dumped the module after every pass (``report_run(passes=True)``).
    ``timed``: the profile taken around ``report_run`` (``passes.timing.profiled_run``), for
    the compile time by pass.
    """
    from jaxinspect.cost.runner import cost_of_run
    from jaxinspect.pipeline.timing.quiet import frozen_heap

    with frozen_heap():  # collections walk the analysis' objects, not all of jax's again
        source, program, op_times = cost_of_run(run.source, run.artifacts, user, measure_runs)
    # Frozen again: the per-op analysis' objects (the parsed module...) are set aside too. The
    # sections below ran unfrozen, and a full collection in the graph's layout walked every
    # object of the process (0.3 s of GC at 96 layers, 2-3x the sections' own time).
    with frozen_heap():
        return _sections(run, source, program, op_times, profile, user, passes, assume, timed)


def _sections(
    run: DumpedRun,
    source: InspectionReport,
    program: ProgramCost,
    op_times: OpTimes | None,
    profile: DeviceProfile | None,
    user: UserCode,
    passes: bool,
    assume: tuple[TripAssumption, ...],
    timed: Profile | None,
) -> ReportData:
    """``report_data_of``'s sections, from the run and its per-op analysis."""
    from jaxinspect.cost.costbuild import build_cost_report
    from jaxinspect.memory.runner import build_memory_report
    from jaxinspect.passes.runner import build_passes_report

    gaps: list[tuple[str, str]] = []
    artifacts, dumped = run.artifacts, run.dumped
    compiled = artifacts.compiled
    chosen_by = "--device"
    if profile is None and source.device_kind:  # a TPU slice: its chip's own roofs
        profile = profile_for_kind(source.device_kind)
        chosen_by = f"the compiled device ({source.device_kind})"
    cost = build_cost_report(source, program, "flops", profile, user, op_times, assume)
    pass_times = None if timed is None else timed.pass_times(source.timings, gaps)
    memory = _try(
        lambda: build_memory_report(source, compiled, dumped, profile=profile, user=user),
        "memory",
        gaps,
    )
    steps = _try(lambda: build_passes_report(source, dumped), "passes", gaps) if passes else None
    text = jaxapi.compiled_module_text(compiled, "the report's graph")
    hlo = parse_module(text)
    stacks = user_stacks(hlo, parse_frame_table(text), user)
    graph = _graph(hlo, cost, stacks)
    ops = _op_details(graph, cost, _inside(hlo, cost.program.ops, _flops), stacks.labels)
    return ReportData(
        source=source,
        cost=cost,
        memory=memory,
        passes=steps,
        graph=graph,
        ops=ops,
        roofline=_roofline(cost, chosen_by),
        stages=_stages(source, artifacts.lowered),
        unavailable=tuple(gaps),
        contexts=source_contexts(stacks.frames_used()),
        pass_times=pass_times,
    )


def _try(build: Any, name: str, gaps: list[tuple[str, str]]) -> Any:
    """A section's report, or ``None`` and why: one section failing leaves the others."""
    from jaxinspect.pipeline.timing.quiet import frozen_heap

    try:
        with frozen_heap():  # collections walk the analysis' objects, not all of jax's again
            return build()
    except ValueError as exc:  # a dump text this XLA writes differently
        gaps.append((name, f"could not be read: {exc}"))
        return None


def _graph(hlo: HloText, cost: CostReport, stacks: UserStacks) -> Graph:
    ops = cost.program.ops
    measured = cost.measured
    figures: list[Callable[[int, OpCost], float | None]] = [_flops, _bytes]
    if measured is not None:
        figures.insert(0, lambda i, _: measured.op_seconds[i])
    tables = []
    for figure in figures:
        table = {op.name: v for i, op in enumerate(ops) if (v := figure(i, op))}
        # A loop, call or conditional weighs what runs inside it (its own figure is ~0).
        inside = _inside(hlo, ops, figure)
        table.update({name: v for name, v in inside.items() if not table.get(name)})
        tables.append(table)
    if measured is None:
        tables.insert(0, {})
    names = set().union(*tables)
    values = {
        name: (tables[0].get(name), tables[1].get(name), tables[2].get(name)) for name in names
    }
    located: list[OpCost | LoopInfo] = [*ops, *cost.program.loops]  # a loop is no op
    sources = {op.name: text for op in located if (text := _source(op.source)) is not None}
    by = "time" if measured is not None else "flops"
    return entry_graph(hlo, values, sources, by, stacks.scopes(hlo.entry.instructions))


def _flops(_: int, op: OpCost) -> float | None:
    return None if op.total is None else op.total.flops


def _bytes(_: int, op: OpCost) -> float | None:
    return None if op.total is None else op.total.bytes_accessed


def _inside(
    hlo: HloText, ops: Sequence[OpCost], value: Callable[[int, OpCost], float | None]
) -> dict[str, float]:
    """Per ENTRY instruction that calls computations (a loop, a call, a conditional): the
    summed ``value`` of the ops inside them, at any depth (a fusion's ops are not ops)."""
    per_computation: dict[str, float] = {}
    for i, op in enumerate(ops):
        if v := value(i, op):
            per_computation[op.computation] = per_computation.get(op.computation, 0.0) + v
    if not per_computation.keys() - {hlo.entry.name}:
        return {}
    out = {}
    for instr in hlo.entry.instructions:
        total = sum(per_computation.get(c.name, 0.0) for c in callees(hlo, instr))
        if total:
            out[instr.name] = total
    return out


def _op_details(
    graph: Graph,
    cost: CostReport,
    flops_inside: dict[str, float],
    stacks: dict[str, tuple[str, ...]],
) -> dict[str, OpDetail]:
    measured = cost.measured
    details: dict[str, OpDetail] = {}
    for i, op in enumerate(cost.program.ops):
        details[op.name] = OpDetail(
            opcode=op.opcode,
            shape=op.shape,
            jaxpr=op.op_name,
            source=_source(op.source),
            flops=None if op.total is None else op.total.flops,
            bytes_accessed=None if op.total is None else op.total.bytes_accessed,
            measured_s=None if measured is None else measured.op_seconds[i],
        )
    for node in graph.nodes:  # parameters, tuples ...: instructions the cost table leaves out
        known = details.get(node.name)
        if known is None:
            details[node.name] = OpDetail(
                node.opcode, node.shape, node.op_name, node.source, None, None, None
            )
        else:
            details[node.name] = replace(
                known, jaxpr=node.op_name or known.jaxpr, source=known.source or node.source
            )
    for name, flops in flops_inside.items():
        details[name] = replace(details[name], flops_inside=flops)
    for name, stack in stacks.items():
        if name in details:
            details[name] = replace(details[name], stack=stack)
    return details


def _source(source: Any) -> str | None:
    """``file:line function``; a file under the current folder relative to it, as typed."""
    if source is None:
        return None
    return f"{shown_path(source.file)}:{source.line} {source.function}"


def _roofline(cost: CostReport, chosen_by: str) -> RooflineChart | None:
    profile = cost.profile
    if profile is None:
        return None
    # The roof of the element type doing most of the FLOPs (bf16 on a TPU, f32 on a CPU).
    program = cost.program_roofline
    peak = profile.peak_for("f32")[0] if program is None else program.peak_flops
    measured = cost.measured
    points = []
    for i, (op, point) in enumerate(zip(cost.program.ops, cost.op_roofline, strict=True)):
        if point is None or op.total is None or point.intensity is None:
            continue
        seconds = None if measured is None else measured.op_seconds[i]
        speed = op.total.flops / seconds if seconds else op.total.flops / point.time_s
        points.append((op.name, point.intensity, speed))
    return RooflineChart(
        profile=profile.name,
        chosen_by=chosen_by,
        peak_flops=peak,
        bandwidth=profile.bandwidth_bytes_s,
        points=tuple(points),
        measured=measured is not None,
    )


_TITLES = (("jaxpr", "jaxpr"), ("stablehlo", "StableHLO"), ("hlo", "optimized HLO"))


def _stages(source: InspectionReport, lowered: Any) -> tuple[StageSection, ...]:
    """The stage texts; the StableHLO printed with ``loc(...)`` (source lines, name scopes)."""
    texts = []
    for name, title in _TITLES:
        stage = source.stage(name)
        if stage is None:
            continue
        located = name == "stablehlo" and lowered is not None
        text = str(lowered.as_text(debug_info=True)) if located else stage.text
        texts.append((name, title, text, located))
    keep = share_budget([len(text) for _, _, text, _ in texts], STAGE_TEXT_BUDGET)
    return tuple(
        StageSection(
            name,
            title,
            text[:kept],
            text.count("\n") + (0 if text.endswith("\n") else 1),
            kept < len(text),
            located,
        )
        for (name, title, text, located), kept in zip(texts, keep, strict=True)
    )


def share_budget(sizes: list[int], budget: int) -> list[int]:
    """How much of each size to keep so that the kept sizes sum to at most ``budget``: the
    small ones whole, the rest an equal share of what is left (the longest text is cut
    first, and a short jaxpr never for a long HLO)."""
    keep = [0] * len(sizes)
    left, pending = budget, len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: sizes[i]):
        keep[i] = min(sizes[i], left // pending)
        left -= keep[i]
        pending -= 1
    return keep
