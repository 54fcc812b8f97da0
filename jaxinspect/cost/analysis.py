"""Entry points: a ``Compiled`` -> its per-op ``ProgramCost`` and loop-aware totals."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from jaxinspect import jaxapi
from jaxinspect.cost.breakdown import ProgramCost, analyse_module
from jaxinspect.cost.ownership import UserCode, library_prefixes
from jaxinspect.reports.stages import CostSummary, InspectionReport, LoopAwareCost

if TYPE_CHECKING:
    from jaxinspect.cost.profiled import OpTimes
    from jaxinspect.pipeline.stages import StageArtifacts
    from jaxinspect.pipeline.timing.calls import ProgressSink


def analyse_compiled(
    compiled: Any, *, user: UserCode | None = None, split_fusions: bool = True
) -> ProgramCost:
    """Per-op costs of the compiled program's (first) optimized HLO module.

    ``user`` says whose frames are source lines (default: any frame outside JAX, jaxinspect
    and its harness); ``split_fusions=False`` skips sharing fusions' FLOPs among source lines
    (totals only).

    Raises:
        ValueError: The module text could not be parsed.
    """
    module = jaxapi.optimized_hlo_module(compiled, "the per-op cost analysis")
    # Elided constants ("{...}") would not parse back; metadata carries the source lines.
    # Control dependencies order copies inside loop bodies (every jax.random threefry loop);
    # they cost nothing, and an instruction wrapped alone could not name its predecessors.
    text = jaxapi.hlo_module_text(
        module, large_constants=True, metadata=True, control_dependencies=False
    )
    client = jaxapi.executable_client(compiled)
    user = UserCode((), library_prefixes()) if user is None else user
    return analyse_module(text, client, user, split_fusions=split_fusions)[0]


def reconcile_compiled(
    compiled: Any, summary: CostSummary | None, program: ProgramCost
) -> ProgramCost:
    """``program`` with the causes of its difference from JAX's figures, where it differs.

    Costs the whole module once more with XLA's generic analysis, only then (a TPU topology's
    module, or a custom call's sentinel added into JAX's figures).
    """
    from jaxinspect.cost.reconcile import reconcile
    from jaxinspect.cost.xlacost import XlaCost

    if summary is None or None in (
        summary.flops,
        summary.transcendentals,
        summary.bytes_accessed,
    ):
        return program
    backend = XlaCost(
        float(summary.flops or 0.0),
        float(summary.transcendentals or 0.0),
        float(summary.bytes_accessed or 0.0),
    )
    if backend == program.counted_once:
        return program
    module = jaxapi.optimized_hlo_module(compiled, "the per-op cost reconciliation")
    text = jaxapi.hlo_module_text(
        module, large_constants=True, metadata=False, control_dependencies=False
    )
    found = reconcile(backend, program, jaxapi.executable_client(compiled), text)
    return replace(program, reconciliation=found)


def loop_aware_summary(program: ProgramCost) -> LoopAwareCost:
    """The totals ``stages`` shows beside XLA's own figures."""
    total = program.loop_aware
    return LoopAwareCost(
        flops=total.flops,
        transcendentals=total.transcendentals,
        bytes_accessed=total.bytes_accessed,
        lower_bound=program.lower_bound,
        not_counted=tuple(f"{f.instruction} ({f.kind})" for f in program.flags),
    )


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
    from jaxinspect.cost.profiled import measure_program
    from jaxinspect.pipeline import analyses as collect

    program = analyse_compiled(artifacts.compiled, user=user)
    reasons = [r for r in source.unavailable if r[0] != "cost"]
    summary = collect.collect_cost(artifacts.compiled, reasons, program)
    program = reconcile_compiled(artifacts.compiled, summary, program)
    op_times = None
    if measure_runs is not None or measure:
        op_times = measure_program(artifacts, measure_runs, reasons, progress)
    else:
        reasons.append(("cost.measured", "--measure not given"))
    return replace(source, cost=summary, unavailable=tuple(reasons)), program, op_times
