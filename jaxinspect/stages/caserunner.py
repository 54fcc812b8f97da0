"""Run every case of a multi-case spec through ``stages`` and line their reports up.

A case that fails (its spec does not bind, the user's code raises) becomes a row with its
error; the other cases still run.
"""

from __future__ import annotations

from jaxinspect.base.failures import CaseFailure, case_failure
from jaxinspect.base.inspection import InspectionReport
from jaxinspect.errors import JaxInspectError
from jaxinspect.inputs.leaves import SHORT_DTYPES
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import load_target
from jaxinspect.stages.casereport import CaseComparison, CaseReport
from jaxinspect.stages.runner import InspectOptions, run_inspection

_SHORT = {long: short for short, long in SHORT_DTYPES.items()}


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
            # A sharding differs between cases as much as a shape: P('data') vs one device.
            placed = f" {arg.sharding}" if arg.sharding else ""
            labels[arg.path] = f"{arg.path} {dtype}[{dims}]{weak}{placed}"
    return labels


def _varying_paths(described: list[dict[str, str]]) -> set[str]:
    paths = {path for labels in described for path in labels}
    return {p for p in paths if len({labels.get(p) for labels in described}) > 1}
