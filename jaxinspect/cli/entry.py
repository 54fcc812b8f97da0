"""The console script and ``python -m jaxinspect``: the typer app, or ``diff`` without it.

A well-formed ``diff`` of stored files is parsed and run here without importing typer (see
``jaxinspect.cli.commands.diff``); everything else goes to the typer app
(``jaxinspect.cli.app``).
"""

import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

from jaxinspect.cli.capture import report_only_stdout
from jaxinspect.errors import ExitCode
from jaxinspect.pipeline.timing.deadline import own_process
from jaxinspect.process.fastexit import exit_without_teardown
from jaxinspect.process.hashseed import reexec_with_fixed_seed
from jaxinspect.process.interrupts import install_sigint_handler
from jaxinspect.process.streams import prepare_std_streams

T = TypeVar("T")


def main() -> NoReturn:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if not _plain_diff(argv):  # a diff of stored files runs no user code
        reexec_with_fixed_seed(argv)  # before jax: the user's code runs under a fixed hash seed
    prepare_std_streams()
    install_sigint_handler()
    own_process()  # --timeout may end this process from its watchdog thread
    # Held to the very end: the user's threads may still print while the process ends.
    with report_only_stdout():
        exit_without_teardown(run(argv))


def run(argv: list[str]) -> object:
    """Run one invocation in this process and return its exit code (``main`` minus the exit).

    Tests and the CLI fuzz call this to go through exactly what the console script does.
    """
    with report_only_stdout():  # the user's threads may print at any time
        if argv[:1] == ["diff"]:
            from jaxinspect.cli.commands.diff import parse_plain_diff, run_diff

            plain = parse_plain_diff(argv)
            if plain is not None:
                return exit_code_of(run_diff, plain)
        from jaxinspect.process.nativelog import quiet_cuda_import

        quiet_cuda_import()  # JAX's CUDA plugin, where installed, logs on a host without a GPU
        from jaxinspect.cli.app import run_app

        return run_app(argv)


def _plain_diff(argv: list[str]) -> bool:
    if argv[:1] != ["diff"]:
        return False
    from jaxinspect.cli.commands.diff import parse_plain_diff

    return parse_plain_diff(argv) is not None


def exit_code_of(command: Callable[[T], None], args: T) -> object:
    """Run ``command(args)``; its exit code, with Ctrl-C ending it as the typer app does (130)."""
    try:
        command(args)
    except SystemExit as exit_:
        return exit_.code
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    return 0
