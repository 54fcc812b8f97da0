"""The ``diff`` JSON document as a type: what ``diff --format json`` writes, what a ``check``
document holds per changed target, and what ``snapshot-diff.schema.json`` is generated from."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.jsonfields import js
from jaxinspect.snapshot.diffreport import MetricChange, OpChange, SnapshotDiff, TextChange
from jaxinspect.snapshot.model import SnapshotHeader
from jaxinspect.snapshot.thresholds import Verdict

#: The version of ``snapshot-diff.schema.json``: bump it on any incompatible change of paths or
#: meanings (a test checks that the schema agrees).
DIFF_SCHEMA_VERSION = 1
_HEADER_FIELDS = list(SnapshotHeader.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class ToolchainChange:
    """A toolchain field that differs between the sides (reported, never a failure alone)."""

    name: str = field(metadata=js("field", schema={"enum": _HEADER_FIELDS}))
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class DiffDocument:
    """Everything that differs between an old (``a``) and a new (``b``) snapshot, and the
    verdict of the ``--fail-on`` rules.

    Attributes:
        a, b: The sides as given (folders or files).
        identical: No difference in compiled content (a toolchain change alone does not count).
        failed: Whether a rule tripped (without rules: whether anything differs).
        tripped: The rules that tripped, with their values.
        notes: Rules that could not be evaluated, and why.
        metrics: The summary numbers that differ, by name (flops, peak_bytes, fusions...).
    """

    a: str
    b: str
    identical: bool
    failed: bool
    tripped: tuple[str, ...]
    notes: tuple[str, ...]
    toolchain: tuple[ToolchainChange, ...]
    ops: tuple[OpChange, ...]
    metrics: tuple[tuple[str, MetricChange], ...] = field(metadata=js(mapping=True))
    texts: tuple[TextChange, ...]
    # Written in a check document's diffs too (a key, unlike the other documents' versions).
    schema_version: int = field(default=DIFF_SCHEMA_VERSION, metadata=js(schema={"const": 1}))

    @classmethod
    def of(cls, diff: SnapshotDiff, verdict: Verdict | None) -> DiffDocument:
        """The document of ``diff``; without ``verdict`` (no rules) any difference fails."""
        return cls(
            a=diff.a_label,
            b=diff.b_label,
            identical=diff.identical,
            failed=(not diff.identical) if verdict is None else verdict.failed,
            tripped=() if verdict is None else verdict.tripped,
            notes=() if verdict is None else verdict.notes,
            toolchain=tuple(ToolchainChange(*change) for change in diff.toolchain),
            ops=diff.op_changes,
            metrics=tuple((m.name, m) for m in diff.changed_metrics),
            texts=diff.texts,
        )
