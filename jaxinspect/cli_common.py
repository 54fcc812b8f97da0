"""Options, spec loading and error handling shared by every command (no jax import here)."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from jaxinspect.errors import ExitCode, JaxInspectError, UsageError

if TYPE_CHECKING:
    from jaxinspect.spec import Spec

TargetArg = Annotated[
    str, typer.Argument(help="FILE.py:NAME or package.module:NAME (NAME may be dotted).")
]
ShapesOpt = Annotated[
    str | None, typer.Option("--shapes", "-s", help="YAML spec of the abstract arguments.")
]
ArgOpt = Annotated[
    list[str] | None,
    typer.Option("--arg", help="NAME=DTYPE[DIMS], repeatable; instead of --shapes."),
]
BackendOpt = Annotated[
    str | None, typer.Option(help="Platform to compile for (cpu, gpu, tpu); default: JAX's.")
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show Python tracebacks on errors.")]


def load_cli_spec(shapes: str | None, arg: list[str] | None) -> Spec:
    from jaxinspect.spec import Spec, load_spec, parse_arg_options

    if shapes is not None and arg:
        raise UsageError("give either --shapes SPEC or --arg options, not both")
    if shapes is not None:
        return load_spec(shapes)
    if arg:
        return parse_arg_options(arg)
    return Spec(source="(no --shapes)", args=())


@contextmanager
def errors_to_exit_codes(debug: bool) -> Iterator[None]:
    """Map jaxinspect's errors to messages on stderr and exit codes; only bugs get tracebacks."""
    try:
        yield
    except typer.Exit:
        raise
    except JaxInspectError as exc:
        if debug:
            raise
        fail(exc.message, exc.hint, exc.exit_code)
    except KeyboardInterrupt:
        raise
    except Exception:
        if debug:
            raise
        traceback.print_exc()
        fail(
            "internal error in jaxinspect (a bug; please report it with the traceback above)",
            None,
            ExitCode.INTERNAL_ERROR,
        )


def fail(message: str, hint: str | None, code: ExitCode) -> NoReturn:
    typer.echo(f"Error: {message}", err=True)
    if hint:
        typer.echo(f"Hint: {hint}", err=True)
    raise typer.Exit(int(code))
