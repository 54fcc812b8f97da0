"""The console script and ``python -m jaxinspect``: the typer app, or ``diff`` without it.

A well-formed ``diff`` of stored files is parsed and run here without importing typer (see
``jaxinspect.commands.diffrun``); everything else goes to the typer app in ``jaxinspect.cli``.
"""

import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

from jaxinspect.fastexit import exit_without_teardown

T = TypeVar("T")


def main() -> NoReturn:
    """Console-script entry point."""
    from jaxinspect.commands.diffrun import parse_plain_diff, run_diff

    plain = parse_plain_diff(sys.argv[1:])
    if plain is None:
        from jaxinspect.cli import main as typer_main

        typer_main()
    exit_without_teardown(exit_code_of(run_diff, plain))


def exit_code_of(command: Callable[[T], None], args: T) -> object:
    """Run ``command(args)``; its exit code, with Ctrl-C ending it as the typer app would."""
    try:
        command(args)
    except SystemExit as exit_:
        return exit_.code
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)
        return 1
    return 0
