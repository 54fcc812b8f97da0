"""Report a sweep's failed cases: each error on stderr, naming its case, and their exit codes."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jaxinspect.process.streams import print_error

if TYPE_CHECKING:
    from jaxinspect.base.failures import CaseFailure
    from jaxinspect.errors import ExitCode


def report_failed_cases(
    failures: Sequence[tuple[str, CaseFailure]], *, total: int, debug: bool
) -> tuple[ExitCode, ...]:
    """After the report is printed: one error per failed case, then a line that counts them.

    Args:
        failures: ``(case name, failure)`` of every failed case, in spec order.
        total: How many cases the sweep ran, failed ones included.
        debug: Also print each failure's full Python traceback (``--debug``).

    Returns:
        The failures' exit codes, for the command's ``Outcome`` (``cli/exits.py`` decides).
    """
    hints: list[str] = []
    for name, failure in failures:
        if debug and failure.exception is not None:
            traceback.print_exception(failure.exception)
        print_error(f"case {name}: {failure.message}")
        if failure.hint and failure.hint not in hints:
            hints.append(failure.hint)
    for hint in hints:
        print_error(hint, prefix="Hint")
    if failures:
        names = ", ".join(n for n, _ in failures)
        others = "none ran to the end" if len(failures) >= total else "the others ran"
        print_error(f"{len(failures)} of {total} cases failed ({names}); {others}")
    return tuple(failure.exit_code for _, failure in failures)
