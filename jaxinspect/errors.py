"""The one error type of jaxinspect and the exit codes it maps to."""

from __future__ import annotations

import enum
from typing import ClassVar


class ExitCode(enum.IntEnum):
    """Process exit codes; the CLI is the only place that turns errors into these."""

    #: Everything worked.
    OK = 0
    #: A comparison found differences (snapshots).
    DIFFERENCES = 1
    #: Bad flag, target, spec file or backend: the user's invocation needs fixing.
    USAGE_ERROR = 2
    #: The user's function failed while tracing, lowering, compiling or running.
    TARGET_FAILED = 3
    #: A bug in jaxinspect.
    INTERNAL_ERROR = 4
    #: The run took longer than ``--timeout`` and was stopped (124, as GNU ``timeout``).
    TIMED_OUT = 124
    #: A real Ctrl-C (SIGINT) stopped the run (128 + SIGINT, as shells report it).
    INTERRUPTED = 130
    #: stdout was closed before the report was written (``| head``, ``>&-``): nobody reads
    #: it, so the run ends quietly (128 + SIGPIPE, as for a process killed by SIGPIPE).
    CLOSED_PIPE = 141


class JaxInspectError(Exception):
    """Base of every error jaxinspect raises on purpose.

    Args:
        message: What went wrong, naming the file, key or option involved.
        hint: Optional advice on how to fix it, shown on its own line.
    """

    exit_code: ClassVar[ExitCode] = ExitCode.INTERNAL_ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(JaxInspectError):
    """A bad command-line option or combination of options."""

    exit_code = ExitCode.USAGE_ERROR


class TargetError(UsageError):
    """The ``file.py:name`` target cannot be found or imported."""


class SpecError(UsageError):
    """The shape spec is malformed or does not fit the function's signature."""


class RunTimedOut(JaxInspectError):
    """The run took longer than the user's ``--timeout``."""

    exit_code = ExitCode.TIMED_OUT


class StageError(JaxInspectError):
    """The user's function failed in one pipeline stage.

    Args:
        stage: The stage that failed (``trace``, ``lower``, ``compile``, ``execute``).
        message: The formatted failure, including the user's own frames.
    """

    exit_code = ExitCode.TARGET_FAILED

    def __init__(self, stage: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint or "Run with --debug for the full Python traceback.")
        self.stage = stage
