"""Entry points: a ``Compiled`` -> its per-op ``ProgramCost`` and loop-aware totals."""

from __future__ import annotations

from typing import Any

from jaxinspect import jaxapi
from jaxinspect.base.inspection import LoopAwareCost
from jaxinspect.xla.breakdown import ProgramCost, analyse_module
from jaxinspect.xla.ownership import UserCode, library_prefixes


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
