"""The typer app: the one registry of commands, and running it on an argument list.

Every command lives in its own module under ``jaxinspect/cli/commands/``; none imports jax at
module level, so ``--help`` and ``--version`` stay fast.
"""

import importlib
import sys
from typing import Annotated, Any

import typer

from jaxinspect import __version__
from jaxinspect.errors import ExitCode
from jaxinspect.process.streams import silence_stdout

#: Every command, in ``--help`` order, and its module under ``jaxinspect/cli/commands/``,
#: whose ``register(app)`` adds it (``ir`` adds its three at once).
COMMANDS: dict[str, str] = {
    "stages": "stages",
    "jaxpr": "ir",
    "stablehlo": "ir",
    "hlo": "ir",
    "bench": "bench",
    "cost": "cost",
    "snapshot": "snapshot",
    "diff": "diff",
    "check": "check",
    "recompile": "recompile",
    "spec": "spec",
    "topologies": "topologies",
    "report": "report",
    "memory": "memory",
    "passes": "passes",
    "run": "run",
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"jaxinspect {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Inspect what JAX and XLA make of a function, stage by stage."""


def command_app(argv: list[str] | None = None) -> typer.Typer:
    """A typer app with the commands that running ``argv`` needs: all unless it names one.

    A run of one command imports and builds that command alone (typer introspects every
    registered command's signature on each run); ``--help``, errors and typo hints get all.
    """
    app = typer.Typer(
        name="jaxinspect",
        help="Show every stage of JAX's compilation pipeline for one function: jaxpr, "
        "StableHLO, optimized HLO, cost, memory and timings.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # Plain click help: typer.rich_utils costs ~120 ms of imports (rich.markdown,
        # markdown_it), more than the rest of `--help` together.
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    named = argv[0] if argv else None
    modules = [COMMANDS[named]] if named in COMMANDS else dict.fromkeys(COMMANDS.values())
    for module in modules:
        importlib.import_module(f"jaxinspect.cli.commands.{module}").register(app)
    return app


def __getattr__(name: str) -> Any:
    # ``from jaxinspect.cli.app import app`` (tests, embedding) gets every command.
    if name == "app":
        return command_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
