"""``passes --time``: one compilation under JAX's profiler, its time split by pipeline and pass.

``time_passes`` runs the pipeline once (trace, lower, compile) inside ``jax.profiler.trace``
and reads the profile back with ``jax.profiler.ProfileData`` (jaxlib's own reader of the
``.xplane.pb`` it wrote): no file format parsed here. The Python tracer stays off (it would
time every Python call of JAX's tracing, slowing it several-fold); host events (XLA's
``TraceMe``: one per pass pipeline and pass) are what is read. No pass snapshots are dumped:
writing the module after every pass would be timed too.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxinspect.passes.compileevents import StageEvents, read_stage_events, stage_row
from jaxinspect.passes.report import PassesReport, PassTotals
from jaxinspect.passes.timereport import PassTimes, TimedStep
from jaxinspect.process.nativelog import quiet_native_stderr

if TYPE_CHECKING:
    from jaxinspect.base.inspection import InspectionReport, Timings
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.inputs.target import LoadedTarget
    from jaxinspect.stages.runner import InspectOptions

#: How the profile is taken, as the report states it.
PROFILER = "jax.profiler.trace, host tracer level 2, Python tracer off"
NOT_DUMPED = (
    "not dumped: --time compiles once without pass snapshots (writing them would be timed "
    "too); `jaxinspect passes` without --time lists them"
)


@dataclass(slots=True)
class Profile:
    """What ``profiled_run`` recorded; ``data`` is set once the block ends."""

    data: Any = None  # jax.profiler.ProfileData; None: the profiler wrote nothing

    def pass_times(self, timings: Timings, reasons: list[tuple[str, str]]) -> PassTimes:
        """The time rows of the run profiled (``timings``: its stage times)."""
        events = None if self.data is None else read_stage_events(self.data)
        return build_pass_times(timings, events, reasons)


def time_passes(loaded: LoadedTarget, spec: Spec, options: InspectOptions) -> PassesReport:
    """Trace, lower and compile ``loaded`` once under the profiler; time every step.

    ``options.sections`` and ``execute`` are overridden: nothing runs, nothing else is
    analysed. The report's ``time`` holds the rows; its ``steps`` (the pass snapshots) are
    ``None``, with the reason.

    Raises:
        SpecError: The spec does not fit the function.
        UsageError: The backend is unavailable.
        StageError: The function failed in a stage.
    """
    from jaxinspect.stages.runner import run_inspection

    timed_options = replace(options, sections=("hlo",), execute=False)
    with profiled_run(spec) as profile:
        source, artifacts = run_inspection(loaded, spec, timed_options)
    reasons: list[tuple[str, str]] = [("passes", NOT_DUMPED)]
    times = profile.pass_times(source.timings, reasons)
    return PassesReport(
        source=source,
        module=_module_name(source, artifacts.compiled),
        steps=None,
        totals=PassTotals(0, 0, None, None, None, 0, 0),
        unavailable=tuple(reasons),
        time=times,
    )


@contextmanager
def profiled_run(spec: Spec, *, on: bool = True) -> Iterator[Profile]:
    """``jax.profiler.trace`` into a private folder, read back once it stops.

    Put around the one ``run_inspection`` of a run: ``pipeline/stages.py`` marks each of its
    steps in the profile. The profiler is stopped before the block's caller measures anything
    else (``cost --measure`` starts a profile of its own). ``on=False``: nothing is profiled
    (``data`` stays ``None``).

    Raises:
        UsageError: ``spec.topology`` names a target this host cannot compile for.
    """
    import jax

    if not on:
        yield Profile()
        return
    if spec.topology is not None:
        from jaxinspect.topologies.tpu import topology_devices

        # Load the target's compiler plugin now: a plugin loaded while the profile runs
        # registers its profiler too late, and its compiler's events would be missing.
        topology_devices(spec.topology)
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    folder = Path(tempfile.mkdtemp(prefix="jaxinspect-passtime-"))
    profile = Profile()
    try:
        # libtpu's profiler plugin, where installed, writes its start-up chatter to fd 2.
        with quiet_native_stderr():
            jax.profiler.start_trace(str(folder), profiler_options=options)
        try:
            yield profile
        finally:
            with quiet_native_stderr():
                jax.profiler.stop_trace()
        written = sorted(folder.glob("plugins/profile/*/*.xplane.pb"))
        profile.data = jax.profiler.ProfileData.from_file(str(written[-1])) if written else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def build_pass_times(
    timings: Timings, events: StageEvents | None, reasons: list[tuple[str, str]]
) -> PassTimes:
    """The rows: JAX's steps as ``timings`` measured them, each with its events below it.

    Args:
        timings: The run's step times (``time.perf_counter`` around each step).
        events: The profile's events under each step; ``None``: the profiler wrote none.
        reasons: Receives ``(path, reason)`` for each null.
    """
    if events is None:
        reasons.append(("time.steps", "the profiler wrote no profile"))
        return PassTimes(None, timings.compile_s, None, None, PROFILER)
    rows: list[TimedStep] = []
    for stage, seconds in (
        ("trace", timings.trace_s),
        ("lower", timings.lower_s),
        ("compile", timings.compile_s),
    ):
        if seconds is None:
            continue
        children = events.children.get(stage, ())
        rows.append(stage_row(stage, seconds, children))
        rows += children
    compile_rows = events.children.get("compile", ())
    accounted = sum(r.seconds for r in compile_rows if r.depth == 1) if compile_rows else None
    if "compile" not in events.found:
        reasons.append(("time.accounted_s", "the profile holds no event of the compile step"))
    elif not compile_rows:
        reasons.append(("time.accounted_s", "the profile holds no event inside the compile step"))
    if not any(r.is_pass for r in compile_rows):
        reasons.append(
            ("time.top_pass", "the compiler emitted no per-pass events (no pipeline named)")
        )
    if events.worker_s is None:
        reasons.append(("time.worker_s", "no other thread of the compiler left events"))
    return PassTimes(tuple(rows), timings.compile_s, accounted, events.worker_s, PROFILER)


def _module_name(source: InspectionReport, compiled: Any) -> str:
    """The optimized module's name (``jit_predict``), as the passes report names it."""
    from jaxinspect import jaxapi
    from jaxinspect.errors import JaxInspectError

    try:
        return str(jaxapi.optimized_hlo_module(compiled, "the module's name").name)
    except JaxInspectError:
        return f"jit_{source.function_name}"
