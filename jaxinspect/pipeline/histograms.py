"""Operation histograms of each IR, read from JAX's objects rather than from printed text."""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def jaxpr_op_counts(closed_jaxpr: Any) -> tuple[tuple[str, int], ...]:
    """Primitive counts of a jaxpr, including the jaxprs nested in its equations."""
    counts: Counter[str] = Counter()
    _count_jaxpr(closed_jaxpr.jaxpr, counts)
    return _sorted(counts)


def _count_jaxpr(jaxpr: Any, counts: Counter[str]) -> None:
    for eqn in jaxpr.eqns:
        counts[eqn.primitive.name] += 1
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                inner = getattr(sub, "jaxpr", None)  # ClosedJaxpr -> Jaxpr
                if inner is not None and hasattr(inner, "eqns"):
                    _count_jaxpr(inner, counts)
                elif hasattr(sub, "eqns"):
                    _count_jaxpr(sub, counts)


def stablehlo_op_counts(module: Any) -> tuple[tuple[str, int], ...]:
    """Operation counts of an MLIR module (``lowered.compiler_ir()``), excluding the module op."""
    counts: Counter[str] = Counter()
    _count_mlir(module.operation, counts)
    counts.pop("builtin.module", None)
    return _sorted(counts)


def _count_mlir(operation: Any, counts: Counter[str]) -> None:
    counts[operation.name] += 1
    for region in operation.regions:
        for block in region.blocks:
            for op in block.operations:
                _count_mlir(op.operation, counts)


def hlo_opcode(instruction: Any) -> str:
    """HLO spelling of an opcode: ``kGetTupleElement`` -> ``get-tuple-element``."""
    return _hlo_spelling(instruction.opcode.name)


@functools.cache  # a few dozen opcodes, spelt for each of a large module's instructions
def _hlo_spelling(name: str) -> str:
    return _CAMEL.sub("-", name.removeprefix("k")).lower()


def hlo_op_counts(hlo_module: Any) -> tuple[tuple[str, int], ...]:
    """Opcode counts over the module's non-fusion computations.

    Entry, loop bodies and conditions, and reducers count; each fusion counts once as
    ``fusion`` rather than by the ops fused inside it.
    """
    counts: Counter[str] = Counter()
    for computation in hlo_module.make_nonfusion_computations():
        for instruction in computation.instructions():
            counts[hlo_opcode(instruction)] += 1
    return _sorted(counts)


def _sorted(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
