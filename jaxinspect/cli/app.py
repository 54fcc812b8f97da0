"""The typer command line: parse options, call the core, render, map errors to exit codes.

jax is imported inside command bodies only, so ``--help`` and ``--version`` stay fast.
"""

import enum
import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from jaxinspect import __version__
from jaxinspect.cli.fastexit import exit_without_teardown
from jaxinspect.cli.options import (
    ArgOpt,
    BackendOpt,
    CaseOpt,
    DebugOpt,
    MaxInputBytesOpt,
    SeedOpt,
    ShapesOpt,
    TargetArg,
    TimeoutOpt,
    TransformOpt,
    errors_to_exit_codes,
    load_cli_cases,
    load_cli_spec,
)
from jaxinspect.cli.streams import silence_stdout
from jaxinspect.errors import ExitCode, UsageError
from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES
from jaxinspect.pipeline.timing.deadline import run_deadline
from jaxinspect.reports.sections import IR_STAGES, SECTIONS
from jaxinspect.suggest import did_you_mean

if TYPE_CHECKING:
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.pipeline.inspection import InspectOptions
    from jaxinspect.reports.stages import InspectionReport

#: Modules under ``jaxinspect/commands/`` that add commands; each has ``register(app)``.
#: They must not import jax at module level (``--help`` imports them all).
COMMAND_MODULES: tuple[str, ...] = ("bench", "cost", "snapshot", "recompile", "spec")
#: The commands each of those modules registers, so a run imports and builds its own alone.
MODULE_COMMANDS: dict[str, tuple[str, ...]] = {
    "bench": ("bench",),
    "cost": ("cost",),
    "snapshot": ("snapshot", "diff", "check"),
    "recompile": ("recompile",),
    "spec": ("spec",),
}

_app = typer.Typer(
    name="jaxinspect",
    help="Show every stage of JAX's compilation pipeline for one function: jaxpr, StableHLO, "
    "optimized HLO, cost, memory and timings.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: typer.rich_utils costs ~120 ms of imports (rich.markdown, markdown_it),
    # more than the rest of `--help` together.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class OutputFormat(enum.StrEnum):
    """Output formats of the ``stages`` command."""

    TABLE = "table"
    JSON = "json"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"jaxinspect {__version__}")
        raise typer.Exit()


@_app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Inspect what JAX and XLA make of a function, stage by stage."""


@_app.command()
def stages(
    target: TargetArg,
    shapes: ShapesOpt = None,
    arg: ArgOpt = None,
    backend: BackendOpt = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="table for people, json for machines.")
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
    max_input_bytes: MaxInputBytesOpt = DEFAULT_MAX_INPUT_BYTES,
    full: Annotated[bool, typer.Option("--full", help="Show each IR whole in table mode.")] = False,
    transform: TransformOpt = None,
    case: CaseOpt = None,
    timeout: TimeoutOpt = None,
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
            transforms=_transforms(transform),
            progress=_progress_line,
        )
        cases = load_cli_cases(shapes, arg, case)
        if len(cases) > 1:
            from jaxinspect.cli.commands.cases_view import show_case_comparison

            as_json = output_format is OutputFormat.JSON
            show_case_comparison(target, cases, options, json=as_json, debug=debug)
            return
        report = _inspect(target, cases[0][1], options)
        if output_format is OutputFormat.JSON:
            from jaxinspect.renderers.stages.jsondoc import render_json

            sys.stdout.write(render_json(report))
        else:
            from jaxinspect.renderers.stages.console import render_console

            _stdout_console().print(
                render_console(report, sections=sections, max_lines=None if full else 40)
            )


def _single_stage_command(name: str, title: str) -> Callable[..., None]:
    def command(
        target: TargetArg,
        shapes: ShapesOpt = None,
        arg: ArgOpt = None,
        backend: BackendOpt = None,
        transform: TransformOpt = None,
        case: CaseOpt = None,
        debug: DebugOpt = False,
    ) -> None:
        with errors_to_exit_codes(debug):
            from jaxinspect.pipeline.inspection import InspectOptions

            options = InspectOptions(
                backend=backend,
                sections=(name,),
                execute=False,
                transforms=_transforms(transform),
            )
            report = _inspect(target, load_cli_spec(shapes, arg, case), options)
            stage = report.stage(name)
            assert stage is not None  # the pipeline ran up to this stage or raised
            sys.stdout.write(stage.text if stage.text.endswith("\n") else stage.text + "\n")

    command.__doc__ = f"Print the {title} of TARGET as plain text (pipeable)."
    return command


for _name, _title in zip(IR_STAGES, ("jaxpr", "StableHLO module", "optimized HLO"), strict=True):
    _app.command(name=_name)(_single_stage_command(_name, _title))


_TIMEOUT_HINT = "Raise --timeout, or time fewer calls with --runs N (or none: --no-execute)."


def _progress_line(event: Any) -> None:
    # Slow calls only; a spinner on a terminal shows stderr lines above itself.
    print(event.line(), file=sys.stderr, flush=True)


def _transforms(texts: list[str] | None) -> Any:
    from jaxinspect.inputs.transforms import parse_transforms

    return parse_transforms(texts)


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


def _inspect(target: str, spec: "Spec", options: "InspectOptions") -> "InspectionReport":
    from jaxinspect.pipeline.inspection import inspect_target

    if not sys.stderr.isatty():  # no one to see a spinner: skip importing rich.live for it
        return inspect_target(target, spec, options)
    from rich.console import Console

    # Progress goes to stderr so stdout carries the report alone.
    with Console(stderr=True).status(f"inspecting {target} …"):
        return inspect_target(target, spec, options)


def _stdout_console() -> Any:
    from jaxinspect.renderers.stdout import stdout_console

    return stdout_console()


_registered: list[str] = []


def command_app(argv: list[str] | None = None) -> typer.Typer:
    """The app with the commands that running ``argv`` needs: all of them unless it names one.

    Each command module costs an import and typer's introspection of its signatures; a run of
    ``diff`` or ``stages`` needs none of the others (help, errors and typo hints get all).
    """
    wanted = COMMAND_MODULES
    if argv:
        named = [m for m, commands in MODULE_COMMANDS.items() if argv[0] in commands]
        builtin = argv[0] in {"stages", *IR_STAGES}
        if named or builtin:
            wanted = tuple(named)
    for module in wanted:
        if module not in _registered:
            importlib.import_module(f"jaxinspect.cli.commands.{module}").register(_app)
            _registered.append(module)
    return _app


def __getattr__(name: str) -> Any:
    # ``from jaxinspect.cli.app import app`` (tests, embedding) gets every command.
    if name == "app":
        return command_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> NoReturn:
    """Run the typer app on ``sys.argv`` and end the process (see ``jaxinspect.cli.entry``)."""
    exit_without_teardown(run_app(sys.argv[1:]))


def run_app(argv: list[str]) -> object:
    """Run the typer app on ``argv`` in this process; its exit code."""
    streams = sys.stdout, sys.stderr
    try:
        command_app(argv)(args=argv, prog_name="jaxinspect")
    except SystemExit as exit_:
        code = exit_.code
    else:
        code = 0
    # On a closed stdout (help text, --version) typer wraps the streams in click's
    # PacifyFlushWrapper and exits 1, which CI would read as "differences": a closed pipe.
    if (sys.stdout, sys.stderr) != streams:
        sys.stdout, sys.stderr = streams
        silence_stdout()
        return int(ExitCode.CLOSED_PIPE)
    return code
