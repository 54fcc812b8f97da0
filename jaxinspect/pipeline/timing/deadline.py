"""``--timeout SECONDS``: stop a run that takes longer, even inside XLA (no jax here).

At the deadline a watchdog thread stops any child processes and raises ``RunTimedOut`` in the
main thread (through a SIGALRM handler), which ends the run like any error: one line, exit 124.
The main thread may be inside a long XLA compile or a slow call, where no Python code runs and
nothing can be raised; so when jaxinspect owns the process (its console script said so with
``own_process``), a main thread still busy ``GRACE_S`` later is not waited for: the watchdog
prints the same line and ends the process itself. Embedded (tests, the CLI fuzz), it never
ends the host process.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from jaxinspect.errors import ExitCode, RunTimedOut, UsageError

#: Seconds the main thread gets to end the run after the deadline before the process ends.
GRACE_S = 2.0

# Process-wide by nature: only the console script may end the process from a thread.
_owns_process = threading.Event()


def own_process() -> None:
    """Let deadlines end this process (called by the console script, never when embedded)."""
    _owns_process.set()


@contextmanager
def run_deadline(
    seconds: float | None,
    *,
    hint: str,
    option: str = "--timeout",
    on_expire: Callable[[], object] = dict,
) -> Iterator[None]:
    """Stop the block inside if it has not finished after ``seconds``.

    Args:
        seconds: The bound in wall-clock seconds; ``None`` for no bound.
        hint: What the user can do about it, printed under the error.
        option: How the user set the bound, for the message.
        on_expire: Called first when the bound is passed (stops child processes).

    Raises:
        UsageError: ``seconds`` is not a positive number.
        RunTimedOut: The bound was passed.
    """
    if seconds is None:
        yield
        return
    if not 0 < seconds < float("inf"):
        raise UsageError(f"{option} {seconds:g}: give a number of seconds above 0")
    message = f"the run took longer than {option} {seconds:g} s and was stopped"
    finished = threading.Event()
    lock = threading.Lock()
    in_main = threading.current_thread() is threading.main_thread()

    def raise_timed_out(signum: int, frame: FrameType | None) -> None:
        if not finished.is_set():  # the request may arrive as the run ends
            raise RunTimedOut(message, hint=hint)

    def expire() -> None:
        with lock:
            if finished.is_set():
                return
            on_expire()
            if in_main:
                _thread.interrupt_main(signal.SIGALRM)  # runs raise_timed_out there
        if not _owns_process.is_set() or finished.wait(GRACE_S):
            return
        with lock:
            if not finished.is_set():  # still busy in XLA or a slow call
                on_expire()
                abort_run(message, hint=hint, code=ExitCode.TIMED_OUT)

    previous_hook = sys.unraisablehook

    def raise_again(unraisable: Any) -> None:
        # The signal's handler ran where Python cannot let an exception out (a gc callback:
        # jax's runs on every collection), which printed "Exception ignored" and a traceback
        # and dropped it. Ask for it again from another thread, once out of here (asked from
        # here, it would be raised in this hook, where it is dropped too).
        if isinstance(unraisable.exc_value, RunTimedOut) and not finished.is_set():
            again = threading.Timer(0.01, _thread.interrupt_main, (signal.SIGALRM,))
            again.daemon = True
            again.start()
            return
        previous_hook(unraisable)

    previous = signal.signal(signal.SIGALRM, raise_timed_out) if in_main else None
    if in_main:
        sys.unraisablehook = raise_again
    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            finished.set()
        timer.cancel()
        if in_main:  # None: a handler not set from Python, which cannot be put back
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
            sys.unraisablehook = previous_hook


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
