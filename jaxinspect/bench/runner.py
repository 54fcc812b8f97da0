"""The ``bench`` use case: cold processes, then the steady state in this process, per spec."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jaxlib

from jaxinspect.base.failures import case_failure
from jaxinspect.bench.cold import ColdConfig, run_cold_round
from jaxinspect.bench.jobs import SpecSource
from jaxinspect.bench.notes import report_notes
from jaxinspect.bench.pcache import run_cache_rounds
from jaxinspect.bench.report import (
    BenchReport,
    BenchResult,
    BenchSettings,
    ColdRound,
    Environment,
    PersistentCacheReport,
    SpecFailure,
    SpecOutcome,
)
from jaxinspect.bench.steady import (
    Budget,
    measure_per_call,
    measure_pipelined,
    measure_tiny_dispatch,
    split_donated,
)
from jaxinspect.errors import JaxInspectError, UsageError
from jaxinspect.inputs.arrays import check_input_size
from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES
from jaxinspect.inputs.target import LoadedTarget, load_target
from jaxinspect.pipeline.backend import describe_device
from jaxinspect.pipeline.loopcounts import data_dependent_loops
from jaxinspect.pipeline.placement import reserve_devices
from jaxinspect.pipeline.stages import run_pipeline
from jaxinspect.pipeline.timing.calls import SeriesProgress
from jaxinspect.stages.runner import PreparedCall, prepare_call, x64_mode

#: ``progress(task, done, total)``: called as work completes; the CLI draws a progress bar.
Progress = Callable[[str, int, int], None]
#: ``notice(line)``: one line of progress of slow calls, with an estimate, for stderr.
Notice = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BenchOptions:
    """How a ``bench`` run measures.

    Attributes:
        cold_runs: Fresh processes per cold round.
        runs: Exact number of timed cached calls; ``None`` calibrates to ``time_budget_s``.
        warmup: Untimed calls before timing; ``None`` warms up for a share of the budget.
        time_budget_s: Seconds of timed cached calls when ``runs`` is ``None``.
        seed: Seed of the generated inputs.
        max_input_bytes: Refuse to generate inputs larger than this.
        backend: Platform to run on; ``None`` = JAX's default.
        compilation_cache: Persistent compilation cache folder, or ``None`` for no cache.
        debug: Whether errors from cold processes carry their Python traceback.
        gate: Also measure the rounds a latency gate judges (``--save``, ``--baseline``).
    """

    cold_runs: int = 3
    runs: int | None = None
    warmup: int | None = None
    time_budget_s: float = 1.0
    seed: int = 0
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    backend: str | None = None
    compilation_cache: str | None = None
    debug: bool = False
    gate: bool = False


def run_bench(
    target: str,
    main: SpecSource,
    compare: tuple[SpecSource, ...],
    options: BenchOptions,
    progress: Progress,
    notice: Notice | None = None,
) -> BenchReport:
    """Benchmark ``target`` at the main spec and each ``compare`` spec.

    With more than one spec, a spec that fails (its file, its binding, the user's function at
    its shapes) becomes a ``SpecFailure`` and the others still run.

    Raises:
        TargetError, SpecError, UsageError: The target, the one spec or an option is wrong.
        StageError: The user's function failed (with one spec).
    """
    sources = (main, *compare)
    _reserve_devices(sources, options.backend)  # before the target's import can start JAX
    loaded = load_target(target)
    results: list[SpecOutcome] = []
    environment: Environment | None = None
    for source in sources:
        try:
            result, call = _bench_one(loaded, source, options, progress, notice)
        except JaxInspectError as exc:
            if len(sources) == 1:
                raise
            results.append(_failure(source, exc))
            continue
        results.append(result)
        environment = environment or environment_of(call.device, call.spec.needs_x64)
    settings = BenchSettings(
        cold_runs=options.cold_runs,
        runs=options.runs,
        time_budget_s=options.time_budget_s,
        seed=options.seed,
        max_input_bytes=options.max_input_bytes,
        compilation_cache=options.compilation_cache,
    )
    unavailable: list[tuple[str, str]] = []
    if options.compilation_cache is None:
        unavailable.append(("bench.persistent_cache", "--compilation-cache not given"))
    if environment is None:
        unavailable.append(("environment", "no spec could be benchmarked"))
    measured = [r for r in results if isinstance(r, BenchResult)]
    return BenchReport(
        target=target,
        environment=environment,
        settings=settings,
        result=results[0],
        compare=tuple(results[1:]),
        notes=report_notes(measured[0], settings) if measured else (),
        unavailable=tuple(unavailable),
    )


def _reserve_devices(sources: tuple[SpecSource, ...], backend: str | None) -> None:
    specs = []
    for source in sources:
        try:
            specs.append(source.load())
        except JaxInspectError:
            continue  # reported in its own row when its turn comes
    reserve_devices(specs, backend)


def _failure(source: SpecSource, exc: JaxInspectError) -> SpecFailure:
    return SpecFailure(source.label, case_failure(exc))


def _bench_one(
    loaded: LoadedTarget,
    source: SpecSource,
    options: BenchOptions,
    progress: Progress,
    notice: Notice | None,
) -> tuple[BenchResult, PreparedCall]:
    spec = source.load()
    if spec.topology is not None:
        from jaxinspect.topologies.gpu import target_phrase

        raise UsageError(
            f"{spec.source}: topology {spec.topology}: bench runs the program, and "
            f"{target_phrase(spec.topology)} compiled from this host cannot run here",
            hint="Use stages or cost with --topology for what the compiler says.",
        )
    target = loaded.ref.spec
    # Refuse oversized inputs before any process or compile spends time on them.
    check_input_size(spec.input_bytes, options.max_input_bytes)
    with x64_mode(spec):
        call = prepare_call(loaded, spec, options.backend)
    # bench exists to run the program: the hint's way out is a command that does not.
    with x64_mode(spec), call.explained("use `stages --no-execute` for what needs no run"):
        # Compiled once here for the steady state; this also reports the user's errors
        # before fresh processes are spawned.
        artifacts = run_pipeline(call.function, call.plan, call.args, call.kwargs, target=target)
        cold, cache_report = _cold(target, source, options, progress)
        args, kwargs = call.concrete_inputs(options.seed, options.max_input_bytes)
        inputs = split_donated(call.plan, args, kwargs)
        budget = Budget(options.runs, options.time_budget_s, options.warmup)
        label = f"steady state {source.label}"
        progress(label, 0, 3)

        def slow_calls(event: SeriesProgress) -> None:
            if notice is not None:
                notice(f"{source.label}: {event.line()}")

        cached = measure_per_call(
            artifacts.compiled, inputs, budget, target=target, progress=slow_calls
        )
        progress(label, 1, 3)
        pipelined = measure_pipelined(
            artifacts.compiled,
            inputs,
            budget,
            cached.median_s,
            max_bytes=options.max_input_bytes,
            target=target,
        )
        progress(label, 2, 3)
        dispatch = measure_tiny_dispatch(call.device, budget)
        gate = None
        if options.gate:
            from jaxinspect.bench.gate import measure_rounds

            gate = measure_rounds(
                artifacts.compiled,
                inputs,
                call.device,
                call_s=cached.median_s,
                budget_s=options.time_budget_s,
                target=target,
            )
        progress(label, 3, 3)
    result = BenchResult(
        spec=source.label,
        input_bytes=call.input_bytes,
        donated=call.plan.donated,
        cold=cold,
        cached=cached,
        pipelined=pipelined,
        dispatch=dispatch,
        persistent_cache=cache_report,
        gate=gate,
        inputs=call.origins,
        data_dependent_loops=data_dependent_loops(artifacts.compiled),
    )
    return result, call


def _cold(
    target: str, source: SpecSource, options: BenchOptions, progress: Progress
) -> tuple[ColdRound, PersistentCacheReport | None]:
    config = ColdConfig(
        target, source, options.backend, options.seed, options.max_input_bytes, options.debug
    )
    runs = options.cold_runs
    label = f"cold processes {source.label}"
    # With a cache: the empty round, one priming process, the populated round.
    total = runs if options.compilation_cache is None else 2 * runs + 1
    done = [0]

    def on_sample() -> None:
        done[0] += 1
        progress(label, done[0], total)

    progress(label, 0, total)
    if options.compilation_cache is None:
        return run_cold_round(config, runs, "disabled", lambda _: None, on_sample), None
    return run_cache_rounds(config, runs, options.compilation_cache, on_sample)


def environment_of(device: Any, x64: bool) -> Environment:
    """Where a measurement runs: device, versions, host."""
    return Environment(
        backend=device.platform,
        device=describe_device(device),
        device_kind=str(device.device_kind),
        jax_version=jax.__version__,
        jaxlib_version=jaxlib.__version__,
        python_version=platform.python_version(),
        platform=platform.platform(),
        cpu_count=os.cpu_count(),
        x64=x64,
    )
