"""``jaxinspect memory``: what is live at the peak, from XLA's buffer assignment."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import (
    ArgOpt,
    BackendOpt,
    CaseOpt,
    DebugOpt,
    DevicesOpt,
    GpuConfigOpt,
    MeshOpt,
    PlacementOptions,
    ShapesOpt,
    TargetArg,
    TopologyOpt,
    errors_to_exit_codes,
    format_option,
    load_cli_spec,
)

if TYPE_CHECKING:
    from jaxinspect.cost.profiles import DeviceProfile
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.reports.memory import MemoryReport


def register(app: typer.Typer) -> None:
    """Add the ``memory`` command to ``app``."""
    app.command(name="memory")(memory)


def memory(
    target: TargetArg,
    shapes: ShapesOpt = None,
    arg: ArgOpt = None,
    backend: BackendOpt = None,
    output_format: Annotated[
        OutputFormat, format_option(OutputFormat.TABLE, OutputFormat.JSON)
    ] = OutputFormat.TABLE,
    top: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Rows of the buffer and step tables (0 = all; default 10). JSON has all.",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(help="Fit the peak in a built-in device profile's memory (h100...)."),
    ] = None,
    user_code: Annotated[
        list[str] | None,
        typer.Option(
            "--user-code",
            help="File, folder or package whose frames are your code, repeatable; buffers "
            "name its innermost line. Default: the target's folder.",
        ),
    ] = None,
    case: CaseOpt = None,
    mesh: MeshOpt = None,
    devices: DevicesOpt = None,
    topology: TopologyOpt = None,
    gpu_config: GpuConfigOpt = None,
    debug: DebugOpt = False,
) -> None:
    """The buffers live at TARGET's memory peak and live bytes over XLA's schedule."""
    with errors_to_exit_codes(debug):
        profile = None
        if device is not None:
            from jaxinspect.cost.profiles import find_profile

            profile = find_profile(device)
        spec = load_cli_spec(
            shapes, arg, case, PlacementOptions(mesh, devices, topology, gpu_config)
        )
        report = _analyse(target, spec, backend, profile, user_code)
        if output_format is OutputFormat.JSON:
            from jaxinspect.renderers.memory.jsondoc import render_memory_json

            sys.stdout.write(render_memory_json(report))
        else:
            from jaxinspect.renderers.memory.console import TOP_ROWS, render_memory
            from jaxinspect.renderers.stdout import stdout_console

            rows = TOP_ROWS if top is None else (top or None)
            stdout_console().print(render_memory(report, top=rows))


def _analyse(
    target: str,
    spec: "Spec",
    backend: str | None,
    profile: "DeviceProfile | None",
    user_code: list[str] | None,
) -> "MemoryReport":
    from rich.console import Console

    from jaxinspect.cost.memoryrun import build_memory_report
    from jaxinspect.cost.ownership import frames_recorded, resolve_user_code
    from jaxinspect.inputs.target import load_target
    from jaxinspect.pipeline.dumps import compilation_dump
    from jaxinspect.pipeline.inspection import InspectOptions, run_inspection
    from jaxinspect.pipeline.timing.quiet import frozen_heap

    loaded = load_target(target)
    user = resolve_user_code(user_code or [], loaded.source_file)
    with (
        Console(stderr=True).status(f"analysing {target} …"),
        frames_recorded(user),
        compilation_dump() as dump,
    ):
        # One trace/lower/compile, the compile writing XLA's buffer assignment to the dump.
        options = InspectOptions(
            backend=backend,
            sections=("memory",),
            execute=False,
            compiler_options=dump.compiler_options,
            live_peak=True,
        )
        source, artifacts = run_inspection(loaded, spec, options)
        dumped = dump.read(artifacts.compiled)
    with frozen_heap():  # collections walk the analysis' objects, not all of jax's again
        return build_memory_report(source, artifacts.compiled, dumped, profile=profile, user=user)
