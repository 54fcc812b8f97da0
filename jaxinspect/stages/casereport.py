"""The multi-case ``stages`` report: every case's full report (or its error), side by side."""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.base.failures import CaseFailure, worst_exit_code
from jaxinspect.base.inspection import InspectionReport
from jaxinspect.errors import ExitCode


@dataclass(frozen=True, slots=True)
class CaseReport:
    """One case's full report (or its error), and the arguments that set it apart."""

    name: str
    source: str
    #: ``None`` when the case failed; ``error`` then says why.
    report: InspectionReport | None
    #: ``path dtype[dims]`` or ``path=value`` of every argument that differs between the
    #: cases that ran (empty for a failed case).
    distinct_args: tuple[str, ...]
    error: CaseFailure | None = None


@dataclass(frozen=True, slots=True)
class CaseComparison:
    """Every case of one target, each traced, lowered and compiled once."""

    target: str
    composition: str | None
    cases: tuple[CaseReport, ...]

    @property
    def failures(self) -> tuple[CaseReport, ...]:
        """The cases that failed, in file order."""
        return tuple(case for case in self.cases if case.error is not None)

    @property
    def exit_code(self) -> ExitCode:
        """The worst exit code of the failed cases; 0 when every case ran."""
        return worst_exit_code(c.error.exit_code for c in self.cases if c.error is not None)
