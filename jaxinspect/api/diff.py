"""``jaxinspect.diff(a, b)``: what changed between two inspections, as ``jaxinspect diff``
compares two snapshots (the same comparison: ``snapshot.compare.diff_snapshots``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jaxinspect.api.inspection import Inspection, plain_text

if TYPE_CHECKING:
    from rich.console import RenderableType

    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict


@dataclass(frozen=True, slots=True)
class InspectionDiff:
    """The differences between two inspections; true when anything compiled changed.

    Attributes:
        diff: The snapshot diff: op histograms, metrics (cost, memory), normalized stage
            texts (renumbered names are no change), and the toolchain.
        verdict: The ``--fail-on`` rules' verdict (by default: any difference fails).
    """

    diff: SnapshotDiff
    verdict: Verdict

    @property
    def changed(self) -> bool:
        """Whether the compiled program differs (a toolchain change alone does not count)."""
        return not self.diff.identical

    def __bool__(self) -> bool:
        return self.changed

    def to_json(self) -> str:
        """The ``jaxinspect diff --format json`` document (``snapshot-diff.schema.json``)."""
        from jaxinspect.snapshot.jsondoc import render_diff_json

        return render_diff_json(self.diff, self.verdict)

    def __rich__(self) -> RenderableType:
        """The summary ``jaxinspect diff`` prints, then each stage's ``diff -u`` lines."""
        from rich.console import Group
        from rich.text import Text

        from jaxinspect.snapshot.console import render_diff_summary
        from jaxinspect.snapshot.text import text_diff_lines

        lines = "".join(line for change in self.diff.texts for line in text_diff_lines(change))
        parts: list[Any] = [render_diff_summary(self.diff, self.verdict)]
        if lines:
            parts.append(Text(lines.rstrip("\n")))
        return Group(*parts)

    def _repr_html_(self) -> str:
        """A notebook's display: verdict, op and metric tables, each stage's diff folded."""
        from jaxinspect.snapshot.html import render_diff_html

        return render_diff_html(self.diff, self.verdict)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain text: the ``__rich__`` summary without colour."""
        printer.text(repr(self) if cycle else plain_text(self))

    def __repr__(self) -> str:
        d = self.diff
        what = "changed" if self.changed else "unchanged"
        return (
            f"<InspectionDiff {d.a_label} -> {d.b_label}: {what}, {len(d.op_changes)} op "
            f"changes, {len(d.changed_metrics)} metrics, {len(d.texts)} texts>"
        )


def diff(
    a: Inspection,
    b: Inspection,
    *,
    labels: tuple[str, str] = ("a", "b"),
    fail_on: str | None = None,
    context: int = 3,
) -> InspectionDiff:
    """Compare two inspections as ``jaxinspect diff`` compares their snapshots.

    Args:
        a: The old inspection.
        b: The new inspection.
        labels: The names of the two sides in the report.
        fail_on: ``--fail-on`` rules (``flops>+5%,new-op:all-gather``...); by default any
            difference fails the verdict.
        context: Lines of context around each change of a stage text.

    Raises:
        UsageError: A ``fail_on`` rule does not parse.
    """
    from jaxinspect.snapshot.compare import diff_snapshots
    from jaxinspect.snapshot.thresholds import evaluate, parse_rules

    rules = parse_rules(fail_on)
    result = diff_snapshots(a.snapshot, b.snapshot, labels[0], labels[1], context)
    return InspectionDiff(result, evaluate(rules, result))
