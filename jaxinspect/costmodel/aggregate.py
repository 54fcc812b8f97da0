"""Group per-op costs by Python source line, function or ``named_scope`` path."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from jaxinspect.costmodel.breakdown import OpCost

#: Key of ops with no frame in the user's code (parameters, copies XLA inserted...).
NO_SOURCE = "(no user source)"


@dataclass(frozen=True, slots=True)
class CostGroup:
    """Loop-aware totals of the ops sharing one key (a line, a function, a scope)."""

    key: str
    file: str | None
    line: int | None
    function: str | None
    flops: float
    transcendentals: float
    bytes_accessed: float
    ops: int
    opcodes: tuple[tuple[str, int], ...]


def _line_key(op: OpCost) -> str:
    return NO_SOURCE if op.source is None else f"{op.source.file}:{op.source.line}"


def _function_key(op: OpCost) -> str:
    return NO_SOURCE if op.source is None else f"{op.source.function} ({op.source.file})"


def _scope_key(op: OpCost) -> str:
    """The op_name path without its last component: ``jit(f)/encoder/attn``."""
    if not op.op_name or "/" not in op.op_name:
        return NO_SOURCE
    return op.op_name.rsplit("/", 1)[0]


GROUPINGS: dict[str, Callable[[OpCost], str]] = {
    "line": _line_key,
    "function": _function_key,
    "scope": _scope_key,
}


def group_ops(ops: Iterable[OpCost], by: str) -> tuple[CostGroup, ...]:
    """Totals per key of ``GROUPINGS[by]``, costliest (FLOPs, then bytes) first."""
    key_of = GROUPINGS[by]
    buckets: dict[str, list[OpCost]] = {}
    for op in ops:
        buckets.setdefault(key_of(op), []).append(op)
    groups = [_group(key, members, by) for key, members in buckets.items()]
    return tuple(sorted(groups, key=lambda g: (-g.flops, -g.bytes_accessed, g.key)))


def _group(key: str, members: list[OpCost], by: str) -> CostGroup:
    totals = [op.total for op in members if op.total is not None]
    first = members[0].source if key != NO_SOURCE else None
    opcodes = Counter(op.opcode for op in members)
    return CostGroup(
        key=key,
        file=None if first is None else first.file,
        line=None if first is None or by != "line" else first.line,
        function=None if first is None or by == "scope" else first.function,
        flops=sum(t.flops for t in totals),
        transcendentals=sum(t.transcendentals for t in totals),
        bytes_accessed=sum(t.bytes_accessed for t in totals),
        ops=len(members),
        opcodes=tuple(sorted(opcodes.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def fusion_kinds(ops: Iterable[OpCost]) -> tuple[tuple[str, int], ...]:
    """Number of fusions of each kind (``kLoop``, ``kCustom``...)."""
    counts = Counter(op.fusion_kind for op in ops if op.fusion_kind is not None)
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
