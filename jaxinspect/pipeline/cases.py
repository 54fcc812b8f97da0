"""Run every case of a multi-case spec through ``stages`` and line their reports up.

A case that fails (its spec does not bind, the user's code raises) becomes a row with its
error; the other cases still run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaxinspect.errors import ExitCode, JaxInspectError
from jaxinspect.inputs.leaves import SHORT_DTYPES
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import load_target
from jaxinspect.pipeline.inspection import InspectOptions, run_inspection
from jaxinspect.reports.failures import CaseFailure, case_failure, failure_to_dict, worst_exit_code
from jaxinspect.reports.stages import InspectionReport, report_to_dict

_SHORT = {long: short for short, long in SHORT_DTYPES.items()}


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


def compare_cases(
    target: str, cases: tuple[tuple[str, Spec], ...], options: InspectOptions
) -> CaseComparison:
    """Inspect ``target`` once per case (one pipeline run each), in file order.

    A case whose run raises a ``JaxInspectError`` (spec, usage or the user's code) gets that
    error instead of a report, and the next case runs.

    Raises:
        TargetError: The target cannot be loaded (no case can run).
    """
    loaded = load_target(target)
    outcomes: list[tuple[str, Spec, InspectionReport | CaseFailure]] = []
    for name, spec in cases:
        try:
            outcomes.append((name, spec, run_inspection(loaded, spec, options)[0]))
        except JaxInspectError as exc:
            outcomes.append((name, spec, case_failure(exc)))
    described = {
        name: _arg_labels(result)
        for name, _, result in outcomes
        if isinstance(result, InspectionReport)
    }
    varying = _varying_paths(list(described.values()))
    rows = tuple(
        CaseReport(
            name,
            spec.source,
            result,
            tuple(label for path, label in described[name].items() if path in varying),
        )
        if isinstance(result, InspectionReport)
        else CaseReport(name, spec.source, None, (), result)
        for name, spec, result in outcomes
    )
    composition = next((r.report.composition for r in rows if r.report is not None), None)
    return CaseComparison(target, composition, rows)


def _arg_labels(report: InspectionReport) -> dict[str, str]:
    labels = {}
    for arg in report.args:
        if arg.kind == "static":
            labels[arg.path] = f"{arg.path}={arg.value}"
        else:
            dims = ",".join(str(d) for d in arg.shape or ())
            weak = " weak" if arg.weak_type else ""
            dtype = _SHORT.get(str(arg.dtype), str(arg.dtype))
            labels[arg.path] = f"{arg.path} {dtype}[{dims}]{weak}"
    return labels


def _varying_paths(described: list[dict[str, str]]) -> set[str]:
    paths = {path for labels in described for path in labels}
    return {p for p in paths if len({labels.get(p) for labels in described}) > 1}


#: Version of the multi-case JSON document (``schemas/cases.schema.json``).
CASES_SCHEMA_VERSION = 1


def comparison_to_dict(comparison: CaseComparison) -> dict[str, Any]:
    """The comparison as JSON: one full ``stages`` document (or an error) per case, in order."""
    return {
        "schema_version": CASES_SCHEMA_VERSION,
        "target": comparison.target,
        "composition": comparison.composition,
        "cases": [
            {
                "name": case.name,
                "source": case.source,
                "distinct_args": list(case.distinct_args),
                "report": None if case.report is None else report_to_dict(case.report),
                "error": None if case.error is None else failure_to_dict(case.error),
            }
            for case in comparison.cases
        ],
    }
