"""``jaxinspect recompile``: which cases of a spec recompile one jitted function, and why."""

import sys
from typing import Annotated

import typer

from jaxinspect.cli.exits import Outcome
from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import PlacementOptions, TableOrJsonOpt, TransformOpt, apply_placement
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import UsageError


@run_inputs_command(without=("arg", "case"))
def recompile(
    inputs: RunInputs,
    transform: TransformOpt = None,
    case: Annotated[
        list[str] | None,
        typer.Option("--case", help="Sweep only these cases, in spec order (repeatable)."),
    ] = None,
    max_compiles: Annotated[
        int | None,
        typer.Option(min=0, help="Exit 1 when the sweep compiles more often than this (CI)."),
    ] = None,
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
    keys: Annotated[
        bool,
        typer.Option("--keys", help="Show every cache-key component, not only those that differ."),
    ] = False,
) -> Outcome:
    """Send every case of the spec through ONE jitted TARGET; count and explain compilations.

    A case that fails is a row with its error; the others still run, and the command exits
    with the worst exit code (of the failures, and 1 when --max-compiles is exceeded).
    """
    if inputs.shapes is None:
        raise UsageError("recompile needs --shapes SPEC, ideally with several `cases:`")
    from jaxinspect.cli.sweep_exit import report_failed_cases
    from jaxinspect.inputs.cases import load_spec_cases
    from jaxinspect.inputs.target import load_target
    from jaxinspect.inputs.transforms import parse_transforms
    from jaxinspect.pipeline.placement import reserve_devices
    from jaxinspect.recompile.console import render_sweep_console
    from jaxinspect.recompile.jsondoc import render_sweep_json
    from jaxinspect.recompile.runner import run_sweep

    transforms = parse_transforms(transform)
    spec_file = load_spec_cases(inputs.shapes)
    for name in case or ():
        spec_file.select(name)  # an unknown name is a SpecError with suggestions
    cases = tuple(c for c in spec_file.cases if not case or c[0] in case)
    if inputs.placement != PlacementOptions():
        cases = tuple((name, apply_placement(spec, inputs.placement)) for name, spec in cases)
    reserve_devices([spec for _, spec in cases], inputs.backend)  # before the target's import
    report = run_sweep(
        load_target(inputs.target),
        cases,
        backend=inputs.backend,
        transforms=transforms,
        max_compiles=max_compiles,
    )
    if output_format is OutputFormat.JSON:
        sys.stdout.write(render_sweep_json(report))
    else:
        from jaxinspect.renderers.stdout import stdout_console

        stdout_console().print(render_sweep_console(report, all_keys=keys))
    if report.exceeded:
        typer.echo(
            f"jaxinspect: {report.total_compiles} compilations, over --max-compiles {max_compiles}",
            err=True,
        )
    failed = [(failure.name, failure.error) for failure in report.failures]
    codes = report_failed_cases(failed, total=len(report.cases), debug=inputs.debug)
    return Outcome(differences=report.exceeded, failures=codes)


def register(app: typer.Typer) -> None:
    """Add ``recompile`` to the CLI."""
    app.command()(recompile)
