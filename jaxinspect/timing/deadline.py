"""``--timeout SECONDS``: end a run that takes longer, from a watchdog thread (no jax here).

The bound must hold while the main thread is inside a long XLA compile or a slow call, where
no Python signal handler or exception can reach it, so the watchdog ends the process itself:
it stops any child processes, prints one error line and exits with ``ExitCode.TIMED_OUT``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from jaxinspect.errors import ExitCode, UsageError


@contextmanager
def run_deadline(
    seconds: float | None,
    *,
    hint: str,
    option: str = "--timeout",
    on_expire: Callable[[], object] = dict,
) -> Iterator[None]:
    """End the process if the block inside has not finished after ``seconds``.

    Args:
        seconds: The bound in wall-clock seconds; ``None`` for no bound.
        hint: What the user can do about it, printed under the error.
        option: How the user set the bound, for the message.
        on_expire: Called first when the bound is passed (stops child processes).

    Raises:
        UsageError: ``seconds`` is not a positive number.
    """
    if seconds is None:
        yield
        return
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"{option} {seconds:g}: give a number of seconds above 0")
    lock = threading.Lock()
    finished = threading.Event()

    def expire() -> None:
        with lock:
            if finished.is_set():  # the run ended as the timer fired
                return
            on_expire()
            abort_run(
                f"the run took longer than {option} {seconds:g} s and was stopped",
                hint=hint,
                code=ExitCode.TIMED_OUT,
            )

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            finished.set()
        timer.cancel()


def abort_run(message: str, *, hint: str | None, code: int) -> None:
    """Print ``Error: message`` (and the hint) on stderr and end the process with ``code`` now.

    ``os._exit``: the main thread may be deep in XLA, and atexit handlers could wait on it.
    """
    stderr = sys.stderr
    with contextlib.suppress(OSError, ValueError):
        if stderr.isatty():
            stderr.write("\x1b[?25h\n")  # a progress bar may have hidden the cursor
        stderr.write(f"Error: {message}\n")
        if hint:
            stderr.write(f"Hint: {hint}\n")
        stderr.flush()
        sys.stdout.flush()
    os._exit(int(code))
