"""``jaxinspect stages``: every stage of one compilation, or a table comparing a spec's cases."""

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import (
    ArgOpt,
    BackendOpt,
    CaseOpt,
    DebugOpt,
    DevicesOpt,
    GpuConfigOpt,
    InputsOpt,
    MaxInputBytesOpt,
    MeshOpt,
    PlacementOptions,
    SeedOpt,
    ShapesOpt,
    TargetArg,
    TimeoutOpt,
    TopologyOpt,
    TransformOpt,
    errors_to_exit_codes,
    format_option,
    load_cli_cases,
    rerun_inputs,
)
from jaxinspect.errors import UsageError
from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES
from jaxinspect.pipeline.timing.deadline import run_deadline
from jaxinspect.reports.sections import SECTIONS
from jaxinspect.suggest import did_you_mean

if TYPE_CHECKING:
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.pipeline.inspection import InspectOptions
    from jaxinspect.reports.stages import InspectionReport

_TIMEOUT_HINT = "Raise --timeout, or time fewer calls with --runs N (or none: --no-execute)."


def register(app: typer.Typer) -> None:
    """Add the ``stages`` command to ``app``."""
    app.command(name="stages")(stages)


def stages(
    target: TargetArg,
    shapes: ShapesOpt = None,
    arg: ArgOpt = None,
    backend: BackendOpt = None,
    output_format: Annotated[
        OutputFormat, format_option(OutputFormat.TABLE, OutputFormat.JSON)
    ] = OutputFormat.TABLE,
    stage: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated sections to show: {','.join(SECTIONS)}."),
    ] = None,
    execute: Annotated[
        bool, typer.Option("--execute/--no-execute", help="Run the executable for timings.")
    ] = True,
    runs: Annotated[
        int | None, typer.Option(min=1, help="Cached calls to time (default: ~0.25 s worth).")
    ] = None,
    seed: SeedOpt = 0,
    inputs: InputsOpt = None,
    max_input_bytes: MaxInputBytesOpt = DEFAULT_MAX_INPUT_BYTES,
    full: Annotated[bool, typer.Option("--full", help="Show each IR whole in table mode.")] = False,
    metadata: Annotated[
        bool,
        typer.Option(
            "--metadata",
            help="Keep the HLO's source-location tables and metadata= attributes in table mode.",
        ),
    ] = False,
    transform: TransformOpt = None,
    case: CaseOpt = None,
    timeout: TimeoutOpt = None,
    mesh: MeshOpt = None,
    devices: DevicesOpt = None,
    topology: TopologyOpt = None,
    gpu_config: GpuConfigOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Trace, lower and compile TARGET once and show every stage.

    With a spec of several `cases:` and no --case, each case runs once and one table
    compares them (compile time, FLOPs, memory).
    """
    with errors_to_exit_codes(debug), run_deadline(timeout, hint=_TIMEOUT_HINT):
        sections = _parse_sections(stage)
        from jaxinspect.pipeline.inspection import InspectOptions

        options = InspectOptions(
            backend=backend,
            sections=sections,
            execute=execute,
            runs=runs,
            seed=seed,
            max_input_bytes=max_input_bytes,
            transforms=parse_transform_options(transform),
            progress=_progress_line,
        )
        placement = PlacementOptions(mesh, devices, topology, gpu_config)
        from jaxinspect.inputs.spec import with_inputs

        cases = tuple(
            (name, with_inputs(spec, inputs))
            for name, spec in load_cli_cases(shapes, arg, case, placement)
        )
        if len(cases) > 1:
            _show_case_comparison(target, cases, options, output_format, debug)
            return
        report = inspect_with_status(target, cases[0][1], options)
        if output_format is OutputFormat.JSON:
            from jaxinspect.renderers.stages.jsondoc import render_json

            sys.stdout.write(render_json(report))
        else:
            from jaxinspect.renderers.stages.console import render_console
            from jaxinspect.renderers.stdout import stdout_console

            rerun = rerun_inputs(shapes, arg, case, transform, backend, placement)
            stdout_console().print(
                render_console(
                    report,
                    sections=sections,
                    max_lines=None if full else 40,
                    metadata=metadata,
                    rerun=rerun,
                )
            )


def inspect_with_status(target: str, spec: "Spec", options: "InspectOptions") -> "InspectionReport":
    """Inspect ``target``, with a spinner on stderr when someone is there to see it."""
    from jaxinspect.pipeline.inspection import inspect_target

    if not sys.stderr.isatty():  # no one to see a spinner: skip importing rich.live for it
        return inspect_target(target, spec, options)
    from rich.console import Console

    # Progress goes to stderr so stdout carries the report alone.
    with Console(stderr=True).status(f"inspecting {target} …"):
        return inspect_target(target, spec, options)


def parse_transform_options(texts: list[str] | None) -> Any:
    """The ``--transform`` options parsed (the grammar is imported when a command runs)."""
    from jaxinspect.inputs.transforms import parse_transforms

    return parse_transforms(texts)


def _show_case_comparison(
    target: str,
    cases: "tuple[tuple[str, Spec], ...]",
    options: "InspectOptions",
    output_format: OutputFormat,
    debug: bool,
) -> None:
    """Inspect ``target`` per case and print one comparison (JSON or a table) to stdout.

    A failed case is a row with its error; after the report every failure is printed on stderr,
    naming its case, and the command exits with the worst failure's exit code.
    """
    from rich.console import Console

    from jaxinspect.cli.sweep_exit import exit_for_failed_cases
    from jaxinspect.pipeline.cases import compare_cases
    from jaxinspect.renderers.cases.console import render_cases_console
    from jaxinspect.renderers.cases.jsondoc import render_cases_json
    from jaxinspect.renderers.stdout import stdout_console

    with Console(stderr=True).status(f"inspecting {target} for {len(cases)} cases …"):
        comparison = compare_cases(target, cases, options)
    if output_format is OutputFormat.JSON:
        sys.stdout.write(render_cases_json(comparison))
    else:
        stdout_console().print(render_cases_console(comparison))
    failed = [(case.name, case.error) for case in comparison.cases if case.error is not None]
    exit_for_failed_cases(failed, total=len(comparison.cases), debug=debug)


def _progress_line(event: Any) -> None:
    # Slow calls only; a spinner on a terminal shows stderr lines above itself.
    print(event.line(), file=sys.stderr, flush=True)


def _parse_sections(text: str | None) -> tuple[str, ...]:
    if text is None:
        return SECTIONS
    chosen = tuple(s.strip() for s in text.split(",") if s.strip())
    for name in chosen:
        if name not in SECTIONS:
            raise UsageError(
                f"--stage: unknown section {name!r}{did_you_mean(name, SECTIONS)}; "
                f"choose from {','.join(SECTIONS)}"
            )
    if not chosen:
        raise UsageError(f"--stage: name at least one of {','.join(SECTIONS)}")
    return chosen
