"""The console script and ``python -m jaxinspect``: the typer app, or ``diff`` without it.

A well-formed ``diff`` of stored files is parsed and run here without importing typer (see
``jaxinspect.commands.diffrun``); everything else goes to the typer app in ``jaxinspect.cli``.
"""

import sys
from typing import NoReturn

from jaxinspect.fastexit import exit_without_teardown


def main() -> NoReturn:
    """Console-script entry point."""
    from jaxinspect.commands.diffrun import parse_plain_diff, run_diff

    plain = parse_plain_diff(sys.argv[1:])
    if plain is None:
        from jaxinspect.cli import main as typer_main

        typer_main()
    try:
        run_diff(plain)
    except SystemExit as exit_:
        exit_without_teardown(exit_.code)
    exit_without_teardown(0)
