"""``jaxinspect passes``: XLA's passes that changed the module, and one pass's diff."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import TableOrJsonOpt, TransformOpt
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import UsageError

if TYPE_CHECKING:
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.passes.report import PassesReport


def register(app: typer.Typer) -> None:
    """Add the ``passes`` command to ``app``."""
    app.command(name="passes")(passes)


@run_inputs_command()
def passes(
    inputs: RunInputs,
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
    diff: Annotated[
        str | None,
        typer.Option(
            "--diff",
            metavar="PASS",
            help="Print one step's unified diff instead: its number, its pass name "
            "(algsimp) or pipeline/pass.",
        ),
    ] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="List the snapshots that changed nothing too.")
    ] = False,
    transform: TransformOpt = None,
    time: Annotated[
        bool,
        typer.Option(
            "--time",
            help="Time each XLA pipeline and pass instead (one compilation under JAX's "
            "profiler, no snapshots).",
        ),
    ] = False,
) -> None:
    """XLA's passes over TARGET's module, from StableHLO to the scheduled module, in order."""
    if diff is not None and output_format is OutputFormat.JSON:
        raise UsageError("--diff prints a unified diff; leave out --format json")
    if time and (diff is not None or show_all):
        raise UsageError("--time times one compilation without snapshots; leave out --diff/--all")
    report = _analyse(inputs.target, inputs.spec(), inputs.backend, transform, timed=time)
    if report.time is not None and output_format is not OutputFormat.JSON:
        from jaxinspect.passes.timeconsole import render_pass_times
        from jaxinspect.renderers.stdout import stdout_console

        stdout_console().print(render_pass_times(report))
    elif diff is not None:
        _print_diff(report, diff)
    elif output_format is OutputFormat.JSON:
        from jaxinspect.passes.jsondoc import render_passes_json

        sys.stdout.write(render_passes_json(report))
    else:
        from jaxinspect.passes.console import render_passes
        from jaxinspect.renderers.stdout import stdout_console

        stdout_console().print(render_passes(report, every=show_all))


def _analyse(
    target: str, spec: "Spec", backend: str | None, transform: list[str] | None, *, timed: bool
) -> "PassesReport":
    from rich.console import Console

    from jaxinspect.inputs.target import load_target
    from jaxinspect.inputs.transforms import parse_transforms
    from jaxinspect.passes.runner import run_passes
    from jaxinspect.passes.timing import time_passes
    from jaxinspect.stages.runner import InspectOptions

    options = InspectOptions(backend=backend, transforms=parse_transforms(transform))
    how = "under the profiler" if timed else "with pass dumps"
    with Console(stderr=True).status(f"compiling {target} {how} …"):
        return (time_passes if timed else run_passes)(load_target(target), spec, options)


def _print_diff(report: "PassesReport", key: str) -> None:
    from jaxinspect.passes.runner import find_step, step_diff

    step = find_step(report, key)
    text = step_diff(report, step)
    if not text:
        print(f"{step.label} changed nothing", file=sys.stderr)
    sys.stdout.write(text)
