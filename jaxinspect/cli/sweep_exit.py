"""End a sweep whose cases failed: each error on stderr, naming its case; the worst exit code."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jaxinspect.process.streams import print_error

if TYPE_CHECKING:
    from jaxinspect.base.failures import CaseFailure


def exit_for_failed_cases(
    failures: Sequence[tuple[str, CaseFailure]], *, total: int, debug: bool, code: int = 0
) -> None:
    """After the report is printed: one error per failed case, then exit with the worst code.

    Args:
        failures: ``(case name, failure)`` of every failed case, in spec order.
        total: How many cases the sweep ran, failed ones included.
        debug: Also print each failure's full Python traceback (``--debug``).
        code: The exit code the sweep has without its failures (1 for an exceeded gate).

    Returns only when there is nothing to report (no failure and ``code`` 0).
    """
    from jaxinspect.base.failures import worst_exit_code

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
    worst = worst_exit_code([code, *(f.exit_code for _, f in failures)])
    if worst:
        raise SystemExit(int(worst))
