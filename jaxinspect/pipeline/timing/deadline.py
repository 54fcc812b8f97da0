"""``--timeout SECONDS``: stop a run that takes longer, whatever the user's code does (no jax).

The bound is enforced from outside the user's Python frames. When jaxinspect owns the process
(its console script said so with ``own_process``), a watchdog thread ends it at the deadline:
it stops any child processes, flushes what the run wrote, prints one line and calls
``os._exit(124)``. Nothing the main thread is doing (an ``except Exception`` or bare
``except`` in the user's code, a host callback, a long XLA compile) can delay or catch that,
and no exception is thrown into jax's internals, which could leave them half-built.

Embedded (tests, the CLI fuzz), the host process is never ended: the watchdog interrupts the
main thread with ``DeadlinePassed``, a ``BaseException`` that ``except Exception`` does not
catch, and once the deadline has passed the run ends with ``RunTimedOut`` (exit 124) however
its block ended (normally, with the user's error, or with the user having swallowed the
interrupt).
"""

from __future__ import annotations

import _thread
import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from jaxinspect.errors import ExitCode, RunTimedOut, UsageError

#: The longest bound accepted, in seconds (about 11.6 days): past it, a bound is a typo, and
#: far past it (1e308) the platform's timers overflow.
MAX_TIMEOUT_S = 1_000_000.0
#: Seconds the watchdog waits for the standard streams to flush before ending the process
#: (a reader that stopped reading a pipe must not keep the process alive).
FLUSH_WAIT_S = 1.0

# Process-wide by nature: only the console script may end the process from a thread.
_owns_process = threading.Event()
# The process's standard error as it was when the console script started: at the deadline,
# file descriptor 2 may be a temporary file (``quiet_native_stderr`` catches what JAX's
# plugins write while they start, seconds with libtpu), where the message would be lost.
_stderr_fd = 2


class DeadlinePassed(BaseException):
    """Thrown into the main thread at the deadline when the process is embedded.

    A ``BaseException``, so that the user's ``except Exception`` lets it through.
    """


def own_process() -> None:
    """Let deadlines end this process (called by the console script, never when embedded)."""
    global _stderr_fd
    if not _owns_process.is_set():
        with contextlib.suppress(OSError):  # no fd 2 at all: the message goes nowhere anyway
            _stderr_fd = os.dup(2)
    _owns_process.set()


def check_timeout(seconds: float, option: str = "--timeout") -> None:
    """Reject a bound that is not a finite number of seconds in (0, ``MAX_TIMEOUT_S``].

    Raises:
        UsageError: ``seconds`` is out of range.
    """
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_TIMEOUT_S):
        raise UsageError(
            f"{option} {seconds:g}: give a number of seconds above 0 and at most "
            f"{MAX_TIMEOUT_S:,.0f}"
        )


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
        UsageError: ``seconds`` is not a number of seconds in range.
        RunTimedOut: The bound was passed (embedded; the console script exits 124 itself).
    """
    if seconds is None:
        yield
        return
    check_timeout(seconds, option)
    message = f"the run took longer than {option} {seconds:g} s and was stopped"
    finished = threading.Event()
    expired = threading.Event()
    lock = threading.Lock()
    in_main = threading.current_thread() is threading.main_thread()

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if not finished.is_set():  # the request may arrive as the run ends
            raise DeadlinePassed

    def expire() -> None:
        with lock:
            if finished.is_set():
                return
            expired.set()
            on_expire()
            if _owns_process.is_set():
                abort_run(message, hint=hint, code=ExitCode.TIMED_OUT)
            if in_main:
                _thread.interrupt_main(signal.SIGALRM)  # runs interrupt() there

    previous_hook = sys.unraisablehook

    def raise_again(unraisable: Any) -> None:
        # The signal's handler ran where Python cannot let an exception out (a gc callback:
        # jax's runs on every collection), which printed "Exception ignored" and a traceback
        # and dropped it. Ask for it again from another thread, once out of here (asked from
        # here, it would be raised in this hook, where it is dropped too).
        if isinstance(unraisable.exc_value, DeadlinePassed) and not finished.is_set():
            again = threading.Timer(0.01, _thread.interrupt_main, (signal.SIGALRM,))
            again.daemon = True
            again.start()
            return
        previous_hook(unraisable)

    previous = signal.signal(signal.SIGALRM, interrupt) if in_main else None
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
        if expired.is_set():  # whatever the block did after the deadline, it timed out
            raise RunTimedOut(message, hint=hint) from None


def abort_run(message: str, *, hint: str | None, code: int) -> None:
    """Flush the standard streams, print ``Error: message`` (and the hint), end with ``code``.

    ``os._exit``: the main thread may be deep in XLA or in the user's code, and atexit
    handlers could wait on it. The message goes to file descriptor 2 directly: the main
    thread may hold ``sys.stderr``'s lock, and fd 2 may be caught for the while
    (``_stderr_fd``). Flushing waits ``FLUSH_WAIT_S`` at most.
    """
    _flush_with_patience()
    # A progress bar may have hidden the cursor.
    lines = "\x1b[?25h\n" if _is_tty(_stderr_fd) else ""
    lines += f"Error: {message}\n"
    if hint:
        lines += f"Hint: {hint}\n"
    with contextlib.suppress(OSError):
        os.write(_stderr_fd, lines.encode("utf-8", "replace"))
    os._exit(int(code))


def _flush_with_patience() -> None:
    def flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()

    flusher = threading.Thread(target=flush, daemon=True)
    flusher.start()
    flusher.join(FLUSH_WAIT_S)


def _is_tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
