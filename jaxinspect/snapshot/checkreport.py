"""The ``check`` report: every manifest target against its stored snapshot, with its status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.jsonfields import Count, js
from jaxinspect.snapshot.diffdoc import DiffDocument
from jaxinspect.snapshot.diffreport import SnapshotDiff
from jaxinspect.snapshot.thresholds import Verdict


@dataclass(frozen=True, slots=True)
class StatusCounts:
    """How many targets have each status."""

    error: Count
    changed: Count
    missing: Count
    stale: Count
    new: Count
    unchanged: Count


#: Every status a target can have, in the order reports list them.
STATUSES = tuple(StatusCounts.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class TargetResult:
    """One target's outcome.

    ``status``: ``unchanged``, ``changed``, ``missing`` (no stored snapshot), ``new`` (none was
    stored and ``--update`` wrote it), ``stale`` (stored, but no target produces it) or
    ``error`` (the target's code failed: ``error`` says how; its snapshot is left alone).
    """

    name: str
    target: str
    status: str = field(metadata=js(schema={"enum": list(STATUSES)}))
    #: The diff and its verdict: one ``snapshot-diff`` document in the JSON.
    diff: SnapshotDiff | None = field(default=None, metadata=js(omit=True))
    verdict: Verdict | None = field(default=None, metadata=js(omit=True))
    written: bool = False
    removed: bool = False
    #: For status ``error``: how the target's code failed (import, trace, lower or compile).
    error: str | None = None

    JSON_PROPERTIES: ClassVar[tuple[str | tuple[str, str], ...]] = (
        "failed",
        ("diff", "diff_document"),
    )

    @property
    def diff_document(self) -> DiffDocument | None:
        """A ``snapshot-diff`` document, or null for missing, new and stale targets."""
        return None if self.diff is None else DiffDocument.of(self.diff, self.verdict)

    @property
    def failed(self) -> bool:
        """Whether this result fails the check."""
        if self.status == "error":
            return True
        if self.written or self.removed:
            return False
        if self.status == "changed":
            return self.verdict is None or self.verdict.failed
        return self.status in ("missing", "stale")


@dataclass(frozen=True, slots=True)
class CheckReport:
    """All targets of one ``check`` run.

    ``notes`` tell what ``--update`` repaired (interrupted writes finished or discarded,
    corrupt snapshots rewritten) or what a plain check found unfinished.
    """

    manifest: str
    snapshot_dir: str
    update: bool
    results: tuple[TargetResult, ...] = field(metadata=js("targets"))
    #: Shown on the terminal; not part of the JSON document.
    notes: tuple[str, ...] = field(default=(), metadata=js(omit=True))

    JSON_PROPERTIES: ClassVar[tuple[str | tuple[str, str], ...]] = (
        "failed",
        ("counts", "status_counts"),
    )

    @property
    def failed(self) -> bool:
        """Whether the check fails (exit code 1)."""
        return any(r.failed for r in self.results)

    @property
    def errors(self) -> tuple[TargetResult, ...]:
        """Targets whose code failed (the check exits 3 after reporting every target)."""
        return tuple(r for r in self.results if r.status == "error")

    def counts(self) -> dict[str, int]:
        """How many targets have each status."""
        return {s: sum(1 for r in self.results if r.status == s) for s in STATUSES}

    @property
    def status_counts(self) -> StatusCounts:
        """How many targets have each status, as the JSON writes them."""
        return StatusCounts(**self.counts())

    def counts_line(self) -> str:
        """``2 unchanged, 1 changed``; what an empty run (a shard with no target) checked."""
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items() if n)
        return counts or "no target to check (an empty manifest, or a --shard with none)"
