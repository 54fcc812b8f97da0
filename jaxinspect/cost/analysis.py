"""Entry points: a ``Compiled`` -> its per-op ``ProgramCost`` and loop-aware totals."""

from __future__ import annotations

from typing import Any

from jaxinspect.cost.breakdown import ProgramCost, analyse_module
from jaxinspect.cost.ownership import UserCode, library_prefixes
from jaxinspect.reports.stages import LoopAwareCost


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
    from jax._src.lib import xla_client

    executable = compiled.runtime_executable()
    options = xla_client.hlo.HloPrintOptions()
    # Elided constants ("{...}") would not parse back; metadata carries the source lines.
    options.print_large_constants = True
    options.print_metadata = True
    # Control dependencies order copies inside loop bodies (every jax.random threefry loop);
    # they cost nothing, and an instruction wrapped alone could not name its predecessors.
    options.print_control_dependencies = False
    text = executable.hlo_modules()[0].to_string(options)
    client = executable.client
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
