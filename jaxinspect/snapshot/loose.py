"""Loose stage text files for ``diff``: op histograms read from the text (no jax import).

Snapshot folders carry histograms computed from JAX's objects; two plain files only have
text, so this parser counts the same things: HLO opcodes outside fused computations (see
``hlocount``), MLIR operation names, jaxpr primitives (nested jaxprs included).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from jaxinspect.snapshot.background import Pending, in_background
from jaxinspect.snapshot.loosefile import count_parts, guess_stage
from jaxinspect.snapshot.model import (
    COST_KEYS,
    MEMORY_KEYS,
    OpCounts,
    Snapshot,
    SnapshotSummary,
    collectives_of,
)
from jaxinspect.textdiff.linediff import LineDiff, diff_lines
from jaxinspect.textdiff.terminated import terminated
from jaxinspect.xla.hlocount import (
    RenamedBasis,
    apply_delta,
    count_hlo,
    counted,
    line_delta,
    renamed_count,
)
from jaxinspect.xla.hloscan import ModuleScan

_MLIR_OP = re.compile(r"^\s*(?:%[^=]*=\s*)?\"?([a-z_][\w]*(?:\.[\w.]+)?)\"?[\s(<{:]")
# The func dialect prints its ops without the prefix inside a function body.
_MLIR_SHORT = {"return": "func.return", "call": "func.call"}
# ``stablehlo.reduce(...) applies stablehlo.add`` is a compact body: the op and a return.
_MLIR_APPLIES = re.compile(r"\bapplies\s+([a-z_]+\.[\w.]+)")
# An equation starts a line, or follows ``let`` or ``;`` where JAX prints a short jaxpr (or a
# nested one) on one line: ``{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0 in``.
_JAXPR_EQN = re.compile(
    r"(?:^[ \t]*|\blet[ \t]+|;[ \t]+)(?:[\w]+:\S+[ \t]+)*(?:_\S*[ \t]+)*=[ \t]+([a-z_][\w]*)",
    re.MULTILINE,
)


def text_op_counts(stage: str, text: str) -> OpCounts:
    """Op histogram of one stage's text."""
    if stage == "hlo":
        counts = _hlo_counts(text)
    elif stage == "stablehlo":
        counts = _mlir_counts(text)
    else:
        counts = _jaxpr_counts(text)
    return _sorted(counts)


def _jaxpr_counts(text: str) -> Counter[str]:
    """Primitives of every equation, one per line or several on a line (short jaxprs)."""
    return Counter(match.group(1) for match in _JAXPR_EQN.finditer(text))


def _mlir_counts(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        match = _MLIR_OP.match(line)
        if match is None:
            continue
        name = _MLIR_SHORT.get(match.group(1), match.group(1))
        if "." not in name:
            continue  # "module", "}" and other non-ops
        counts[name] += 1
        for applied in _MLIR_APPLIES.findall(line):
            counts[applied] += 1
            counts["stablehlo.return"] += 1
    return counts


def _hlo_counts(text: str) -> Counter[str]:
    return count_hlo(text).ops


def hlo_counts_pair(old: str, new: str, diff: LineDiff | None = None) -> tuple[OpCounts, OpCounts]:
    """Histograms of two HLO texts: the new one from the old one and their line diff.

    Sides of a diff share nearly every line, so only the changed lines are counted on the new
    side; where a change may move computations or fused ones, it is counted whole. ``diff``,
    if given, is ``diff_lines(old, new)``, computed once for the unified diff too.
    """
    old_counts, new_counts, _ = _hlo_counts_and_diff(old, new, diff)
    return old_counts, new_counts


def _hlo_counts_and_diff(
    old: str,
    new: str,
    diff: LineDiff | None,
    meanwhile: Callable[[], object] | None = None,
    pending: Callable[[], ModuleScan] | None = None,
    diffed: Callable[[LineDiff], RenamedBasis | None] | None = None,
) -> tuple[OpCounts, OpCounts, LineDiff]:
    if diff is None or not diff.of(old, new):
        # The old side's full count is the longest step and needs neither the line diff nor
        # anything after it: on a large text it runs in a forked child (see ``background``)
        # while this process diffs, derives the new side's changes, and runs ``meanwhile``.
        # The child also sends back where the old text's computations lie, so the few bodies
        # that a change fuses or unfuses are counted without another scan of the text.
        if pending is None:
            pending = in_background(count_parts, terminated(old))
        diff = diff_lines(old, new)
        basis = diffed(diff) if diffed is not None else None
        # A renaming undone already (a renumbered text): the counts follow from its few
        # changed lines rather than from every renamed one.
        if basis is None:
            delta = line_delta(diff.a, diff.b, diff.changes)
        else:
            delta = line_delta(basis.text, diff.b, basis.changes)
        if meanwhile is not None:
            meanwhile()
        old_counts = counted(diff.a, pending())
        base = old_counts if basis is None else renamed_count(old_counts, basis.renaming)
    else:
        base = old_counts = count_hlo(diff.a)
        delta = line_delta(diff.a, diff.b, diff.changes)
    new_counts = _hlo_counts(diff.b) if delta is None else apply_delta(base, delta)
    return _sorted(old_counts.ops), _sorted(new_counts), diff


def _sorted(counts: Counter[str]) -> OpCounts:
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def loose_snapshot(text: str, stage: str, counts: OpCounts | None = None) -> Snapshot:
    """A header-less snapshot of one stage text, with op counts parsed from it (or given)."""
    if counts is None:
        counts = text_op_counts(stage, text)
    why = "a loose text file carries no cost or memory analysis"
    fusions = dict(counts).get("fusion", 0) if stage == "hlo" else None
    summary = SnapshotSummary(
        ops=((stage, counts),),
        fusion_count=fusions,
        collectives=collectives_of(dict(counts)) if stage == "hlo" else (),
        cost=tuple((k, None) for k in COST_KEYS),
        memory=tuple((k, None) for k in MEMORY_KEYS),
        unavailable=(("cost", why), ("memory", why)),
    )
    return Snapshot(header=None, summary=summary, texts=((stage, text),))


def loose_pair(
    old: str,
    new: str | Callable[[], str],
    meanwhile: Callable[[], object] | None = None,
    parts: Pending[ModuleScan] | None = None,
    diffed: Callable[[LineDiff], RenamedBasis | None] | None = None,
) -> tuple[Snapshot, Snapshot, dict[str, LineDiff]]:
    """Snapshots of two loose texts, both read as the stage guessed from ``old``.

    The line diff of an HLO pair is computed here (its counts come from it) and returned by
    stage, so comparing the snapshots need not compute it again. ``new`` may be a function
    that reads the new text: a large HLO ``old`` is then being counted while it reads.
    ``meanwhile``, if given, may be called while a background count runs: work for an
    otherwise idle wait. ``parts``, if given, is ``old``'s count already started
    (``loosefile.start_count``). ``diffed``, if given, is called with the HLO pair's line
    diff as soon as it is known (before the counts are derived from it); where it returns a
    renaming undone (``RenamedBasis``), the new side's counts are derived from that.
    """
    stage = guess_stage(old)
    if stage != "hlo":
        new_text = new() if callable(new) else new
        return loose_snapshot(old, stage), loose_snapshot(new_text, stage), {}
    pending = parts if parts is not None else in_background(count_parts, terminated(old))
    try:
        new_text = new() if callable(new) else new
    except BaseException:
        pending.close()  # leave no child behind
        raise
    old_counts, new_counts, diff = _hlo_counts_and_diff(
        old, new_text, None, meanwhile, pending, diffed
    )
    return (
        loose_snapshot(old, stage, old_counts),
        loose_snapshot(new_text, stage, new_counts),
        {stage: diff},
    )
