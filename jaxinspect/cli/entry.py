"""The console script and ``python -m jaxinspect``: the typer app, or ``diff`` without it.

A well-formed ``diff`` of stored files is parsed and run here without importing typer (see
``jaxinspect.cli.commands.diff``); everything else goes to the typer app
(``jaxinspect.cli.app``).
"""

import gc
import os
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

T = TypeVar("T")


def main() -> NoReturn:
    """Console-script entry point."""
    argv = sys.argv[1:]
    try:
        if argv[:1] == ["diff"]:
            # A short-lived process that builds no garbage cycles worth collecting: the
            # collector would walk every object the imports create, again and again.
            gc.disable()
            _prestart_diff_count(argv)  # first: everything imported below overlaps the count
        _start(argv)
        from jaxinspect.cli.capture import report_only_stdout
        from jaxinspect.process.fastexit import exit_without_teardown
    except KeyboardInterrupt:
        # Ctrl-C before the command runs (reading the old file, importing): the exit code
        # and the silence of an interrupted command, not a traceback of the imports.
        from jaxinspect.errors import ExitCode

        raise SystemExit(int(ExitCode.INTERRUPTED)) from None
    # Held to the very end: the user's threads may still print while the process ends.
    with report_only_stdout():
        exit_without_teardown(run(argv))


def _start(argv: list[str]) -> None:
    """What the process does before the command: a plain ``diff`` runs no user code, anything
    else is re-run under a fixed hash seed; then its streams, Ctrl-C and ``--timeout``."""
    from jaxinspect.pipeline.timing.deadline import own_process
    from jaxinspect.process.hashseed import reexec_with_fixed_seed
    from jaxinspect.process.interrupts import install_sigint_handler
    from jaxinspect.process.streams import prepare_std_streams

    if not _plain_diff(argv):  # a diff of stored files runs no user code
        if argv[:1] == ["diff"]:
            from jaxinspect.snapshot.loosefile import drop_prestarted

            drop_prestarted()
        reexec_with_fixed_seed(argv)  # before jax: the user's code runs under a fixed hash seed
    prepare_std_streams()
    install_sigint_handler()
    own_process()  # --timeout may end this process from its watchdog thread


def run(argv: list[str]) -> object:
    """Run one invocation in this process and return its exit code (``main`` minus the exit).

    Tests and the CLI fuzz call this to go through exactly what the console script does.
    """
    from jaxinspect.cli.capture import report_only_stdout

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


def _prestart_diff_count(argv: list[str]) -> None:
    """For ``diff OLD NEW``, read OLD and fork the count of its ops (where it is a large HLO
    text) before anything else is imported: the count is the longest step of a large ``diff``,
    and the imports (about a third of a 200,000-line diff's time) then run beside it."""
    from jaxinspect.cli.diffargv import diff_tokens

    tokens = diff_tokens(argv)
    if tokens is not None and len(tokens[2]) == 2:
        from jaxinspect.snapshot.loosefile import prestart_count

        if _large(tokens[2][0]):
            from jaxinspect.process.hugepages import advise_heap

            advise_heap()  # before the files are read: they are the largest allocations
        prestart_count(*tokens[2])


def _large(path: str) -> bool:
    """Whether ``path`` is a file large enough for ``diff`` to count in a forked child."""
    from jaxinspect.snapshot.background import MIN_FORK_CHARS

    try:
        return os.stat(path).st_size >= MIN_FORK_CHARS
    except (OSError, ValueError):
        return False


def _plain_diff(argv: list[str]) -> bool:
    if argv[:1] != ["diff"]:
        return False
    from jaxinspect.cli.commands.diff import parse_plain_diff

    return parse_plain_diff(argv) is not None


def exit_code_of(command: Callable[[T], None], args: T) -> object:
    """Run ``command(args)``; its exit code, with Ctrl-C ending it as the typer app does (130)."""
    from jaxinspect.errors import ExitCode

    try:
        command(args)
    except SystemExit as exit_:
        return exit_.code
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    return 0
