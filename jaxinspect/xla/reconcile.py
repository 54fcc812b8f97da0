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

The figures are measured in ``pipeline/opcost.py`` (``reconcile_compiled``), which has the
compiled module; this module is the record of them, held by ``ProgramCost.reconciliation``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.jsonfields import Count, js
from jaxinspect.xla.xlacost import XlaCost


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

    backend: XlaCost = field(metadata=js("cost_analysis"))
    generic_module: XlaCost | None
    counted_once: XlaCost
    not_counted: Count
    not_counted_io_bytes: Count

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("backend_model", "one_by_one")

    @property
    def backend_model(self) -> CostDelta | None:
        """``cost_analysis()`` minus the generic whole-module figure."""
        if self.generic_module is None:
            return None
        return _minus(self.backend, self.generic_module)

    @property
    def one_by_one(self) -> CostDelta | None:
        """The generic whole-module figure minus the per-op sum."""
        if self.generic_module is None:
            return None
        return _minus(self.generic_module, self.counted_once)

    @property
    def difference(self) -> CostDelta:
        """``cost_analysis()`` minus the per-op sum: the two parts above together."""
        return _minus(self.backend, self.counted_once)


@dataclass(frozen=True, slots=True)
class CostDelta:
    """One cost figure minus another: of either sign, unlike a cost."""

    flops: float
    transcendentals: float
    bytes_accessed: float


def _minus(a: XlaCost, b: XlaCost) -> CostDelta:
    return CostDelta(
        a.flops - b.flops,
        a.transcendentals - b.transcendentals,
        a.bytes_accessed - b.bytes_accessed,
    )
