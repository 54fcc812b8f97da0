"""Loose stage text files for ``diff``: op histograms read from the text (no jax import).

Snapshot folders carry histograms computed from JAX's objects; two plain files only have
text, so this parser counts the same things: HLO opcodes outside fused computations, MLIR
operation names, jaxpr primitives (nested jaxprs included).
"""

from __future__ import annotations

import re
from collections import Counter

from jaxinspect.snapshot.model import (
    COST_KEYS,
    MEMORY_KEYS,
    OpCounts,
    Snapshot,
    SnapshotSummary,
    collectives_of,
)

# The first " = " of an instruction line is its assignment (metadata and configs have none).
_HLO_OPCODE = re.compile(r" = (?:\([^\n]*?\)|[^ \n]+) ([a-z][\w\-]*)\(")
_HLO_FUSED_CALL = re.compile(r" fusion\([^\n]*?calls=%([\w.\-]+)")
_MLIR_OP = re.compile(r"^\s*(?:%[^=]*=\s*)?\"?([a-z_][\w]*(?:\.[\w.]+)?)\"?[\s(<{:]")
# The func dialect prints its ops without the prefix inside a function body.
_MLIR_SHORT = {"return": "func.return", "call": "func.call"}
# ``stablehlo.reduce(...) applies stablehlo.add`` is a compact body: the op and a return.
_MLIR_APPLIES = re.compile(r"\bapplies\s+([a-z_]+\.[\w.]+)")
_JAXPR_EQN = re.compile(r"^\s*(?:[\w]+:\S+\s+)*(?:_\S*\s+)*=\s+([a-z_][\w]*)")


def guess_stage(text: str) -> str:
    """``hlo``, ``stablehlo`` or ``jaxpr``, from what the text starts with."""
    head = text.lstrip()[:200]
    if head.startswith("HloModule"):
        return "hlo"
    if head.startswith(("module", "#loc", "func.func")):
        return "stablehlo"
    return "jaxpr"


def text_op_counts(stage: str, text: str) -> OpCounts:
    """Op histogram of one stage's text."""
    if stage == "hlo":
        counts = _hlo_counts(text)
    elif stage == "stablehlo":
        counts = _mlir_counts(text)
    else:
        counts = Counter(m.group(1) for line in text.splitlines() if (m := _JAXPR_EQN.match(line)))
    return _sorted(counts)


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
    return _count_kept(*_hlo_computations(text))


def hlo_counts_pair(old: str, new: str) -> tuple[OpCounts, OpCounts]:
    """Histograms of two HLO texts; the second from the first plus the computations that differ.

    Sides of a diff share most computations, so counting only the changed ones on the new
    side halves the work. When the set of fused computations differs, both are counted whole.
    """
    old_chunks, old_fused = _hlo_computations(old)
    new_chunks, new_fused = _hlo_computations(new)
    old_counts = _count_kept(old_chunks, old_fused)
    if old_fused != new_fused:
        return _sorted(old_counts), _sorted(_count_kept(new_chunks, new_fused))
    old_set, new_set = set(old_chunks), set(new_chunks)
    new_counts = old_counts.copy()
    new_counts.subtract(_count_kept([c for c in old_chunks if c not in new_set], old_fused))
    new_counts.update(_count_kept([c for c in new_chunks if c not in old_set], new_fused))
    return _sorted(old_counts), _sorted(+new_counts)


def _hlo_computations(text: str) -> tuple[list[str], frozenset[str]]:
    # The HloModule line rides in the first chunk: it opens no body and holds no " = op(".
    return text.split("\n}\n"), frozenset(_HLO_FUSED_CALL.findall(text))


def _count_kept(chunks: list[str], fused: frozenset[str]) -> Counter[str]:
    # One C-level findall over the non-fused computations' text: per-line or per-computation
    # regex calls cost several times more on a 200k-line module.
    kept = [chunk for chunk in chunks if _computation_name(chunk) not in fused]
    return Counter(_HLO_OPCODE.findall("\n}\n".join(kept)))


def _sorted(counts: Counter[str]) -> OpCounts:
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _computation_name(chunk: str) -> str | None:
    # The header is the line that opens the body; source tables may come before it.
    brace = chunk.find(" {\n")
    if brace < 0:
        return None
    header = chunk[chunk.rfind("\n", 0, brace) + 1 : brace].removeprefix("ENTRY ")
    return header[1 : header.find(" ")] if header.startswith("%") else None


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


def loose_pair(old: str, new: str) -> tuple[Snapshot, Snapshot]:
    """Snapshots of two loose texts, both read as the stage guessed from ``old``."""
    stage = guess_stage(old)
    if stage != "hlo":
        return loose_snapshot(old, stage), loose_snapshot(new, stage)
    old_counts, new_counts = hlo_counts_pair(old, new)
    return loose_snapshot(old, stage, old_counts), loose_snapshot(new, stage, new_counts)
