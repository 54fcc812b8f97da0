"""Why the per-op totals differ from the backend's ``cost_analysis()``, cause by cause.

On CPU and GPU the per-op sum (every op once) equals JAX's figures, but for the -1 XLA adds in
for a custom call it has no model of (LAPACK on CPU). A TPU topology has no
client here: each instruction is costed by XLA's generic ``HloCostAnalysis`` through the CPU
client, while the TPU compiler's ``cost_analysis()`` applies its own model (lm_step on
v5e:4x4: the same FLOPs, 20 % more bytes than the generic model). The difference then
splits into two measured parts:

- **the backend's own model**: ``cost_analysis()`` minus the generic analysis of the whole
  module (the figure the per-op analysis would add up to if instructions were costed in place);
- **costed one by one**: the generic whole-module figure minus the per-op sum. It holds the
  ops the per-op analysis does not count (a ``ConcatBitcast`` custom call has no cost model:
  XLA adds its ``-1`` sentinel into a whole module) and instructions whose figure alone
  differs from theirs inside the module (an async ``slice-start`` without its ``slice-done``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaxinspect.cost.breakdown import LOWER_BOUND_KINDS, ProgramCost
from jaxinspect.cost.xlacost import UncostedError, XlaCost, module_cost


@dataclass(frozen=True, slots=True)
class CostReconciliation:
    """The per-op sum (every op once) against the backend's figures.

    Attributes:
        backend: JAX's ``cost_analysis()``: the backend compiler's own model.
        generic_module: XLA's generic ``HloCostAnalysis`` of the whole module, the model the
            per-op figures come from; ``None`` when XLA refused the whole module.
        counted_once: The per-op sum, every op once.
        not_counted: Instructions the per-op analysis does not count (custom calls...).
        not_counted_io_bytes: Their operands' and outputs' bytes, for scale.
    """

    backend: XlaCost
    generic_module: XlaCost | None
    counted_once: XlaCost
    not_counted: int
    not_counted_io_bytes: int

    @property
    def backend_model(self) -> XlaCost | None:
        """``cost_analysis()`` minus the generic whole-module figure."""
        if self.generic_module is None:
            return None
        return _minus(self.backend, self.generic_module)

    @property
    def one_by_one(self) -> XlaCost | None:
        """The generic whole-module figure minus the per-op sum."""
        if self.generic_module is None:
            return None
        return _minus(self.generic_module, self.counted_once)

    @property
    def difference(self) -> XlaCost:
        """``cost_analysis()`` minus the per-op sum: the two parts above together."""
        return _minus(self.backend, self.counted_once)


def _minus(a: XlaCost, b: XlaCost) -> XlaCost:
    return a.plus(b.scaled(-1.0))


def reconcile(
    backend: XlaCost, program: ProgramCost, client: Any, text: str
) -> CostReconciliation | None:
    """The parts of the difference, or ``None`` when the per-op sum equals ``backend``.

    ``text``: the module as the per-op analysis read it; ``client``: the one it used.
    """
    once = program.counted_once
    if _close(backend, once):
        return None
    try:
        generic: XlaCost | None = module_cost(client, text)
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
