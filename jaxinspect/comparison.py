"""Run every case of a multi-case spec through ``stages`` and line their reports up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaxinspect.inspection import InspectOptions, run_inspection
from jaxinspect.leaves import SHORT_DTYPES
from jaxinspect.model import InspectionReport, report_to_dict
from jaxinspect.spec import Spec
from jaxinspect.target import load_target

_SHORT = {long: short for short, long in SHORT_DTYPES.items()}


@dataclass(frozen=True, slots=True)
class CaseReport:
    """One case's full report, and the arguments that set it apart from the other cases."""

    name: str
    source: str
    report: InspectionReport
    #: ``path dtype[dims]`` or ``path=value`` of every argument that differs between cases.
    distinct_args: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CaseComparison:
    """Every case of one target, each traced, lowered and compiled once."""

    target: str
    composition: str | None
    cases: tuple[CaseReport, ...]


def compare_cases(
    target: str, cases: tuple[tuple[str, Spec], ...], options: InspectOptions
) -> CaseComparison:
    """Inspect ``target`` once per case (one pipeline run each), in file order.

    Raises:
        SpecError, UsageError, StageError: as ``run_inspection``, for the first failing case.
    """
    loaded = load_target(target)
    reports = [(name, spec, run_inspection(loaded, spec, options)[0]) for name, spec in cases]
    described = [_arg_labels(report) for _, _, report in reports]
    varying = _varying_paths(described)
    rows = tuple(
        CaseReport(
            name,
            spec.source,
            report,
            tuple(label for path, label in labels.items() if path in varying),
        )
        for (name, spec, report), labels in zip(reports, described, strict=True)
    )
    composition = reports[0][2].composition if reports else None
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
    """The comparison as JSON: one full ``stages`` document per case, in file order."""
    return {
        "schema_version": CASES_SCHEMA_VERSION,
        "target": comparison.target,
        "composition": comparison.composition,
        "cases": [
            {
                "name": case.name,
                "source": case.source,
                "distinct_args": list(case.distinct_args),
                "report": report_to_dict(case.report),
            }
            for case in comparison.cases
        ],
    }
