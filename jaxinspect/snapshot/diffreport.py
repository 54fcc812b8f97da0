"""The ``diff`` report: what differs between two snapshots (toolchain, ops, metrics, texts)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.jsonfields import Count, js
from jaxinspect.snapshot.model import STAGES
from jaxinspect.textdiff.linediff import Hunk


@dataclass(frozen=True, slots=True)
class OpChange:
    """An op whose count changed in one stage (0 = absent on that side)."""

    #: A stage's op histogram, or ``collectives``: executions per program run of each kind of
    #: collective, loop trip counts applied.
    stage: str = field(metadata=js(schema={"enum": [*STAGES, "collectives"]}))
    op: str
    before: Count
    after: Count


@dataclass(frozen=True, slots=True)
class MetricChange:
    """A summary number on both sides; ``None`` where that side's backend did not report it."""

    #: The key of the change in the document's ``metrics`` object.
    name: str = field(metadata=js(omit=True))
    before: float | None
    after: float | None

    JSON_PROPERTIES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("delta", "delta"),
        ("percent", "finite_percent"),
    )

    @property
    def delta(self) -> float | None:
        """``after - before``, if both are known."""
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def percent(self) -> float | None:
        """Relative change in percent; ``inf`` from 0 to more, ``None`` if unknown."""
        delta = self.delta
        if delta is None or self.before is None:
            return None
        if self.before == 0:
            return 0.0 if delta == 0 else math.copysign(math.inf, delta)
        return 100.0 * delta / abs(self.before)

    @property
    def finite_percent(self) -> float | None:
        """``percent`` as JSON can hold it: ``None`` for a change from 0 (JSON has no inf)."""
        percent = self.percent
        return None if percent is None or math.isinf(percent) else percent


@dataclass(frozen=True, slots=True)
class TextChange:
    """The unified-diff hunks of one stage whose normalized text differs."""

    stage: str = field(metadata=js(schema={"enum": list(STAGES)}))
    a_name: str = field(metadata=js(omit=True))
    b_name: str = field(metadata=js(omit=True))
    hunks: tuple[Hunk, ...]
    #: With a structural diff: names of the old text rewritten to their match in the new one.
    renamed: Count = 0
    #: Values (instructions, variables) defined only in the new text, only in the old one, and
    #: in both but on a changed line.
    added_names: tuple[str, ...] = field(default=(), metadata=js(omit=True))
    removed_names: tuple[str, ...] = field(default=(), metadata=js(omit=True))
    changed_names: tuple[str, ...] = field(default=(), metadata=js(omit=True))

    JSON_PROPERTIES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("added", "added"),
        ("removed", "removed"),
        ("values", "values"),
    )

    @property
    def values(self) -> ChangedValues:
        """The three lists of names together, as the JSON groups them."""
        return ChangedValues(self.added_names, self.removed_names, self.changed_names)

    @property
    def added(self) -> Count:
        """Lines only in the new text."""
        return sum(1 for h in self.hunks for mark, _ in h.lines if mark == "+")

    @property
    def removed(self) -> Count:
        """Lines only in the old text."""
        return sum(1 for h in self.hunks for mark, _ in h.lines if mark == "-")


@dataclass(frozen=True, slots=True)
class ChangedValues:
    """Values defined only in the new text, only in the old one, and on a changed line."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SnapshotDiff:
    """Everything that differs between an old (``a``) and a new (``b``) snapshot."""

    a_label: str
    b_label: str
    toolchain: tuple[tuple[str, str, str], ...]
    op_changes: tuple[OpChange, ...]
    metrics: tuple[MetricChange, ...]
    texts: tuple[TextChange, ...]

    @property
    def changed_metrics(self) -> tuple[MetricChange, ...]:
        """Metrics whose value differs between the sides."""
        return tuple(m for m in self.metrics if m.before != m.after)

    @property
    def identical(self) -> bool:
        """No difference in compiled content (a toolchain change alone does not count)."""
        return not (self.op_changes or self.changed_metrics or self.texts)
