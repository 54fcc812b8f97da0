"""Entry points: a ``Compiled`` -> its per-op ``ProgramCost``, loop-aware totals, and how its
per-op sum reconciles with JAX's ``cost_analysis()``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jaxinspect import jaxapi
from jaxinspect.base.inspection import CostSummary, LoopAwareCost
from jaxinspect.xla.breakdown import LOWER_BOUND_KINDS, ProgramCost, analyse_module
from jaxinspect.xla.ownership import UserCode, library_prefixes
from jaxinspect.xla.reconcile import CostReconciliation
from jaxinspect.xla.xlacost import UncostedError, XlaCost, module_object_cost


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
    # Printed with constants and metadata, without control dependencies (see jaxapi).
    text = jaxapi.compiled_module_text(compiled, "the per-op cost analysis")
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
    # The executable's own module object: printing it and having XLA parse the text back
    # gives the same figures, at ten times the cost (a quarter second per 48 layers).
    module = jaxapi.optimized_hlo_module(compiled, "the per-op cost reconciliation")
    found = _reconcile(backend, program, jaxapi.executable_client(compiled), module)
    return replace(program, reconciliation=found)


def _reconcile(
    backend: XlaCost, program: ProgramCost, client: Any, module: Any
) -> CostReconciliation | None:
    """The parts of the difference (``xla/reconcile.py`` says what they are), or ``None``
    when the per-op sum equals ``backend``.

    ``module``: the ``HloModule`` the per-op analysis read printed; ``client``: the one it used.
    """
    once = program.counted_once
    if _close(backend, once):
        return None
    try:
        generic: XlaCost | None = module_object_cost(client, module)
    except UncostedError:  # XLA's sentinel for the whole module: the split is unknown
        generic = None
    flagged = {f.instruction for f in program.flags if f.kind in LOWER_BOUND_KINDS}
    uncounted = [op for op in program.ops if op.per_run is None and op.name in flagged]
    return CostReconciliation(
        backend=backend,
        generic_module=generic,
        counted_once=once,
        not_counted=len(uncounted),
        not_counted_io_bytes=sum(op.input_bytes + op.output_bytes for op in uncounted),
    )


def _close(a: XlaCost, b: XlaCost) -> bool:
    pairs = (
        (a.flops, b.flops),
        (a.transcendentals, b.transcendentals),
        (a.bytes_accessed, b.bytes_accessed),
    )
    return all(abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1.0) for x, y in pairs)


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
