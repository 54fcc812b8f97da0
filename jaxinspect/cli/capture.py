"""The report alone on stdout for the whole run, whatever the user's threads print (no jax).

``pipeline.usercode.user_code`` sends the user's output to stderr while jaxinspect calls the
user's code; but a thread the user's module started (a logger, a progress printer) keeps
printing between and after those calls. So for the whole run file descriptor 1 points at
stderr (C code, ``os.write(1, ...)``, child processes), the report goes to a private copy of
the original stdout, and ``sys.stdout`` sends the main thread's writes there and every other
thread's to stderr.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

from jaxinspect.process.streams import ClosedStdout


class ReportStdout(io.TextIOBase):
    """``sys.stdout`` during a run: the main thread writes the report, other threads stderr."""

    def __init__(self, report: TextIO, fd: int) -> None:
        self._report = report
        self._fd = fd

    def _target(self) -> Any:
        if threading.current_thread() is threading.main_thread():
            return self._report
        return sys.stderr

    def write(self, text: str) -> int:
        return int(self._target().write(text))

    def flush(self) -> None:
        self._report.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._report.isatty()

    def fileno(self) -> int:
        return self._fd

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._report.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._report.errors


@contextlib.contextmanager
def report_only_stdout() -> Iterator[None]:
    """For the block: fd 1 to stderr, ``sys.stdout`` the main thread's report (see above).

    Nested, the inner block changes nothing.

    Where stdout has no file descriptor (a test runner's buffer) or is closed, the block runs
    as it is: there is no descriptor for anyone else to write to.
    """
    original = sys.stdout
    if isinstance(original, ReportStdout):  # already in place (the console script holds it)
        yield
        return
    try:
        if isinstance(original, ClosedStdout) or original is None:
            raise OSError("no stdout")
        original.flush()
        saved = os.dup(original.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        yield
        return
    # Written through at once: a closed pipe or a full disk is an error inside the run,
    # where it maps to its exit code, never at the end.
    report = io.TextIOWrapper(
        io.FileIO(saved, "w", closefd=False),
        encoding=getattr(original, "encoding", None) or "utf-8",
        errors=getattr(original, "errors", None) or "strict",
        write_through=True,
    )
    try:
        os.dup2(2, original.fileno())
    except OSError:
        os.close(saved)
        yield
        return
    sys.stdout = ReportStdout(report, saved)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            os.dup2(saved, original.fileno())
        sys.stdout = original
        with contextlib.suppress(OSError):
            os.close(saved)
