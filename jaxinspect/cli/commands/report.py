"""``jaxinspect report``: one self-contained HTML file of a compilation (graph, costs, memory,
passes, timings, the stage texts)."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from jaxinspect.cli.options import AssumeTripsOpt, InputsOpt
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import UsageError


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app``."""
    app.command(name="report")(report)


@run_inputs_command()
def report(
    inputs: RunInputs,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The HTML file to write (- for stdout).")
    ],
    device: Annotated[
        str | None,
        typer.Option(help="Roofline and memory fit against a built-in device profile (h100...)."),
    ] = None,
    measure: Annotated[
        bool,
        typer.Option("--measure", help="Time each op under JAX's profiler (sizes the graph)."),
    ] = False,
    passes: Annotated[
        bool,
        typer.Option(
            "--passes",
            help="Add the XLA passes section (XLA dumps the module after every pass: a slower "
            "compile).",
        ),
    ] = False,
    assume_trips: AssumeTripsOpt = None,
    execute: Annotated[
        bool,
        typer.Option("--execute/--no-execute", help="Run the executable for the timings."),
    ] = True,
    values: InputsOpt = None,
) -> None:
    """Compile TARGET once and write everything about it to one HTML file (no network)."""
    if measure and not execute:
        raise UsageError("--measure runs the program; it cannot go with --no-execute")
    from jaxinspect.api.inspection import inspect_loaded
    from jaxinspect.atomicfile import write_atomically
    from jaxinspect.cli.outputs import is_stdout, output_path
    from jaxinspect.cost.loopcost import parse_assumption
    from jaxinspect.htmlreport.render import render_html
    from jaxinspect.inputs.spec import with_inputs
    from jaxinspect.inputs.target import load_target
    from jaxinspect.xla.ownership import resolve_user_code
    from jaxinspect.xla.profiles import find_profile

    destination = output_path(out, "--out")
    assume = tuple(parse_assumption(v) for v in assume_trips or ())
    profile = None if device is None else find_profile(device)
    spec = with_inputs(inputs.spec(), values)
    loaded = load_target(inputs.target)
    user = resolve_user_code([], loaded.source_file)
    inspection = inspect_loaded(
        loaded,
        spec,
        backend=inputs.backend,
        profile=profile,
        user=user,
        measure_runs=20 if measure else None,
        passes=passes,
        assume=assume,
        execute=execute,
    )
    html = render_html(inspection.data)
    if is_stdout(destination):
        sys.stdout.write(html)
        return
    write_atomically(destination, html, what="the report")
    size = len(html.encode("utf-8"))
    print(f"jaxinspect: wrote {out} ({size / 1e6:.2f} MB)", file=sys.stderr)
