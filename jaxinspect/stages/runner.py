"""The ``stages`` use case: target + spec + options -> one ``InspectionReport``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jax
import jaxlib
import numpy as np

from jaxinspect import jaxapi
from jaxinspect.base.inspection import (
    CostSummary,
    InputOrigins,
    InspectionReport,
    LivePeak,
    MemorySummary,
    StageText,
    Timings,
)
from jaxinspect.inputs.adapt import bind_target
from jaxinspect.inputs.arrays import (
    abstract_tree,
    build_call,
    check_input_size,
    concrete_tree,
    describe_args,
    dynamic_only,
    input_bytes,
)
from jaxinspect.inputs.binding import CallPlan
from jaxinspect.inputs.factories import Resolver
from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES
from jaxinspect.inputs.numbers import traces_numbers
from jaxinspect.inputs.origins import explained_inputs, input_origins
from jaxinspect.inputs.placedshards import argument_shardings, output_infos
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import LoadedTarget, load_target
from jaxinspect.inputs.transform_apply import composition, transform_target
from jaxinspect.inputs.transforms import Transform
from jaxinspect.pipeline import analyses as collect
from jaxinspect.pipeline import histograms as hloinfo
from jaxinspect.pipeline.aliasing import buffer_aliases
from jaxinspect.pipeline.analyses import Reasons
from jaxinspect.pipeline.backend import compiled_devices, describe_device
from jaxinspect.pipeline.dumpwatch import PeakDumpWatch
from jaxinspect.pipeline.execute import time_calls
from jaxinspect.pipeline.loopcounts import data_dependent_loops
from jaxinspect.pipeline.placement import Placement, constrain_outputs, place
from jaxinspect.pipeline.stages import StageArtifacts, run_pipeline
from jaxinspect.pipeline.timing.calls import ProgressSink, split_donated
from jaxinspect.pipeline.timing.quiet import frozen_heap, paused_gc
from jaxinspect.pipeline.whilecompiling import WhileCompiling
from jaxinspect.stages.memoryfit import estimate_peak
from jaxinspect.stages.sections import SECTIONS
from jaxinspect.topologies.gpu import target_phrase, topology_caveat
from jaxinspect.topologies.tpu import device_capacity
from jaxinspect.xla.collectivemodel import CollectiveSummary
from jaxinspect.xla.collectives import MeshLayout, find_collectives, spells_no_collective

# The last pipeline step each report section needs.
_NEEDS = {"jaxpr": "trace", "stablehlo": "lower"}
_STEP_ORDER = ("trace", "lower", "compile")


@dataclass(frozen=True, slots=True)
class InspectOptions:
    """What a ``stages`` run computes.

    Attributes:
        backend: Platform to compile for (``cpu``, ``gpu``, ``tpu``...); ``None`` = JAX's default.
        sections: Report sections to compute; the pipeline stops after the last step they need.
        execute: Whether to run the executable for first-call and cached-call timings.
        runs: Number of cached calls; ``None`` calibrates to a small time budget.
        seed: Seed of the generated inputs.
        max_input_bytes: Refuse to generate inputs larger than this.
        transforms: JAX transformations to wrap the target in; the spec describes the
            transformed function's arguments.
    """

    backend: str | None = None
    sections: tuple[str, ...] = SECTIONS
    execute: bool = True
    runs: int | None = None
    seed: int = 0
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    #: ``--transform`` chain applied to the target before jit, innermost first.
    transforms: tuple[Transform, ...] = ()
    #: Receives the progress of a long series of timed calls (slow calls); ``None``: silent.
    progress: ProgressSink | None = None
    #: XLA options for the run's one compilation (a dump folder: ``pipeline/dumps.py``).
    compiler_options: Mapping[str, Any] | None = None
    #: Read the peak off XLA's buffer assignment of that compilation (``MemorySummary.peak``):
    #: the compilation dumps to a private folder, or to ``compiler_options``' own.
    live_peak: bool = False
    #: Print each IR and count its operations (``InspectionReport.stages``). ``cost`` and
    #: ``memory`` show neither: at 96 transformer blocks the printing took 0.35 s of theirs.
    stage_texts: bool = True

    @property
    def last_step(self) -> str:
        """The last of trace/lower/compile that the selected sections need."""
        needed = [_NEEDS.get(s, "compile") for s in self.sections]
        return max(needed, key=_STEP_ORDER.index) if needed else "trace"


def inspect_target(target: str, spec: Spec, options: InspectOptions) -> InspectionReport:
    """Load ``target`` and inspect it; see ``run_inspection``."""
    return run_inspection(load_target(target), spec, options)[0]


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A target bound to a spec on one device, with the abstract arguments to trace it with.

    Attributes:
        function: What to ``jax.jit``: the target, or the target adapted to arguments built
            by ``from:`` factories (and to a callable pytree's own arrays).
        resolver: The factories' abstract results, shared by abstract and concrete inputs.
    """

    loaded: LoadedTarget
    spec: Spec
    plan: CallPlan
    placement: Placement
    args: list[Any]
    kwargs: dict[str, Any]
    function: Any
    resolver: Resolver

    @property
    def target(self) -> str:
        """The target as the user wrote it."""
        return self.loaded.ref.spec

    @property
    def device(self) -> Any:
        """The first device of the run (the only one without a mesh)."""
        return self.placement.device

    def concrete_inputs(self, seed: int, max_bytes: int) -> tuple[list[Any], dict[str, Any]]:
        """Inputs on the device for calling the ``Compiled`` (statics left out).

        Seeded random values, except the arrays of ``from:`` factories under the spec's
        ``inputs: factory`` (the factories then run once more, for real).

        Raises:
            UsageError: The inputs would exceed ``max_bytes``.
            StageError: A factory raised when run for its values.
        """
        check_input_size(self.input_bytes, max_bytes)
        rng = np.random.default_rng(seed)
        factory = self.spec.inputs == "factory"
        concrete = build_call(
            self.plan,
            lambda node: concrete_tree(
                node, rng, self.placement, self.resolver, factory_values=factory
            ),
        )
        return dynamic_only(self.plan, *concrete)

    @property
    def origins(self) -> InputOrigins:
        """Which executed inputs are random and which come from factories."""
        return input_origins(self.plan, self.spec.inputs)

    def explained(self, skip: str = "skip execution with --no-execute") -> Any:
        """Context manager: an execution failure names the random inputs (``explained_inputs``).

        ``skip`` ends the hint: how the command avoids running the program.
        """
        return explained_inputs(self.plan, self.spec.inputs, skip)

    @property
    def input_bytes(self) -> int:
        """Bytes of all concrete inputs, the arrays of ``from:`` factories included."""
        return input_bytes(self.plan, self.resolver)


def x64_mode(spec: Spec) -> Any:
    """Context manager: 64-bit mode exactly when the spec has a 64-bit leaf (it changes results)."""
    return jax.enable_x64(spec.needs_x64)


def prepare_call(loaded: LoadedTarget, spec: Spec, backend: str | None) -> PreparedCall:
    """Bind ``spec`` to the target and build abstract arguments; call inside ``x64_mode``.

    ``from:`` factories are evaluated here, abstractly.

    Raises:
        SpecError: The spec (or a factory's result) does not fit the function's signature.
        TargetError: jax.jit cannot use the target as a function.
        UsageError: The backend is unavailable.
        StageError: A ``from:`` factory raised.
    """
    placement = place(spec, backend)  # first: CPU devices are set up before JAX starts
    resolver = Resolver(traced_numbers=traces_numbers(loaded.function, spec))
    bound = bind_target(loaded.function, spec, target=loaded.ref.spec, resolver=resolver)
    args, kwargs = build_call(bound.plan, lambda node: abstract_tree(node, placement, resolver))
    function = bound.function
    if spec.out_shardings is not None:
        function = constrain_outputs(function, spec.out_shardings, placement)
    return PreparedCall(loaded, spec, bound.plan, placement, args, kwargs, function, resolver)


def run_inspection(
    loaded: LoadedTarget, spec: Spec, options: InspectOptions
) -> tuple[InspectionReport, StageArtifacts]:
    """Run the pipeline once and collect the report, returning JAX's stage objects too.

    Commands that need more than the report (snapshots, per-op cost) read the artifacts
    instead of compiling again.

    Raises:
        SpecError: The spec does not fit the function's signature.
        UsageError: The backend is unavailable or the inputs exceed the size limit.
        StageError: The user's function failed in a stage.
    """
    target = loaded.ref.spec
    chain = composition(loaded, options.transforms)
    loaded = transform_target(loaded, options.transforms)
    # No collection runs unasked: one would walk every object that tracing, lowering and
    # compiling left alive, every few hundred allocations of the work after the compile
    # (55 of the peak's 185 ms at 96 transformer blocks). Each timed step still collects
    # first (``quiet_gc``), walking only what the run made (the frozen heap).
    with x64_mode(spec), frozen_heap(), paused_gc():
        call = prepare_call(loaded, spec, options.backend)
        reasons: list[tuple[str, str]] = []
        jaxpr_stage = functools.partial(_jaxpr_stage, spec) if options.stage_texts else None
        with _peak_dump(options) as (dump_options, watch):
            artifacts = run_pipeline(
                call.function,
                call.plan,
                call.args,
                call.kwargs,
                target=target,
                until=options.last_step,
                compiler_options=dump_options,
                while_compiling=jaxpr_stage,
                around_compile=watch,
            )
            stats = _memory_stats_beside(artifacts.compiled)
            peak = _live_peak(artifacts.compiled, options, dump_options, reasons)
        artifacts = replace(artifacts, call=call)
        # First: the hlo stage's printing then answers the aliases and the collectives too.
        stages = _stage_texts(artifacts, spec) if options.stage_texts else ()
        timings = _time_execution(call, artifacts, options, reasons, stats.join)
        cost, memory = _analyses(call, artifacts, options, reasons, peak, stats.value)
        # Name the platform XLA compiled for, not merely the one that was asked for.
        devices = compiled_devices(artifacts.compiled, call.placement.devices)
        compiled = artifacts.compiled
        shardings = None if compiled is None else argument_shardings(compiled, call.plan)
        report = InspectionReport(
            target=target,
            function_name=str(artifacts.traced.fun_name),
            composition=chain,
            backend=devices[0].platform,
            devices=tuple(describe_device(d) for d in devices),
            device_kind=str(devices[0].device_kind),
            topology=call.placement.topology,
            caveat=topology_caveat(call.placement.topology),
            mesh=None if call.spec.mesh is None else call.spec.mesh.axes,
            outputs=() if compiled is None else output_infos(compiled),
            collectives=None if compiled is None else _collectives(compiled, call.placement),
            jax_version=jax.__version__,
            jaxlib_version=jaxlib.__version__,
            x64=spec.needs_x64,
            args=describe_args(call.plan, call.resolver, shardings),
            stages=stages,
            cost=cost,
            memory=memory,
            timings=timings,
            unavailable=tuple(reasons),
        )
    return report, artifacts


def _time_execution(
    call: PreparedCall,
    artifacts: StageArtifacts,
    options: InspectOptions,
    reasons: Reasons,
    before_calls: Callable[[], None] = lambda: None,
) -> Timings:
    """Step timings, plus first-call and cached-call times when the executable runs
    (``before_calls()`` first: it waits for work running beside, which must not run beside
    the timed calls)."""
    timings = Timings(artifacts.trace_s, artifacts.lower_s, artifacts.compile_s)
    compiled = artifacts.compiled
    topology = call.placement.topology
    if compiled is None or not options.execute or "timings" not in options.sections or topology:
        why = "--no-execute" if not options.execute else "not requested (--stage)"
        if topology:
            why = f"compiled for {target_phrase(topology)} from this host; nothing runs here"
        reasons += [("timings.first_call_s", why), ("timings.cached_call_s", why)]
        reasons += [("timings.inputs", why), ("timings.data_dependent_loops", why)]
        return timings
    before_calls()
    with call.explained():
        args, kwargs = call.concrete_inputs(options.seed, options.max_input_bytes)
        inputs = split_donated(call.plan, args, kwargs)  # donated ones are copied for every call
        first, cached = time_calls(
            compiled, inputs, runs=options.runs, target=call.target, progress=options.progress
        )
    return replace(
        timings,
        first_call_s=first,
        cached_call=cached,
        inputs=call.origins,
        data_dependent_loops=data_dependent_loops(compiled),
    )


@contextmanager
def _peak_dump(
    options: InspectOptions,
) -> Iterator[tuple[dict[str, Any] | None, PeakDumpWatch | None]]:
    """The compiler options of the run's one compilation, with a dump folder where the peak is
    read off its buffer assignment and the caller gave none (deleted when the block ends);
    and then what reads that dump while XLA still compiles (``pipeline/dumpwatch.py``)."""
    given = None if options.compiler_options is None else dict(options.compiler_options)
    if not options.live_peak or "xla_dump_to" in (given or {}) or options.last_step != "compile":
        yield given, None
        return
    from jaxinspect.pipeline.dumps import compilation_dump
    from jaxinspect.stages.livepeak import schedule_steps

    with compilation_dump() as dump:
        yield {**(given or {}), **dump.compiler_options}, PeakDumpWatch(dump.folder, schedule_steps)


def _live_peak(
    compiled: Any, options: InspectOptions, dump_options: dict[str, Any] | None, reasons: Reasons
) -> LivePeak | None:
    """The buffer assignment's peak, read from the dump folder while it exists."""
    if compiled is None:
        return None
    if not options.live_peak or dump_options is None:
        why = "this command reads no buffer assignment (`jaxinspect memory` shows the peak)"
        reasons.append(("memory.peak", why))
        return None
    from jaxinspect.pipeline.dumps import read_dump_folder
    from jaxinspect.stages.livepeak import live_peak

    module = jaxapi.optimized_hlo_module(compiled, "the buffer assignment's peak")
    folder = Path(dump_options["xla_dump_to"])
    dumped = read_dump_folder(folder, module_name=str(module.name), passes=False)
    if dumped.buffer_assignment is None or dumped.live_range is None:
        field = "buffer_assignment" if dumped.buffer_assignment is None else "live_range"
        reasons.append(("memory.peak", dumped.reason(field) or f"XLA wrote no {field}"))
        return None
    try:
        return live_peak(dumped.buffer_assignment, dumped.live_range, dumped.memory_usage_report)
    except ValueError as exc:  # a dump this XLA writes differently must not sink the report
        reasons.append(("memory.peak", f"XLA's buffer assignment could not be read: {exc}"))
        return None


def _memory_stats_beside(compiled: Any) -> WhileCompiling[Any]:
    """``compiled.memory_analysis()``, asked for in a thread while the stage texts and the
    module are printed (the latter for the aliases, and for ``cost``'s per-op analysis).

    All are XLA's work with the GIL released, and the analysis is not small (it serializes
    the buffer assignment: 50-160 ms at 48-96 transformer blocks, about as long as the two
    stage texts' printings).
    """

    # Asked for only where there is a compiled program (``_analyses``).
    return WhileCompiling(
        lambda: compiled.memory_analysis(),
        start=compiled is not None,
        name="jaxinspect-memory-analysis",
    )


def _analyses(
    call: PreparedCall,
    artifacts: StageArtifacts,
    options: InspectOptions,
    reasons: Reasons,
    peak: LivePeak | None = None,
    stats_of: Callable[[], Any] | None = None,
) -> tuple[CostSummary | None, MemorySummary | None]:
    """Cost and memory of the compiled program, with donation's aliasing; none before compile."""
    compiled = artifacts.compiled
    if compiled is None:
        reasons += _skipped_after(artifacts)
        return None, None
    cost = None
    if "cost" in options.sections:  # per-op analysis is not free: only when shown
        cost = collect.collect_cost(compiled, reasons)
    else:
        reasons.append(("cost", "not requested (--stage)"))
    # Read first, while memory_analysis() may still run in its thread (``stats_of``).
    aliases = buffer_aliases(artifacts.traced, artifacts.lowered, compiled, call.plan)
    memory = collect.collect_memory(compiled, call.device.platform, reasons, peak, stats_of)
    if memory is not None:
        estimate = estimate_peak(memory)
        memory = replace(
            memory,
            donated=call.plan.donated,
            aliases=aliases,
            peak_source=None if estimate is None else estimate.source,
        )
        memory = _with_fit(memory, call.placement.devices, reasons)
    return cost, memory


def _collectives(compiled: Any, placement: Placement) -> CollectiveSummary:
    """The program's collectives, their device groups named by the run's mesh axes."""
    if spells_no_collective(jaxapi.printed_module(compiled, "the collectives")):
        return CollectiveSummary(())  # no second printing of the module to find none
    text = jaxapi.compiled_module_text(compiled, "the collectives")
    spec = placement.mesh_spec
    return find_collectives(text, None if spec is None else MeshLayout(spec.axes))


def _with_fit(memory: MemorySummary, devices: tuple[Any, ...], reasons: Reasons) -> MemorySummary:
    """The memory fit against one device's capacity, where the device table knows it."""
    if devices[0].platform == "cpu":
        reasons.append(("memory.capacity_bytes", "a CPU device has no fixed memory of its own"))
        reasons.append(("memory.fits", "no capacity to fit against"))
        return memory
    capacity, source = device_capacity(devices)
    peak = estimate_peak(memory)
    if capacity is None or peak is None:
        reasons.append(("memory.capacity_bytes", source))
        reasons.append(("memory.fits", "no capacity or no peak to compare"))
        return replace(memory, capacity_bytes=capacity)
    return replace(memory, capacity_bytes=capacity, fits=peak.bytes <= capacity)


def _stage_texts(artifacts: StageArtifacts, spec: Spec) -> tuple[StageText, ...]:
    """Each IR that was produced, with its operation histogram read from JAX's objects."""
    traced, lowered, compiled = artifacts.traced, artifacts.lowered, artifacts.compiled
    beside = artifacts.beside  # the jaxpr printed while XLA compiled
    jaxpr: StageText = beside.value() if beside is not None else _jaxpr_stage(spec, traced)
    stages = [jaxpr]
    if lowered is not None:
        counts = hloinfo.stablehlo_op_counts(lowered.compiler_ir())
        stages.append(StageText("stablehlo", lowered.as_text(), counts))
    if compiled is not None:
        module = jaxapi.optimized_hlo_module(compiled, "the hlo stage")
        text = jaxapi.optimized_hlo_text(compiled)
        stages.append(StageText("hlo", text, hloinfo.hlo_op_counts(module)))
    return tuple(stages)


def _jaxpr_stage(spec: Spec, traced: Any) -> StageText:
    """The jaxpr's text and primitive counts: printed while XLA compiles (``run_pipeline``'s
    ``while_compiling``, in a thread of its own: in the spec's 64-bit mode, a setting each
    thread keeps), a third of a second at 96 transformer blocks."""
    with x64_mode(spec):
        return StageText("jaxpr", str(traced.jaxpr), hloinfo.jaxpr_op_counts(traced.jaxpr))


def _skipped_after(artifacts: StageArtifacts) -> list[tuple[str, str]]:
    why = "not requested (--stage): the pipeline stopped before compile"
    out = [("stages.hlo", why), ("cost", why), ("memory", why), ("timings.compile_s", why)]
    if artifacts.lowered is None:
        out += [
            ("stages.stablehlo", why.replace("compile", "lower")),
            ("timings.lower_s", why.replace("compile", "lower")),
        ]
    return out
