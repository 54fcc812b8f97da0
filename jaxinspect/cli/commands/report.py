"""``jaxinspect report``: one self-contained HTML file of a compilation (graph, costs, memory,
passes, timings, the stage texts)."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from jaxinspect.cli.options import (
    ArgOpt,
    BackendOpt,
    CaseOpt,
    DebugOpt,
    DevicesOpt,
    GpuConfigOpt,
    InputsOpt,
    MeshOpt,
    PlacementOptions,
    ShapesOpt,
    TargetArg,
    TopologyOpt,
    errors_to_exit_codes,
    load_cli_spec,
)
from jaxinspect.errors import UsageError


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app``."""
    app.command(name="report")(report)


def report(
    target: TargetArg,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The HTML file to write (- for stdout).")
    ],
    shapes: ShapesOpt = None,
    arg: ArgOpt = None,
    backend: BackendOpt = None,
    device: Annotated[
        str | None,
        typer.Option(help="Roofline and memory fit against a built-in device profile (h100...)."),
    ] = None,
    measure: Annotated[
        bool,
        typer.Option("--measure", help="Time each op under JAX's profiler (sizes the graph)."),
    ] = False,
    execute: Annotated[
        bool,
        typer.Option("--execute/--no-execute", help="Run the executable for the timings."),
    ] = True,
    inputs: InputsOpt = None,
    case: CaseOpt = None,
    mesh: MeshOpt = None,
    devices: DevicesOpt = None,
    topology: TopologyOpt = None,
    gpu_config: GpuConfigOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Compile TARGET once and write everything about it to one HTML file (no network)."""
    with errors_to_exit_codes(debug):
        if measure and not execute:
            raise UsageError("--measure runs the program; it cannot go with --no-execute")
        from jaxinspect.atomicfile import write_atomically
        from jaxinspect.cli.outputs import is_stdout, output_path
        from jaxinspect.cost.ownership import frames_recorded, resolve_user_code
        from jaxinspect.cost.profiles import find_profile
        from jaxinspect.htmlreport.data import build_report_data
        from jaxinspect.htmlreport.render import render_html
        from jaxinspect.inputs.target import load_target

        destination = output_path(out, "--out")
        profile = None if device is None else find_profile(device)
        from jaxinspect.inputs.spec import with_inputs

        spec = load_cli_spec(
            shapes, arg, case, PlacementOptions(mesh, devices, topology, gpu_config)
        )
        spec = with_inputs(spec, inputs)
        loaded = load_target(target)
        user = resolve_user_code([], loaded.source_file)
        with frames_recorded(user):
            data = build_report_data(
                loaded,
                spec,
                backend=backend,
                profile=profile,
                user=user,
                measure_runs=20 if measure else None,
                execute=execute,
            )
        html = render_html(data)
        if is_stdout(destination):
            sys.stdout.write(html)
            return
        write_atomically(destination, html, what="the report")
        size = len(html.encode("utf-8"))
        print(f"jaxinspect: wrote {out} ({size / 1e6:.2f} MB)", file=sys.stderr)
