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

_HLO_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\(.*?\)|\S+)\s+([a-z][\w\-]*)\("
)
_HLO_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")
_HLO_FUSED_CALL = re.compile(r"\bfusion\(.*?calls=%?([\w.\-]+)")
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
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


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
    fused = set(_HLO_FUSED_CALL.findall(text))
    counts: Counter[str] = Counter()
    inside_fused = False
    for line in text.splitlines():
        header = _HLO_COMPUTATION.match(line)
        if header is not None:
            inside_fused = header.group(1) in fused
            continue
        if inside_fused:
            continue
        instruction = _HLO_INSTRUCTION.match(line)
        if instruction is not None:
            counts[instruction.group(1)] += 1
    return counts


def loose_snapshot(text: str, stage: str) -> Snapshot:
    """A header-less snapshot of one stage text, with op counts parsed from it."""
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
