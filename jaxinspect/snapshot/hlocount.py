"""HLO op histograms read from text: opcodes outside fused computations (no jax import).

A computation runs from its header line (``%name (...) -> ... {``, or ``ENTRY %name ...``) to
the next header; a fused computation is one a ``fusion(...)`` instruction ``calls=``. Every
pattern below stays within one line, so a line's contribution depends on that line and on the
header above it alone: that is what lets ``counts_after`` update a histogram from a line diff.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from jaxinspect.snapshot.linematch import Change

# The first " = " of an instruction line is its assignment (metadata and configs have none).
_OPCODE = re.compile(r" = (?:\([^\n]*?\)|[^ \n]+) ([a-z][\w\-]*)\(")
_HEADER = re.compile(r"\n(?:ENTRY )?%([\w.\-]+) [^\n]*\{(?=\n|\Z)")
_FUSED_CALL = re.compile(r" fusion\([^\n]*?calls=%([\w.\-]+)")


@dataclass(frozen=True, slots=True)
class HloCount:
    """A module's op counts, its fusion calls, and where its computation headers are."""

    ops: Counter[str]  # opcodes outside fused computations
    calls: Counter[str]  # computation name -> fusion instructions that call it
    text: str
    headers: list[tuple[int, int, str]]  # (start, end, name) of each header match

    def body_ops(self, name: str) -> Counter[str]:
        """Opcodes in the computation(s) called ``name``."""
        ends = [*(start for start, _, _ in self.headers[1:]), len(self.text)]  # body ends
        ops: list[str] = []
        for (_, end, header), stop in zip(self.headers, ends, strict=True):
            if header == name:
                ops += _OPCODE.findall(self.text, end, stop)
        return Counter(ops)


def count_hlo(text: str) -> HloCount:
    """Opcode counts outside fused computations, with what ``counts_after`` needs."""
    calls = fusion_calls(text)
    headers = [(m.start(), m.end(), m.group(1)) for m in _HEADER.finditer(text)]
    # findall on the text itself, body by body: slicing or splitting 14 MB into new strings
    # costs more than scanning it (fresh memory is slow to touch).
    ends = [*(start for start, _, _ in headers), len(text)]
    ops = _OPCODE.findall(text, 0, ends[0])
    for (_, end, name), stop in zip(headers, ends[1:], strict=True):
        if name not in calls:
            ops += _OPCODE.findall(text, end, stop)
    return HloCount(Counter(ops), calls, text, headers)


def fusion_calls(text: str) -> Counter[str]:
    """Computations that ``fusion(`` instructions call: the first ``calls=%name`` after each."""
    return Counter(_FUSED_CALL.findall(text))


def counts_after(old: HloCount, a: str, b: str, changes: tuple[Change, ...]) -> Counter[str] | None:
    """The counts of ``b`` from those of ``a`` and their line changes (``None``: count ``b``).

    Each computation's ops change by its removed and added lines, and by the unchanged lines
    that a changed header moves into or out of it; computations that become fused or unfused
    add or drop their whole body. Only a line moving to or from the top is left to a count.
    """
    calls = old.calls.copy()
    for change in changes:
        calls.subtract(fusion_calls("\n".join(change.removed)))
        calls.update(fusion_calls("\n".join(change.added)))
    fused = {name for name, n in calls.items() if n > 0}
    delta: defaultdict[str | None, Counter[str]] = defaultdict(Counter)
    above_a, above_b = _HeaderTracker(a), _HeaderTracker(b)
    for k, change in enumerate(changes):
        if change.a_lo == 0 and not (change.removed and change.added):
            return None  # a line moves to or from the top, where no header is read
        after_a = _attribute(change.removed, change.a_lo, above_a.name_at(change.a_pos), delta, -1)
        after_b = _attribute(change.added, change.b_lo, above_b.name_at(change.b_pos), delta, 1)
        if after_a != after_b:  # unchanged lines up to the next header change computation
            start = change.b_pos + sum(len(line) + 1 for line in change.added)
            stop = changes[k + 1].b_pos if k + 1 < len(changes) else len(b)
            header = _HEADER.search(b, start - 1, stop)
            moved = Counter(_OPCODE.findall(b, start, header.start() if header else stop))
            delta[after_a].subtract(moved)
            delta[after_b].update(moved)
    counts = old.ops.copy()
    for name in old.calls.keys() - fused:
        counts.update(old.body_ops(name))
    for name in fused - old.calls.keys():
        counts.subtract(old.body_ops(name))
    for owner, ops in delta.items():
        if owner not in fused:
            counts.update(ops)
    return +counts


def _attribute(
    lines: tuple[str, ...],
    first: int,
    name: str | None,
    delta: defaultdict[str | None, Counter[str]],
    sign: int,
) -> str | None:
    """Add ``sign`` x the ops of ``lines`` (line ``first`` on) to ``delta`` by computation.

    Returns the computation that the line after them belongs to.
    """
    for index, line in enumerate(lines, first):
        header = _HEADER.fullmatch(f"\n{line}") if index and line.startswith(("%", "E")) else None
        if header is not None:
            name = header.group(1)
        elif ops := _OPCODE.findall(line):
            if sign < 0:
                delta[name].subtract(ops)
            else:
                delta[name].update(ops)
    return name


class _HeaderTracker:
    """The computation a line offset lies in, for offsets asked in increasing order.

    Each call searches only the text since the previous one, so a whole diff costs one pass.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._searched = 0
        self._name: str | None = None

    def name_at(self, pos: int) -> str | None:
        """Name of the last header that ends before line offset ``pos`` (``None``: none)."""
        text, end = self._text, pos
        while end > self._searched:
            brace = text.rfind("{\n", self._searched, end)
            if brace < 0:
                break
            line_start = text.rfind("\n", 0, brace)
            match = _HEADER.match(text, line_start) if line_start >= 0 else None
            if match is not None and match.end() == brace + 1:
                self._name = match.group(1)
                break
            end = brace
        self._searched = pos
        return self._name
