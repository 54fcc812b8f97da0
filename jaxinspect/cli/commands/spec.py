"""``jaxinspect spec``: print a YAML spec for the arguments a Python factory returns."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from jaxinspect.cli.exits import exits_by_outcome
from jaxinspect.cli.options import DebugOpt, TargetArg
from jaxinspect.errors import UsageError


def register(app: typer.Typer) -> None:
    """Add the ``spec`` command to ``app``."""
    app.command(name="spec")(spec)


@exits_by_outcome
def spec(
    target: TargetArg,
    factory: Annotated[
        str,
        typer.Option(
            "--from",
            help="FILE.py:NAME or package.module:NAME returning TARGET's arguments: a mapping "
            "by parameter name or a tuple in order.",
        ),
    ],
    kwarg: Annotated[
        list[str] | None,
        typer.Option("--kwarg", help="NAME=VALUE (a YAML value) for the factory, repeatable."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the spec to this file (from: paths relative to it; - for stdout).",
        ),
    ] = None,
    debug: DebugOpt = False,
) -> None:
    """Print a YAML spec for the arguments --from returns, evaluated abstractly.

    Arrays in plain dicts and lists become leaves like f32[8,16]; other pytree nodes (a
    TrainState, an optimizer state, a module) become `from:` nodes with a `path:`.
    """
    from jaxinspect.atomicfile import write_atomically
    from jaxinspect.cli.outputs import is_stdout, output_path
    from jaxinspect.inputs.specwriter import write_spec_text
    from jaxinspect.inputs.target import load_target

    given = None if output is None or is_stdout(output) else output
    dest = None if given is None else output_path(given, "--output")
    text = write_spec_text(load_target(target), factory, _kwargs(kwarg), output=dest)
    if dest is None:
        sys.stdout.write(text)
        return
    write_atomically(dest, text, what="the spec")
    typer.echo(f"wrote {given}", err=True)


def _kwargs(options: list[str] | None) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for option in options or []:
        name, sep, text = option.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise UsageError(f"--kwarg {option!r}: expected NAME=VALUE, e.g. --kwarg width=256")
        try:
            out[name] = yaml.safe_load(text)
        except yaml.YAMLError:
            raise UsageError(f"--kwarg {option!r}: {text!r} is not a YAML value") from None
    return out
