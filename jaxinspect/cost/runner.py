"""The ``cost`` runner: one inspected run -> its per-op analysis, cost summary and op times."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from jaxinspect.base.inspection import InspectionReport
from jaxinspect.pipeline import analyses as collect
from jaxinspect.pipeline.opcost import analyse_compiled, reconcile_compiled
from jaxinspect.xla.breakdown import ProgramCost
from jaxinspect.xla.ownership import UserCode

if TYPE_CHECKING:
    from jaxinspect.cost.optimes import OpTimes
    from jaxinspect.pipeline.stages import StageArtifacts
    from jaxinspect.pipeline.timing.calls import ProgressSink


def cost_of_run(
    source: InspectionReport,
    artifacts: StageArtifacts,
    user: UserCode,
    measure_runs: int | None = None,
    *,
    measure: bool | None = None,
    progress: ProgressSink | None = None,
) -> tuple[InspectionReport, ProgramCost, OpTimes | None]:
    """The per-op analysis of a run inspected without its ``cost`` section, and JAX's cost
    summary with the loop-aware totals from that one analysis (it is not free: done once);
    with ``measure_runs`` (or ``measure``, the number then adapted to the program's speed),
    the executable's op times under the profiler too, ``progress`` receiving long series.
    """
    from jaxinspect.cost.optimes import measure_program

    source, program = analyse_run(source, artifacts, user)
    reasons = list(source.unavailable)
    op_times = None
    if measure_runs is not None or measure:
        op_times = measure_program(artifacts, measure_runs, reasons, progress)
    else:
        reasons.append(("cost.measured", "--measure not given"))
    return replace(source, unavailable=tuple(reasons)), program, op_times


def analyse_run(
    source: InspectionReport, artifacts: StageArtifacts, user: UserCode
) -> tuple[InspectionReport, ProgramCost]:
    """The per-op analysis of a run inspected without its ``cost`` section, and the run's
    report with JAX's cost summary (loop-aware totals from that analysis) filled in, as
    ``stages`` shows it."""
    program = analyse_compiled(artifacts.compiled, user=user)
    reasons = [r for r in source.unavailable if r[0] != "cost"]
    summary = collect.collect_cost(artifacts.compiled, reasons, program)
    program = reconcile_compiled(artifacts.compiled, summary, program)
    return replace(source, cost=summary, unavailable=tuple(reasons)), program
