"""Immutable objects: the collectives the SPMD partitioner put in a compiled program."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.jsonfields import Count, Positive, js
from jaxinspect.xla.sourcemap import SourceLocation

#: Collective opcodes, without their ``-start``/``-done`` suffix.
COLLECTIVE_KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "ragged-all-to-all",
)


@dataclass(frozen=True, slots=True)
class Collective:
    """Collective instructions of one kind over the same device groups.

    Attributes:
        op: ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
            ``collective-permute``, ``collective-broadcast`` (an async pair is named once).
        count: Executions per program run: each instruction times its enclosing loops' trip
            counts.
        bytes: Bytes each device moves over the run: per execution, the larger of the
            collective's operands and its result (an all-gather's gathered result, a
            reduce-scatter's whole operand, the buffer of an all-reduce), times ``count``.
        groups: The device groups as XLA prints them (``{{0,1},{2,3}}``; ``[2,4]<=[8]``;
            ``mesh[...] {...}``), or the source-target pairs of a permute; the first
            instruction's spelling where several spell the same groups.
        group_size: Devices per group; ``None`` where it cannot be read.
        axes: The mesh axes the groups span (``("data",)``), when the run has a mesh and the
            groups map onto it; ``None`` otherwise.
        is_async: Whether XLA split it into a ``-start``/``-done`` pair (it can overlap
            compute).
        instructions: The instructions counted, by name.
        trip_count_unknown: A loop around one of them has no proved trip count: ``count``
            counts that body once per run of its loop, a lower bound.
        op_name: JAX's ``op_name`` of the first instruction (the jaxpr path that made it).
        source: The Python line that made the first instruction with a located frame in its
            metadata; ``None`` without one (XLA's own, or a module printed without metadata).
    """

    op: str = field(metadata=js(schema={"enum": list(COLLECTIVE_KINDS)}))
    count: Count
    bytes: Count
    groups: str
    group_size: Positive | None
    axes: tuple[str, ...] | None
    is_async: bool = field(metadata=js("async"))
    instructions: tuple[str, ...]
    trip_count_unknown: bool = False
    op_name: str | None = None
    source: SourceLocation | None = None


@dataclass(frozen=True, slots=True)
class CollectiveSummary:
    """Every collective of the program and the communication volume per device."""

    items: tuple[Collective, ...]

    @property
    def total_bytes(self) -> int:
        """Bytes each device moves in collectives per program run."""
        return sum(item.bytes for item in self.items)

    @property
    def total_count(self) -> int:
        """Collective executions per program run."""
        return sum(item.count for item in self.items)

    @property
    def lower_bound(self) -> bool:
        """A loop around some collective has no proved trip count: the totals are minimums."""
        return any(item.trip_count_unknown for item in self.items)

    def by_op(self) -> tuple[tuple[str, int, int], ...]:
        """``(op, count, bytes)`` per kind of collective, summed over device groups, by op."""
        totals: dict[str, tuple[int, int]] = {}
        for item in self.items:
            count, size = totals.get(item.op, (0, 0))
            totals[item.op] = (count + item.count, size + item.bytes)
        return tuple((op, count, size) for op, (count, size) in sorted(totals.items()))
