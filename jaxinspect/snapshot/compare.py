"""Compare two snapshots: toolchain, op histograms, metrics, then the texts (no jax import)."""

from __future__ import annotations

from collections.abc import Mapping

from jaxinspect.snapshot.background import in_background, will_fork
from jaxinspect.snapshot.diffreport import MetricChange, OpChange, SnapshotDiff, TextChange
from jaxinspect.snapshot.model import STAGE_FILES, Snapshot
from jaxinspect.textdiff.linediff import LineDiff, diff_lines
from jaxinspect.textdiff.structural import EarlyNames, structural_diff

#: The op changes of the collectives' executions per run, beside the stages' histograms.
COLLECTIVES_STAGE = "collectives"

_HEADER_FIELDS = ("jax_version", "jaxlib_version", "backend", "device_kind", "x64")


def diff_snapshots(
    old: Snapshot,
    new: Snapshot,
    a_label: str,
    b_label: str,
    context: int = 3,
    line_diffs: Mapping[str, LineDiff] | None = None,
    *,
    structural: bool = True,
    early: Mapping[str, EarlyNames] | None = None,
) -> SnapshotDiff:
    """Compare ``old`` and ``new``; stage texts are diffed with ``context`` lines.

    ``line_diffs`` holds stage texts' line diffs already computed (see ``load_sides``). With
    ``structural``, names are matched by structure first (``jaxinspect.textdiff.structural``),
    so a renumbering is no change; otherwise the normalized texts are diffed line by line.
    ``early`` holds, by stage, what ``structural.early_names`` started for those line diffs.
    """
    return SnapshotDiff(
        a_label=a_label,
        b_label=b_label,
        toolchain=_toolchain(old, new),
        op_changes=_op_changes(old, new),
        metrics=_metrics(old, new),
        texts=_texts(
            old, new, (a_label, b_label), context, line_diffs or {}, structural, early or {}
        ),
    )


def _toolchain(old: Snapshot, new: Snapshot) -> tuple[tuple[str, str, str], ...]:
    out: list[tuple[str, str, str]] = []
    if old.header is None or new.header is None:
        return ()
    for name in _HEADER_FIELDS:
        before, after = getattr(old.header, name), getattr(new.header, name)
        if before != after:
            out.append((name, str(before), str(after)))
    return tuple(out)


def _op_changes(old: Snapshot, new: Snapshot) -> tuple[OpChange, ...]:
    out = []
    for stage, _ in STAGE_FILES:
        before, after = old.summary.stage_ops(stage), new.summary.stage_ops(stage)
        for op in sorted(before.keys() | after.keys()):
            if before.get(op, 0) != after.get(op, 0):
                out.append(OpChange(stage, op, before.get(op, 0), after.get(op, 0)))
    # Executions per run (loop trips applied), and async pairs under their op's name: a
    # collective XLA makes async (all-gather-start on TPU) still trips new-op:all-gather.
    before, after = dict(old.summary.collectives), dict(new.summary.collectives)
    for op in sorted(before.keys() | after.keys()):
        if before.get(op, 0) != after.get(op, 0):
            out.append(OpChange(COLLECTIVES_STAGE, op, before.get(op, 0), after.get(op, 0)))
    return tuple(out)


def _metrics(old: Snapshot, new: Snapshot) -> tuple[MetricChange, ...]:
    """Metrics both summaries record (``None`` where a backend did not report one).

    A metric one summary does not record at all (``collective_bytes`` of a snapshot written
    before it existed) is not compared: an upgrade alone must not make every snapshot differ.
    """
    before, after = old.summary.metrics(), new.summary.metrics()
    return tuple(MetricChange(k, before[k], after[k]) for k in before if k in after)


def _texts(
    old: Snapshot,
    new: Snapshot,
    labels: tuple[str, str],
    context: int,
    line_diffs: Mapping[str, LineDiff],
    structural: bool,
    early: Mapping[str, EarlyNames],
) -> tuple[TextChange, ...]:
    out = []
    for stage, filename in STAGE_FILES:
        a_text, b_text = old.text(stage), new.text(stage)
        if a_text == b_text or a_text is None and b_text is None:
            continue
        diff = line_diffs.get(stage)
        if diff is None or not diff.of(a_text or "", b_text or ""):
            diff = diff_lines(a_text or "", b_text or "")
        a_name, b_name = _text_name(old, labels[0], filename), _text_name(new, labels[1], filename)
        if not structural:
            out.append(TextChange(stage, a_name, b_name, tuple(diff.hunks(context))))
            continue
        # A large old text's whole-text names are read in a forked child meanwhile.
        aside = in_background if will_fork(diff.a) else None
        matched = structural_diff(stage, diff, aside, early.get(stage))
        if not matched.lines.changes:
            continue  # only names differ: no change in meaning
        change = TextChange(
            stage,
            a_name,
            b_name,
            tuple(matched.lines.hunks(context)),
            renamed=matched.renamed,
            added_names=matched.added,
            removed_names=matched.removed,
            changed_names=matched.changed,
        )
        out.append(change)
    return tuple(out)


def _text_name(snapshot: Snapshot, label: str, filename: str) -> str:
    """``snap/hlo.txt`` for a snapshot folder; the file itself for a loose text (no header)."""
    return label if snapshot.header is None else f"{label}/{filename}"
