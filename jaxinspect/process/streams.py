"""The standard streams at the edges of a run: closed at start, closed or full at the end.

jaxinspect writes its report to stdout. When nobody reads it any more (``| head``, ``| true``,
or stdout closed outright with ``>&-``), the run ends quietly with ``ExitCode.CLOSED_PIPE``
(141, what a shell shows for a process ended by SIGPIPE): no traceback, and never 1 (CI reads
that as "differences") or 4 ("a bug"). Any other failure to write stdout (``/dev/full``) is a
one-line error with exit 2. No jax import.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jaxinspect.errors import ExitCode
from jaxinspect.usertext import escape_controls


class ClosedStdout(io.TextIOBase):
    """Stands in for ``sys.stdout`` when the process started without one (``>&-``).

    Writing to it is writing to a closed pipe: the run ends with ``ExitCode.CLOSED_PIPE``.
    """

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "stdout is closed")

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:  # fd 1 is /dev/null (see prepare_std_streams)
        return 1


def prepare_std_streams() -> None:
    """Give the process open file descriptors 0, 1 and 2, and Python objects for them.

    A process started with a standard stream closed would hand that descriptor number to the
    next file it opens; output meant for stdout (from C code, or the user's) would then land
    in a spec, a snapshot or a cache file. They are opened on /dev/null instead, and a missing
    stdout becomes ``ClosedStdout``.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stdout is None:
        sys.stdout = ClosedStdout()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def is_closed_pipe(exc: BaseException) -> bool:
    """Whether ``exc`` says the reader of a pipe we write to has gone away."""
    return isinstance(exc, BrokenPipeError) or (
        isinstance(exc, OSError) and exc.errno == errno.EPIPE
    )


def silence_stdout() -> None:
    """Send what is left of stdout to /dev/null, so no later flush fails again.

    The recipe of Python's documentation for SIGPIPE: point the descriptor at /dev/null.
    """
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


def flush_std_streams(status: int) -> int:
    """Flush stdout and stderr at the end of a run; the exit status, corrected for stdout.

    A report that cannot be delivered makes a successful (0) or "differences" (1) run end
    with 141 for a closed pipe, or with 2 and one line on stderr for another write error;
    an error status (2, 3, 4...) already says more and is kept.
    """
    stdout = sys.stdout
    try:
        if stdout is not None:
            stdout.flush()
    except Exception as exc:
        silence_stdout()
        if status in (ExitCode.OK, ExitCode.DIFFERENCES):
            if is_closed_pipe(exc):
                status = ExitCode.CLOSED_PIPE
            else:
                print_error(f"cannot write the report to stdout: {describe_os_error(exc)}")
                status = ExitCode.USAGE_ERROR
    with contextlib.suppress(Exception):
        if sys.stderr is not None:
            sys.stderr.flush()
    return int(status)


def describe_os_error(exc: BaseException) -> str:
    """``No space left on device`` rather than ``[Errno 28] No space left on device: 'x'``."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def print_error(line: str, *, prefix: str = "Error") -> None:
    """``line`` on stderr, if stderr can still take it (the exit code says what happened)."""
    with contextlib.suppress(Exception):
        print(f"{prefix}: {escape_controls(line)}", file=sys.stderr, flush=True)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send writes to stdout to stderr for the block: ``sys.stdout`` and file descriptor 1.

    Several threads may be inside at once (``check --jobs``): the first one in redirects, the
    last one out restores, so no thread restores stdout while another's user code still runs.
    """
    with _REDIRECT_LOCK:
        if not _REDIRECT["depth"]:
            _REDIRECT["state"] = _redirect()
        _REDIRECT["depth"] += 1
    try:
        yield
    finally:
        with _REDIRECT_LOCK:
            _REDIRECT["depth"] -= 1
            if not _REDIRECT["depth"]:
                _restore(_REDIRECT.pop("state"))


#: The redirection shared by the threads inside ``stdout_to_stderr``, and its nesting depth.
_REDIRECT: dict[str, Any] = {"depth": 0}
_REDIRECT_LOCK = threading.Lock()


def _redirect() -> tuple[Any, Any, int | None]:
    saved_out, saved_err = sys.stdout, sys.stderr
    _flush(saved_out)  # the report so far goes to the real stdout, not to stderr below
    saved_fd = _redirect_fd1()
    sys.stdout = saved_err
    return saved_out, saved_err, saved_fd


def _restore(state: tuple[Any, Any, int | None]) -> None:
    saved_out, saved_err, saved_fd = state
    # What the code wrote while fd 1 pointed at stderr must leave every buffer now: later,
    # fd 1 is the report again (and os._exit at the end flushes no C buffers at all).
    for stream in {id(s): s for s in (sys.stdout, sys.__stdout__, saved_err)}.values():
        _flush(stream)
    if saved_fd is not None:
        _flush_c_stdio()
        with contextlib.suppress(OSError):
            os.dup2(saved_fd, 1)
        os.close(saved_fd)
    sys.stdout, sys.stderr = saved_out, saved_err


def _redirect_fd1() -> int | None:
    """Point fd 1 at fd 2, returning a copy of the old fd 1; ``None`` when either is closed."""
    try:
        saved = os.dup(1)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        return None
    return saved


def _flush(stream: object) -> None:
    # A closed or broken stream has nothing to deliver; the report's own write will say so.
    with contextlib.suppress(Exception):
        stream.flush()  # type: ignore[attr-defined]


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers (``printf`` from extensions), where ctypes is already loaded."""
    if "ctypes" not in sys.modules or os.name != "posix":
        return
    with contextlib.suppress(Exception):
        _libc().fflush(None)


@functools.cache
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None)
