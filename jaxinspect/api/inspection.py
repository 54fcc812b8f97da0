"""``jaxinspect.inspect(fn, *args)``: one compilation of a Python function, as an ``Inspection``.

The ``report`` command calls ``inspect_loaded`` too: the CLI, the API and the pytest fixture
(``snapshot_of_run``) read the same run through the same functions.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxinspect.base.inspection import InspectionReport, Timings

if TYPE_CHECKING:
    from rich.console import RenderableType

    from jaxinspect.cost.loopcost import TripAssumption
    from jaxinspect.cost.report import CostReport
    from jaxinspect.htmlreport.data import ReportData
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.inputs.target import LoadedTarget
    from jaxinspect.inputs.transforms import Transform
    from jaxinspect.memory.report import MemoryReport
    from jaxinspect.passes.report import PassesReport
    from jaxinspect.passes.timereport import PassTimes
    from jaxinspect.snapshot.model import Snapshot
    from jaxinspect.stages.dumprun import DumpedRun
    from jaxinspect.xla.collectivemodel import CollectiveSummary
    from jaxinspect.xla.ownership import UserCode
    from jaxinspect.xla.profiles import DeviceProfile

#: Width of the plain text ``_repr_pretty_`` prints (IPython's console, a notebook's text).
PLAIN_WIDTH = 100


@dataclass(frozen=True, eq=False)  # one compilation is itself: compared and hashed by identity
class Inspection:
    """One trace, lower and compile of a function, and every report read from it.

    Built by ``jaxinspect.inspect``; immutable (``measure()`` and ``passes()`` return new
    reports and change nothing here).

    Attributes:
        data: Everything the HTML report shows (``htmlreport.data.ReportData``): the stages
            report, the cost and memory reports, the graph, per-op details, the stage texts.
    """

    data: ReportData
    _run: DumpedRun = field(repr=False)
    _loaded: LoadedTarget = field(repr=False)
    _spec: Spec = field(repr=False)
    _options: _RunOptions = field(repr=False)

    @cached_property
    def stages_report(self) -> InspectionReport:
        """The report ``jaxinspect stages`` shows for this run (``to_json()`` renders it)."""
        source = self.data.source
        # "--measure not given" belongs to the cost report; the stages document has no such key.
        kept = tuple(r for r in source.unavailable if r[0] != "cost.measured")
        return replace(source, unavailable=kept)

    @property
    def target(self) -> str:
        """The function as ``module:qualname``."""
        return self.stages_report.target

    @property
    def jaxpr(self) -> str:
        """The traced jaxpr, as ``jaxinspect jaxpr`` prints it."""
        return self._text("jaxpr")

    @property
    def stablehlo(self) -> str:
        """The lowered StableHLO module, as ``jaxinspect stablehlo`` prints it."""
        return self._text("stablehlo")

    @property
    def hlo(self) -> str:
        """The optimized HLO module XLA compiled, as ``jaxinspect hlo`` prints it."""
        return self._text("hlo")

    @property
    def cost(self) -> CostReport:
        """The ``cost`` report: totals, per op, per line, loop-aware (no measured times)."""
        return self.data.cost

    @property
    def memory(self) -> MemoryReport | None:
        """The ``memory`` report: the peak and the buffers live at it; ``None`` where XLA's
        buffer assignment could not be read (``data.unavailable`` says why)."""
        return self.data.memory

    @property
    def collectives(self) -> CollectiveSummary | None:
        """The program's collectives and the bytes they move."""
        return self.stages_report.collectives

    @property
    def timings(self) -> Timings:
        """Trace, lower and compile times; first and cached call times when it ran."""
        return self.stages_report.timings

    @property
    def unavailable(self) -> tuple[tuple[str, str], ...]:
        """(JSON path, reason) for each value the backend did not give (``null`` in JSON)."""
        return self.stages_report.unavailable

    def to_json(self) -> str:
        """The ``jaxinspect stages --format json`` document (``stages.schema.json``)."""
        from jaxinspect.stages.jsondoc import render_json

        return render_json(self.stages_report)

    def passes(self) -> PassesReport:
        """XLA's module after each pass (the ``passes`` report).

        From this compilation when ``inspect(..., passes=True)`` had XLA dump every pass;
        otherwise the function is compiled once more, with that dump (nothing else re-runs).

        Raises:
            StageError: The function failed in the extra compilation.
        """
        if self.data.passes is not None:
            return self.data.passes
        from jaxinspect.passes.runner import run_passes
        from jaxinspect.stages.runner import InspectOptions

        options = InspectOptions(backend=self._options.backend, transforms=self._options.transforms)
        return run_passes(self._loaded, self._spec, options)

    @property
    def pass_times(self) -> PassTimes | None:
        """The compile time by step and XLA pass (``passes --time``), from a profile of this
        compilation; ``None`` unless ``inspect(..., passes_time=True)``."""
        return self.data.pass_times

    def measure(self, runs: int | None = None) -> CostReport:
        """The ``cost`` report with each op's measured time (``cost --measure``).

        Runs the executable of this compilation under JAX's profiler ``runs`` times (default:
        20, fewer for a slow program); nothing compiles again.

        Raises:
            UsageError: The program was compiled for a topology and cannot run here.
            StageError: The program failed when run.
        """
        from jaxinspect.cost.costbuild import build_cost_report
        from jaxinspect.cost.runner import cost_of_run
        from jaxinspect.errors import UsageError
        from jaxinspect.pipeline.timing.quiet import frozen_heap

        if self.stages_report.topology:
            raise UsageError(
                f"{self.target} was compiled for {self.stages_report.topology} from this host; "
                "it cannot run here to be measured"
            )
        options = self._options
        with frozen_heap():
            source, program, op_times = cost_of_run(
                self._run.source, self._run.artifacts, options.user, runs, measure=True
            )
        return build_cost_report(
            source, program, "flops", self.cost.profile, options.user, op_times, options.assume
        )

    def report(self, path: str | Path) -> Path:
        """Write the HTML report ``jaxinspect report`` writes for this run; returns the path."""
        from jaxinspect.atomicfile import write_atomically
        from jaxinspect.htmlreport.render import render_html

        destination = Path(path)
        write_atomically(destination, render_html(self.data), what="the report")
        return destination

    @cached_property
    def snapshot(self) -> Snapshot:
        """What ``jaxinspect snapshot`` would store for this run (``jaxinspect.diff`` compares)."""
        from jaxinspect.snapshot.capture import snapshot_of_run

        return snapshot_of_run(self.stages_report, self._run.artifacts, self._loaded.source_file)

    def __rich__(self) -> RenderableType:
        """The console tables: the stages summary, the cost's hot ops, the memory peak."""
        from rich.console import Group

        from jaxinspect.cost.console import render_cost
        from jaxinspect.memory.console import render_memory
        from jaxinspect.stages.console import render_console

        parts = [render_console(self.stages_report, sections=("ops", "cost", "memory", "timings"))]
        parts.append(render_cost(self.cost))
        if self.memory is not None:
            parts.append(render_memory(self.memory))
        return Group(*parts)

    def _repr_html_(self) -> str:
        """A notebook's display: the cards, the hot ops, the folded graph and the memory at
        the peak, self-contained (no network) and scoped to its own element."""
        from jaxinspect.htmlreport.summary import render_summary

        return render_summary(self.data)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain text: the ``__rich__`` tables without colour."""
        printer.text(repr(self) if cycle else plain_text(self))

    def __repr__(self) -> str:
        report = self.stages_report
        flops = None if report.cost is None else report.cost.flops
        return f"<Inspection of {report.target} on {report.backend}: {flops} FLOPs>"

    def _text(self, name: str) -> str:
        stage = self.stages_report.stage(name)
        if stage is None:  # not reached: inspect() runs every stage
            raise AttributeError(f"no {name} stage in this inspection")
        return stage.text


@dataclass(frozen=True, slots=True)
class _RunOptions:
    """How an inspection was run: what ``passes()`` and ``measure()`` reuse."""

    backend: str | None
    transforms: tuple[Transform, ...]
    user: UserCode
    assume: tuple[TripAssumption, ...]


def plain_text(renderable: Any, width: int = PLAIN_WIDTH) -> str:
    """A rich renderable printed without colour at ``width`` columns."""
    from rich.console import Console

    buffer = io.StringIO()
    # In a Jupyter kernel rich would otherwise display the text itself, leaving buffer empty.
    console = Console(
        file=buffer, width=width, color_system=None, force_terminal=False, force_jupyter=False
    )
    console.print(renderable)
    return buffer.getvalue()


def inspect(
    function: Callable[..., Any],
    /,
    *args: Any,
    kwargs: Mapping[str, Any] | None = None,
    static: Mapping[str, Any] | None = None,
    mesh: Any = None,
    topology: str | None = None,
    transform: str | Iterable[str] = (),
    backend: str | None = None,
    device: str | None = None,
    passes: bool = False,
    passes_time: bool = False,
    execute: bool = True,
    inputs: str = "random",
) -> Inspection:
    """Trace, lower and compile ``function(*args, **kwargs)`` once, and inspect it.

    Args:
        function: The function, as you would give it to ``jax.jit`` (a module instance with
            array leaves has them traced, as a leading argument).
        *args: Its positional arguments: arrays, ``jax.ShapeDtypeStruct``s, pytrees of them
            (a TrainState, a model). Array leaves are traced, other leaves are static.
        kwargs: Its keyword arguments, by name (the tool's own options are the keywords of
            ``inspect``, so a parameter called ``mesh`` or ``backend`` never clashes).
        static: Compile-time constants by parameter name (``jax.jit``'s
            ``static_argnames``, with their values; the spec's ``static:``).
        mesh: The device mesh the arguments' shardings name: ``{"data": 4}`` or a
            ``jax.sharding.Mesh`` (the spec's ``mesh:``).
        topology: Compile for a TPU slice or GPU target from here (``v5e:2x2``, ``h100:8``);
            nothing runs.
        transform: ``--transform`` texts (``grad``, ``vmap(in_axes=0)``...), innermost first.
        backend: Platform to compile for; JAX's default when ``None``.
        device: A built-in device profile (``h100``...) for the roofline and memory fit.
        passes: Also have XLA dump the module after every pass, for ``passes()`` (a slower
            compile); without it ``passes()`` compiles once more.
        passes_time: Profile the one compilation for the compile time by XLA pass
            (``passes --time``; ``Inspection.pass_times``).
        execute: Run the executable for the first-call and cached-call timings (on seeded
            random values of the arguments' shapes, as the CLI does).
        inputs: What the timed calls run on: ``"random"`` (seeded random values of the
            arguments' shapes) or ``"factory"`` (the arrays you passed, as a spec's ``from:``
            factory's under ``inputs: factory``; a ``ShapeDtypeStruct`` still gets random
            values). A program whose loops run as its values say (a solver, a sampler) is
            timed honestly only on real values.

    Raises:
        SpecError: The arguments do not fit the function's signature, or a bad mesh.
        TargetError: ``jax.jit`` cannot use ``function``.
        UsageError: An unknown backend, transform or device profile.
        StageError: The function failed while tracing, lowering, compiling or running.
    """
    from jaxinspect.api.arguments import call_spec
    from jaxinspect.inputs.spec import with_inputs
    from jaxinspect.inputs.target import function_target
    from jaxinspect.inputs.transforms import parse_transforms
    from jaxinspect.xla.profiles import find_profile

    texts = [transform] if isinstance(transform, str) else list(transform)
    transforms = parse_transforms(texts)
    profile = None if device is None else find_profile(device)
    loaded = function_target(function)
    spec = with_inputs(
        call_spec(function, args, kwargs or {}, static=static or {}, mesh=mesh, topology=topology),
        inputs,
    )
    return inspect_loaded(
        loaded,
        spec,
        backend=backend,
        transforms=transforms,
        profile=profile,
        passes=passes,
        passes_time=passes_time,
        execute=execute,
    )


def inspect_loaded(
    loaded: LoadedTarget,
    spec: Spec,
    *,
    backend: str | None,
    transforms: tuple[Transform, ...] = (),
    profile: DeviceProfile | None = None,
    user: UserCode | None = None,
    measure_runs: int | None = None,
    passes: bool = False,
    assume: tuple[TripAssumption, ...] = (),
    execute: bool = True,
    passes_time: bool = False,
) -> Inspection:
    """The one run of ``report`` and ``inspect``: compile once with XLA's dump, then read
    every report from it (``measure_runs``: op times under the profiler, ``report --measure``).

    Raises:
        SpecError, UsageError, StageError: As ``stages`` does.
    """
    from jaxinspect.htmlreport.data import profiled_report
    from jaxinspect.xla.ownership import frames_recorded, resolve_user_code

    if user is None:
        user = resolve_user_code([], loaded.source_file)
    with frames_recorded(user):
        run, data = profiled_report(
            loaded,
            spec,
            backend=backend,
            profile=profile,
            user=user,
            measure_runs=measure_runs,
            passes=passes,
            assume=assume,
            execute=execute,
            passes_time=passes_time,
            transforms=transforms,
        )
    return Inspection(data, run, loaded, spec, _RunOptions(backend, transforms, user, assume))
