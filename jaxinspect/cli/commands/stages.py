"""``jaxinspect stages``: every stage of one compilation, or a table comparing a spec's cases."""

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jaxinspect.cli.exits import Outcome
from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import (
    InputsOpt,
    MaxInputBytesOpt,
    SeedOpt,
    TableOrJsonOpt,
    TimeoutOpt,
    TransformOpt,
)
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import UsageError
from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES
from jaxinspect.pipeline.timing.deadline import run_deadline
from jaxinspect.stages.sections import SECTIONS
from jaxinspect.suggest import did_you_mean

if TYPE_CHECKING:
    from jaxinspect.base.inspection import InspectionReport
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.stages.runner import InspectOptions

_TIMEOUT_HINT = "Raise --timeout, or time fewer calls with --runs N (or none: --no-execute)."


def register(app: typer.Typer) -> None:
    """Add the ``stages`` command to ``app``."""
    app.command(name="stages")(stages)


@run_inputs_command()
def stages(
    inputs: RunInputs,
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
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
    values: InputsOpt = None,
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
    timeout: TimeoutOpt = None,
) -> Outcome | None:
    """Trace, lower and compile TARGET once and show every stage.

    With a spec of several `cases:` and no --case, each case runs once and one table
    compares them (compile time, FLOPs, memory).
    """
    with run_deadline(timeout, hint=_TIMEOUT_HINT):
        sections = _parse_sections(stage)
        from jaxinspect.stages.runner import InspectOptions

        options = InspectOptions(
            backend=inputs.backend,
            sections=sections,
            execute=execute,
            runs=runs,
            seed=seed,
            max_input_bytes=max_input_bytes,
            transforms=parse_transform_options(transform),
            progress=_progress_line,
            live_peak=True,
        )
        from jaxinspect.inputs.spec import with_inputs

        cases = tuple((name, with_inputs(spec, values)) for name, spec in inputs.cases())
        if len(cases) > 1:
            return _show_case_comparison(inputs, cases, options, output_format)
        report = inspect_with_status(inputs.target, cases[0][1], options)
        if output_format is OutputFormat.JSON:
            from jaxinspect.stages.jsondoc import render_json

            sys.stdout.write(render_json(report))
        else:
            from jaxinspect.renderers.stdout import stdout_console
            from jaxinspect.stages.console import render_console

            stdout_console().print(
                render_console(
                    report,
                    sections=sections,
                    max_lines=None if full else 40,
                    metadata=metadata,
                    rerun=inputs.rerun(transform),
                )
            )
    return None


def inspect_with_status(target: str, spec: "Spec", options: "InspectOptions") -> "InspectionReport":
    """Inspect ``target``, with a spinner on stderr when someone is there to see it."""
    from jaxinspect.cli.spinner import spinner
    from jaxinspect.stages.runner import inspect_target

    with spinner(f"inspecting {target} …"):
        return inspect_target(target, spec, options)


def parse_transform_options(texts: list[str] | None) -> Any:
    """The ``--transform`` options parsed (the grammar is imported when a command runs)."""
    from jaxinspect.inputs.transforms import parse_transforms

    return parse_transforms(texts)


def _show_case_comparison(
    inputs: RunInputs,
    cases: "tuple[tuple[str, Spec], ...]",
    options: "InspectOptions",
    output_format: OutputFormat,
) -> Outcome:
    """Inspect the target per case and print one comparison (JSON or a table) to stdout.

    A failed case is a row with its error; after the report every failure is printed on stderr,
    naming its case, and the command exits with the worst failure's exit code.
    """
    from rich.console import Console

    from jaxinspect.cli.sweep_exit import report_failed_cases
    from jaxinspect.renderers.stdout import stdout_console
    from jaxinspect.stages.caserunner import compare_cases
    from jaxinspect.stages.casesconsole import render_cases_console
    from jaxinspect.stages.casesjsondoc import render_cases_json

    target = inputs.target
    with Console(stderr=True).status(f"inspecting {target} for {len(cases)} cases …"):
        comparison = compare_cases(target, cases, options)
    if output_format is OutputFormat.JSON:
        sys.stdout.write(render_cases_json(comparison))
    else:
        stdout_console().print(render_cases_console(comparison))
    failed = [(case.name, case.error) for case in comparison.cases if case.error is not None]
    codes = report_failed_cases(failed, total=len(comparison.cases), debug=inputs.debug)
    return Outcome(failures=codes)


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
