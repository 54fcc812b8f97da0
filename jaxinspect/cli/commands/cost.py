"""``jaxinspect cost``: where the FLOPs and bytes are, per op, per line, per loop, on a roofline."""

import enum
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import AssumeTripsOpt, InputsOpt, TableOrJsonOpt, TimeoutOpt
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import UsageError

if TYPE_CHECKING:
    from jaxinspect.cost.loopcost import TripAssumption
    from jaxinspect.cost.report import CostReport
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.pipeline.timing.calls import SeriesProgress
    from jaxinspect.xla.profiles import DeviceProfile


class GroupBy(enum.StrEnum):
    """The main table of ``cost``: per op, or grouped by source line, function or scope."""

    OP = "op"
    LINE = "line"
    FUNCTION = "function"
    SCOPE = "scope"


class SortKey(enum.StrEnum):
    """Order of the per-op rows."""

    FLOPS = "flops"
    BYTES = "bytes"
    TRANSCENDENTALS = "transcendentals"
    TIME = "time"
    MEASURED = "measured"


def register(app: typer.Typer) -> None:
    """Add the ``cost`` command to ``app``."""
    app.command(name="cost")(cost)


@run_inputs_command()
def cost(
    inputs: RunInputs,
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
    by: Annotated[
        GroupBy, typer.Option(help="Main table: per op, or per source line, function or scope.")
    ] = GroupBy.OP,
    top: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Rows per table (0 = all). Default: 10 in the main table, 5 in the fusion "
            "and copy tables. JSON always has every op.",
        ),
    ] = None,
    sort: Annotated[
        SortKey, typer.Option(help="Order of op rows (time needs a device or --peak-*).")
    ] = SortKey.FLOPS,
    device: Annotated[
        str | None,
        typer.Option(help="Roofline and memory fit against a built-in device profile (h100...)."),
    ] = None,
    peak_flops: Annotated[
        float | None, typer.Option(min=1.0, help="Peak FLOP/s for the roofline (every dtype).")
    ] = None,
    peak_bandwidth: Annotated[
        float | None, typer.Option(min=1.0, help="Peak memory bandwidth for the roofline, B/s.")
    ] = None,
    user_code: Annotated[
        list[str] | None,
        typer.Option(
            "--user-code",
            help="File, folder or package whose frames are your code, repeatable; costs go on "
            "its innermost line. Default: the target's folder.",
        ),
    ] = None,
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="Run the program under JAX's profiler: time per op beside its FLOPs and "
            "bytes, and how well each static ranking agrees with the measurement.",
        ),
    ] = False,
    measure_runs: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=100_000,
            help="Program runs timed under the profiler (--measure); default 20, fewer (3 at "
            "least) for a program slower than 0.5 s a run.",
        ),
    ] = None,
    assume_trips: AssumeTripsOpt = None,
    values: InputsOpt = None,
    *,
    timeout: TimeoutOpt = None,
) -> None:
    """Per-op, per-line and loop-aware cost of TARGET's optimized HLO, with a roofline model."""
    from jaxinspect.pipeline.timing.deadline import run_deadline
    from jaxinspect.pipeline.timing.quiet import paused_gc

    with run_deadline(timeout, hint=_TIMEOUT_HINT):
        # Every mistake in the options is found before anything is compiled or measured.
        profile = _profile(device, peak_flops, peak_bandwidth)
        if sort is SortKey.TIME and profile is None:
            raise UsageError("--sort time needs --device or --peak-flops/--peak-bandwidth")
        if sort is SortKey.MEASURED and not measure:
            raise UsageError("--sort measured needs --measure")
        if measure_runs is not None and not measure:
            raise UsageError("--measure-runs is the number of runs of --measure; add --measure")
        if values is not None and not measure:
            raise UsageError("--inputs picks the values --measure runs on; add --measure")
        from jaxinspect.inputs.spec import with_inputs

        assume = _assumptions(assume_trips)
        runs = (measure_runs, measure)
        report = _analyse(
            inputs.target,
            with_inputs(inputs.spec(), values),
            inputs.backend,
            sort.value,
            profile,
            user_code,
            runs,
            assume,
        )
        with paused_gc():  # thousands of rows, no cycles (see _analyse)
            if output_format is OutputFormat.JSON:
                from jaxinspect.cost.jsondoc import render_cost_json

                sys.stdout.write(render_cost_json(report))
            else:
                from jaxinspect.cost.console import render_cost
                from jaxinspect.renderers.stdout import stdout_console

                rows = {} if top is None else {"top": top or None, "detail_top": top or None}
                stdout_console().print(render_cost(report, by=by.value, **rows))


_TIMEOUT_HINT = "Raise --timeout, or measure fewer runs with --measure-runs N."


def _progress_line(event: "SeriesProgress") -> None:
    """A long measurement's progress, one plain line on stderr (beside the status spinner)."""
    print(f"measuring: {event.line()}", file=sys.stderr, flush=True)


def _profile(
    device: str | None, peak_flops: float | None, peak_bandwidth: float | None
) -> "DeviceProfile | None":
    from jaxinspect.xla.profiles import custom_profile, find_profile

    base = None if device is None else find_profile(device)
    return custom_profile(base, peak_flops, peak_bandwidth)


def _analyse(
    target: str,
    spec: "Spec",
    backend: str | None,
    sort: str,
    profile: "DeviceProfile | None",
    user_code: list[str] | None = None,
    runs: tuple[int | None, bool] = (None, False),
    assume: "tuple[TripAssumption, ...]" = (),
) -> "CostReport":
    from jaxinspect.cli.spinner import spinner
    from jaxinspect.cost.costbuild import build_cost_report
    from jaxinspect.cost.runner import cost_of_run
    from jaxinspect.inputs.target import load_target
    from jaxinspect.pipeline.timing.quiet import frozen_heap, paused_gc
    from jaxinspect.stages.runner import InspectOptions, run_inspection
    from jaxinspect.xla.ownership import frames_recorded, resolve_user_code

    # One trace/lower/compile; "cost" is left out so the per-op analysis runs once, below.
    options = InspectOptions(
        backend=backend, sections=("memory",), execute=False, live_peak=True, stage_texts=False
    )
    loaded = load_target(target)
    user = resolve_user_code(user_code or [], loaded.source_file)
    with spinner(f"analysing {target} …"), frames_recorded(user):
        source, artifacts = run_inspection(loaded, spec, options)
        measure_runs, measure = runs
        # Collections would walk the analysis' objects, not all of jax's again (the frozen
        # heap), and none runs during the analysis and the report built from it: their
        # thousands of per-op objects are freed by reference counting (--measure's timed
        # calls collect first, as always).
        with frozen_heap(), paused_gc():
            source, program, op_times = cost_of_run(
                source, artifacts, user, measure_runs, measure=measure, progress=_progress_line
            )
            return build_cost_report(source, program, sort, profile, user, op_times, assume)


def _assumptions(values: list[str] | None) -> "tuple[TripAssumption, ...]":
    """``--assume-trips`` values, checked before anything is compiled."""
    from jaxinspect.cost.loopcost import parse_assumption

    return tuple(parse_assumption(v) for v in values or ())
