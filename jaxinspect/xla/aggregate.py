"""Group per-op costs by Python source line, function or ``named_scope`` path."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.jsonfields import Count, NonNegative, Positive, js
from jaxinspect.xla.breakdown import FLAG_KINDS, LOWER_BOUND_KINDS, CostFlag, OpCost
from jaxinspect.xla.sourcemap import SourceLocation, shown_path

#: Key of ops whose source metadata has no frame outside JAX and jaxinspect.
NO_SOURCE = "(no user source)"
#: Key of ops without any source metadata: XLA made them (copies, backward convolutions...).
XLA_CREATED = "(created by XLA)"
#: Keys that are not a place in the user's code.
UNPLACED = frozenset({NO_SOURCE, XLA_CREATED})


@dataclass(frozen=True, slots=True)
class CostGroup:
    """Loop-aware totals of the instructions sharing one key (a line, a function, a scope)."""

    #: ``file:line``, ``function (file)`` (the file relative to the current folder when under
    #: it), or the op_name scope path; ``(created by XLA)`` groups instructions without source
    #: metadata, ``(no user source)`` the rest. A fusion's FLOPs are split among its fused
    #: instructions' own keys (in XLA's proportions); its bytes go to its root's key.
    key: str
    #: The source file as XLA recorded it (absolute); ``key`` has it relative.
    file: str | None
    line: Count | None
    #: The function of the group's first source line.
    function: str | None
    flops: NonNegative
    transcendentals: NonNegative
    bytes_accessed: NonNegative
    ops: Count  # Instructions contributing; fused instructions count one by one.
    opcodes: tuple[tuple[str, Positive], ...] = field(metadata=js(mapping=True))
    #: ``cost --measure``: measured seconds per program run of the ops whose own line (a
    #: fusion's root's, as for bytes) is in the group; null without ``--measure``.
    measured_s: float | None = None


def _line_key(source: SourceLocation | None, op_name: str | None, by_xla: bool) -> str:
    return _unplaced(by_xla) if source is None else f"{shown_path(source.file)}:{source.line}"


def _function_key(source: SourceLocation | None, op_name: str | None, by_xla: bool) -> str:
    return _unplaced(by_xla) if source is None else f"{source.function} ({shown_path(source.file)})"


def _scope_key(source: SourceLocation | None, op_name: str | None, by_xla: bool) -> str:
    """The op_name path without its last component: ``jit(f)/encoder/attn``."""
    if not op_name or "/" not in op_name:
        return _unplaced(by_xla)
    return op_name.rsplit("/", 1)[0]


def _unplaced(by_xla: bool) -> str:
    return XLA_CREATED if by_xla else NO_SOURCE


KeyFunction = Callable[[SourceLocation | None, str | None, bool], str]
GROUPINGS: dict[str, KeyFunction] = {
    "line": _line_key,
    "function": _function_key,
    "scope": _scope_key,
}


@dataclass(slots=True)
class _Bucket:
    source: SourceLocation | None = None
    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0
    measured_s: float = 0.0
    opcodes: Counter[str] = field(default_factory=Counter)


def _contributions(
    op: OpCost,
) -> Iterator[tuple[SourceLocation | None, str | None, bool, str, float, float]]:
    """(source, op_name, created_by_xla, opcode, flops, transcendentals) of each part of ``op``."""
    total = op.total
    if total is None:
        return
    if not op.shares:
        yield (
            op.source,
            op.op_name,
            op.created_by_xla,
            op.opcode,
            total.flops,
            total.transcendentals,
        )
        return
    for share in op.shares:
        yield (
            share.source,
            share.op_name,
            share.created_by_xla,
            share.opcode,
            total.flops * share.flops_fraction,
            total.transcendentals * share.transcendentals_fraction,
        )


def group_ops(
    ops: Iterable[OpCost], by: str, seconds: Mapping[str, float] | None = None
) -> tuple[CostGroup, ...]:
    """Totals per key of ``GROUPINGS[by]``, costliest (FLOPs, then bytes) first.

    A fusion's FLOPs go to its fused instructions' own lines; its bytes, and its measured
    time (``seconds`` by instruction name, with ``--measure``), to its root's line.
    """
    key_of = GROUPINGS[by]
    buckets: dict[str, _Bucket] = {}
    # Every layer of a model repeats the same (source, op_name) pairs: each pair's key (a
    # path made relative to the current folder) is computed once.
    known: dict[tuple[SourceLocation | None, str | None, bool], _Bucket] = {}

    def bucket(source: SourceLocation | None, op_name: str | None, by_xla: bool) -> _Bucket:
        found = known.get((source, op_name, by_xla))
        if found is None:
            key = key_of(source, op_name, by_xla)
            found = buckets.get(key)
            if found is None:
                found = buckets[key] = _Bucket()
            known[source, op_name, by_xla] = found
        found.source = found.source or source
        return found

    for op in ops:
        own = bucket(op.source, op.op_name, op.created_by_xla)
        own.bytes_accessed += 0.0 if op.total is None else op.total.bytes_accessed
        own.measured_s += 0.0 if seconds is None else seconds.get(op.name, 0.0)
        if not op.shares:
            own.opcodes[op.opcode] += 1
        for source, op_name, by_xla, opcode, flops, transcendentals in _contributions(op):
            part = bucket(source, op_name, by_xla)
            part.flops += flops
            part.transcendentals += transcendentals
            if op.shares:
                part.opcodes[opcode] += 1
    groups = [_group(key, b, by, seconds is not None) for key, b in buckets.items()]
    return tuple(sorted(groups, key=lambda g: (-g.flops, -g.bytes_accessed, g.key)))


def _group(key: str, bucket: _Bucket, by: str, measured: bool) -> CostGroup:
    first = None if key in UNPLACED else bucket.source
    return CostGroup(
        key=key,
        file=None if first is None else first.file,
        line=None if first is None or by != "line" else first.line,
        function=None if first is None or by == "scope" else first.function,
        flops=bucket.flops,
        transcendentals=bucket.transcendentals,
        bytes_accessed=bucket.bytes_accessed,
        ops=sum(bucket.opcodes.values()),
        opcodes=tuple(sorted(bucket.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))),
        measured_s=bucket.measured_s if measured else None,
    )


@dataclass(frozen=True, slots=True)
class FlagGroup:
    """Flagged instructions sharing a kind and a reason (a LAPACK target, XLA's refusal...)."""

    kind: str = field(metadata=js(schema={"enum": list(FLAG_KINDS)}))
    reason: str
    #: In the order the walk met them.
    instructions: tuple[str, ...] = field(metadata=js(schema={"minItems": 1}))
    lower_bound: bool  # This kind leaves work out of the totals.

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("count",)

    @property
    def count(self) -> Positive:
        """How many instructions the group holds."""
        return len(self.instructions)


def group_flags(flags: Iterable[CostFlag]) -> tuple[FlagGroup, ...]:
    """One group per (kind, reason), largest first: 300 LAPACK calls are one row, not 300."""
    members: dict[tuple[str, str], list[str]] = {}
    for flag in flags:
        members.setdefault((flag.kind, flag.reason), []).append(flag.instruction)
    groups = [
        FlagGroup(kind, reason, tuple(names), kind in LOWER_BOUND_KINDS)
        for (kind, reason), names in members.items()
    ]
    return tuple(sorted(groups, key=lambda g: (-g.count, g.kind, g.reason)))


def fusion_kinds(ops: Iterable[OpCost]) -> tuple[tuple[str, int], ...]:
    """Number of fusions of each kind (``kLoop``, ``kCustom``...)."""
    counts = Counter(op.fusion_kind for op in ops if op.fusion_kind is not None)
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
