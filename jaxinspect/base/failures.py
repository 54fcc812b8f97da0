"""A case of a sweep that failed: its error kept as data, so the other cases still run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from jaxinspect.errors import ExitCode, JaxInspectError, StageError
from jaxinspect.jsonfields import js

#: The exit codes of a failed case: never 0 or 1 (an error of the user's: 2, 3; or else 4...).
_FAILED_CODES = [int(code) for code in ExitCode if code >= ExitCode.USAGE_ERROR]


@dataclass(frozen=True, slots=True)
class CaseFailure:
    """Why one case of a sweep (``stages`` over cases, ``recompile``) has no result.

    Attributes:
        message: The error's message, as the single-case command would print it (for the
            user's code: its first line and the user's frames).
        exit_code: The code the single-case command would exit with: 2 when the case's spec
            does not fit (or another usage error), 3 when the user's code failed.
        stage: The pipeline stage that failed (``trace``, ``lower``, ``compile``,
            ``execute``...), or null for a spec or usage error.
        hint: The error's advice, if any.
        exception: The error itself, for ``--debug`` tracebacks; not part of equality.
    """

    message: str
    exit_code: ExitCode = field(metadata=js(schema={"enum": _FAILED_CODES}))
    stage: str | None = None
    hint: str | None = None
    exception: BaseException | None = field(
        default=None, compare=False, repr=False, metadata=js(omit=True)
    )

    @property
    def summary(self) -> str:
        """The message's first line (the rest is the user's frames), for a table cell."""
        return self.message.split("\n", 1)[0]


def case_failure(exc: JaxInspectError) -> CaseFailure:
    """The failure ``exc`` describes, ready to be shown as one row of a sweep."""
    stage = exc.stage if isinstance(exc, StageError) else None
    return CaseFailure(exc.message, exc.exit_code, stage, exc.hint, exc)


def worst_exit_code(codes: Iterable[int]) -> ExitCode:
    """The highest of ``codes`` (0 when there are none): a sweep exits with its worst case."""
    return ExitCode(max(codes, default=ExitCode.OK))
