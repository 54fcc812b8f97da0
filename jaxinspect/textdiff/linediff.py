"""A unified diff that stays linear on 100k-line HLO texts with scattered changes (no jax).

The changed lines come from ``linematch`` (texts compared as strings, lines split only near a
change); hunks read their context lines around each change straight from the old text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.jsonfields import js
from jaxinspect.textdiff.linematch import (
    Change,
    line_changes,
    split_lines,
    take_lines,
)
from jaxinspect.textdiff.terminated import terminated

Block = tuple[int, int, int]  # (start in a, start in b, length) of equal lines


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` hunk: 1-based starts and lengths, and its lines with their ``' '/-/+`` mark."""

    a_start: int
    a_len: int
    b_start: int
    b_len: int
    lines: tuple[tuple[str, str], ...] = field(metadata=js(omit=True))

    JSON_PROPERTIES: ClassVar[tuple[tuple[str, str], ...]] = (("lines", "marked_lines"),)

    @property
    def marked_lines(self) -> tuple[str, ...]:
        """Each line with its mark in front, as a unified diff prints it."""
        return tuple(mark + line for mark, line in self.lines)


@dataclass(frozen=True, slots=True)
class LineDiff:
    """The changed lines between two texts, kept with the texts to read context from."""

    a: str
    b: str
    changes: tuple[Change, ...]

    def of(self, a: str, b: str) -> bool:
        """Whether this is the diff of ``a`` and ``b``."""
        return terminated(a) == self.a and terminated(b) == self.b

    def hunks(self, context: int = 3) -> Iterator[Hunk]:
        """Hunks of a unified diff with ``context`` lines around each change."""
        group: list[Change] = []
        for change in self.changes:
            if group and change.a_lo - group[-1].a_hi > 2 * context:
                yield self._hunk(group, context)
                group = []
            group.append(change)
        if group:
            yield self._hunk(group, context)

    def _hunk(self, group: list[Change], context: int) -> Hunk:
        first, last = group[0], group[-1]
        # Lines around a group are equal on both sides, and as many on each (see line_changes).
        before = _lines_before(self.a, first.a_pos, min(context, first.a_lo))
        after = take_lines(self.a, last.a_end, context)
        lines = [(" ", line) for line in before]
        previous: Change | None = None
        for change in group:
            if previous is not None:
                lines.extend(
                    (" ", line) for line in split_lines(self.a[previous.a_end : change.a_pos])
                )
            lines.extend(("-", line) for line in change.removed)
            lines.extend(("+", line) for line in change.added)
            previous = change
        lines.extend((" ", line) for line in after)
        a_lo, b_lo = first.a_lo - len(before), first.b_lo - len(before)
        a_hi, b_hi = last.a_hi + len(after), last.b_hi + len(after)
        return Hunk(a_lo + 1, a_hi - a_lo, b_lo + 1, b_hi - b_lo, tuple(lines))


def diff_lines(a: str, b: str) -> LineDiff:
    """The line diff of texts ``a`` and ``b`` (a missing final newline is not a difference)."""
    a, b = terminated(a), terminated(b)
    return LineDiff(a, b, tuple(line_changes(a, b)) if a != b else ())


def text_hunks(a: str, b: str, context: int = 3) -> Iterator[Hunk]:
    """Hunks of a unified diff of texts ``a`` and ``b``."""
    return diff_lines(a, b).hunks(context)


def unified_hunks(a: Sequence[str], b: Sequence[str], context: int = 3) -> Iterator[Hunk]:
    """Hunks of a unified diff of line lists ``a`` and ``b`` (lines hold no newline)."""
    return text_hunks(_joined(a), _joined(b), context)


def matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[Block]:
    """Runs of equal lines, increasing in both sequences, ending with ``(len(a), len(b), 0)``."""
    blocks: list[Block] = []
    i = j = 0
    for change in diff_lines(_joined(a), _joined(b)).changes:
        if change.a_lo > i:
            blocks.append((i, j, change.a_lo - i))
        i, j = change.a_hi, change.b_hi
    if i < len(a):
        blocks.append((i, j, len(a) - i))
    blocks.append((len(a), len(b), 0))
    return blocks


def unified_diff(
    a: Sequence[str], b: Sequence[str], a_name: str, b_name: str, context: int = 3
) -> Iterator[str]:
    """Lines (with newlines) of a ``diff -u`` style diff; nothing when the texts are equal."""
    first = True
    for hunk in unified_hunks(a, b, context):
        if first:
            yield f"--- {a_name}\n+++ {b_name}\n"
            first = False
        yield f"@@ -{_range(hunk.a_start, hunk.a_len)} +{_range(hunk.b_start, hunk.b_len)} @@\n"
        for mark, line in hunk.lines:
            yield f"{mark}{line}\n"


def _joined(lines: Sequence[str]) -> str:
    if any("\n" in line for line in lines):
        raise ValueError("a line holds a newline")
    return "".join(f"{line}\n" for line in lines)


def _lines_before(text: str, pos: int, count: int) -> tuple[str, ...]:
    """The ``count`` lines that end where line offset ``pos`` begins."""
    start = pos
    for _ in range(count):
        start = text.rfind("\n", 0, start - 1) + 1
    return split_lines(text[start:pos])


def _range(start: int, length: int) -> str:
    # diff -u prints an empty range as the line before it.
    if length == 0:
        return f"{start - 1},0"
    return str(start) if length == 1 else f"{start},{length}"
