"""HLO op histograms read from text: opcodes outside fused computations (no jax import).

A computation runs from its header line (``%name (...) -> ... {``, or ``ENTRY %name ...``) to
the next header; a fused computation is one a ``fusion(...)`` instruction ``calls=``. Every
pattern (in ``hloscan``, with the whole-text scan) stays within one line, so a line's
contribution depends on that line and on the header above it alone: that is what lets
``counts_after`` update a histogram from a line diff.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import NamedTuple

from jaxinspect.textdiff.linematch import Change
from jaxinspect.xla.hloscan import HEADER, OPCODE, ModuleScan, fusion_calls, headers, scan_module


@dataclass(frozen=True, slots=True)
class Bodies:
    """Where each computation's body lies in a module text: read once, asked for by name.

    Compact (the names in one string, the offsets in arrays), so that a forked child that
    counted the text sends it back in a few milliseconds. A body runs from the end of its
    header to the start of the next header (or the end of the text).
    """

    names: str  # the computations' names in text order, one per line ("" if none)
    starts: array[int]  # where each header starts
    ends: array[int]  # where each header ends: its body's start
    size: int  # the text's length

    @property
    def top(self) -> int:
        """Where the first header starts (the end of the text if none)."""
        return self.starts[0] if self.starts else self.size

    def spans(self) -> list[tuple[str, int, int]]:
        """``(name, start, stop)`` of each body, in text order."""
        if not self.starts:
            return []
        stops = [*self.starts[1:], self.size]
        return list(zip(self.names.split("\n"), self.ends, stops, strict=True))

    def named(self, wanted: Collection[str]) -> list[tuple[str, int, int]]:
        """The spans of the bodies whose name is in ``wanted`` (all of them, where one repeats)."""
        if not self.starts:
            return []
        last = len(self.starts) - 1
        return [
            (name, self.ends[k], self.starts[k + 1] if k < last else self.size)
            for k, name in enumerate(self.names.split("\n"))
            if name in wanted
        ]


@dataclass(frozen=True, slots=True)
class HloCount:
    """A module's op counts and its fusion calls, with the text they were counted in."""

    ops: Counter[str]  # opcodes outside fused computations
    calls: Counter[str]  # computation name -> fusion instructions that call it
    text: str
    #: Where its computations' bodies lie (``apply_delta`` counts the few a change flips).
    bodies: Bodies


def body_ops(text: str, names: Collection[str], bodies: Bodies) -> dict[str, Counter[str]]:
    """Opcodes in the body of each computation in ``names`` (in all, where a name repeats).

    ``bodies`` is ``find_bodies(text)``, read once: no scan of the text per name.
    """
    wanted = set(names)
    ops: dict[str, Counter[str]] = {name: Counter() for name in wanted}
    for name, start, stop in bodies.named(wanted) if wanted else []:
        ops[name].update(OPCODE.findall(text, start, stop))
    return ops


def count_hlo(text: str) -> HloCount:
    """Opcode counts outside fused computations, with what ``counts_after`` needs."""
    return counted(text, scan_module(text))


def counted(text: str, scan: ModuleScan) -> HloCount:
    """The count of ``text`` from ``scan_module(text)`` (computed elsewhere: a forked child)."""
    ops, calls, names, starts, ends = scan
    return HloCount(ops, calls, text, Bodies(names, starts, ends, len(text)))


def find_bodies(text: str) -> Bodies:
    """Where each computation's body lies: from the end of its header to the next header."""
    return Bodies(*headers(text), len(text))


def counts_after(old: HloCount, a: str, b: str, changes: tuple[Change, ...]) -> Counter[str] | None:
    """The counts of ``b`` from those of ``a`` and their line changes (``None``: count ``b``).

    Each computation's ops change by its removed and added lines, and by the unchanged lines
    that a changed header moves into or out of it; computations that become fused or unfused
    add or drop their whole body. Only a line moving to or from the top is left to a count.
    """
    delta = line_delta(a, b, changes)
    return None if delta is None else apply_delta(old, delta)


@dataclass(frozen=True, slots=True)
class LineDelta:
    """What a line diff changes, by computation: its ops, and the fusion calls it makes."""

    ops: dict[str | None, Counter[str]]  # computation (None: the top) -> ops added or removed
    calls: Counter[str]  # computation -> fusion calls of it added (+) or removed (-)


def line_delta(a: str, b: str, changes: tuple[Change, ...]) -> LineDelta | None:
    """The first half of ``counts_after``: needs the texts and their diff, not ``a``'s counts.

    ``None`` where a line moves to or from the top, where no header is read.
    """
    calls: Counter[str] = Counter()
    for change in changes:
        calls.subtract(fusion_calls("\n".join(change.removed)))
        calls.update(fusion_calls("\n".join(change.added)))
    delta: defaultdict[str | None, Counter[str]] = defaultdict(Counter)
    above_a, above_b = _HeaderTracker(a), _HeaderTracker(b)
    for k, change in enumerate(changes):
        if change.a_lo == 0 and not (change.removed and change.added):
            return None
        after_a = _attribute(change.removed, change.a_lo, above_a.name_at(change.a_pos), delta, -1)
        after_b = _attribute(change.added, change.b_lo, above_b.name_at(change.b_pos), delta, 1)
        if after_a != after_b:  # unchanged lines up to the next header change computation
            start = change.b_pos + sum(len(line) + 1 for line in change.added)
            stop = changes[k + 1].b_pos if k + 1 < len(changes) else len(b)
            header = HEADER.search(b, start - 1, stop)
            moved = Counter(OPCODE.findall(b, start, header.start() if header else stop))
            delta[after_a].subtract(moved)
            delta[after_b].update(moved)
    return LineDelta(dict(delta), calls)


class RenamedBasis(NamedTuple):
    """Another line diff to derive the new text's counts from: the old text with a renaming
    applied (names only: every opcode, body and fusion call is as it was), and its changes to
    the new text. A diff that undid a renumbering has far fewer changed lines to read."""

    text: str
    changes: tuple[Change, ...]
    #: Old name -> new name, for the names that change (computations among them).
    renaming: dict[str, str]


def renamed_count(count: HloCount, renaming: dict[str, str]) -> HloCount:
    """``count`` as the old text's count would read after ``renaming``: its computations and
    fusion callees under their new names. The bodies still lie where they did in the old text
    (``count.text``), which holds the same opcodes: ``apply_delta`` reads them there."""
    # Most names keep theirs, and a 200,000-line text has 20,000 computations: the callees
    # are copied and the few renamed ones moved, the names mapped from C (map(get, x, x) is
    # get(name, name) for each): 4.5 -> 1.5 ms.
    get = renaming.get
    calls = count.calls.copy()
    moved = {old: calls.pop(old) for old in renaming.keys() & calls.keys()}
    for old, n in moved.items():
        calls[renaming[old]] = n
    bodies = count.bodies
    listed = bodies.names.split("\n")
    names = "\n".join(map(get, listed, listed)) if bodies.names else ""
    return HloCount(
        count.ops, calls, count.text, Bodies(names, bodies.starts, bodies.ends, bodies.size)
    )


def changed_callees(delta: LineDelta) -> list[str]:
    """Computations whose count of fusion callers changes: only these can become fused or not."""
    return [name for name, change in delta.calls.items() if change]


def apply_delta(old: HloCount, delta: LineDelta) -> Counter[str]:
    """The second half of ``counts_after``: ``a``'s counts changed by the line delta.

    Only the computations whose fusion status flips are counted again, found by name in
    ``old.bodies``.
    """

    def fused(name: str | None) -> bool:  # None: the text above the first computation
        return name is not None and old.calls[name] + delta.calls[name] > 0

    flipped = [name for name in changed_callees(delta) if fused(name) != (name in old.calls)]
    bodies = body_ops(old.text, flipped, old.bodies)
    counts = old.ops.copy()
    for name in flipped:
        if fused(name):
            counts.subtract(bodies[name])
        else:
            counts.update(bodies[name])
    for owner, ops in delta.ops.items():
        if not fused(owner):
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
    if not lines:
        return name
    # The lines as one text, read with one scan per pattern: a renamed layer is a change of
    # hundreds of lines. Each match stays within a line, as it would line by line; line 0 of
    # the text is no header (none starts the text).
    block = "\n" + "\n".join(lines)
    start = 0
    for header in HEADER.finditer(block, 1 if first == 0 else 0):
        _add(delta, name, OPCODE.findall(block, start, header.start()), sign)
        name, start = header.group(1), header.end()
    _add(delta, name, OPCODE.findall(block, start), sign)
    return name


def _add(
    delta: defaultdict[str | None, Counter[str]], name: str | None, ops: list[str], sign: int
) -> None:
    if not ops:
        return
    if sign < 0:
        delta[name].subtract(Counter(ops))
    else:
        delta[name].update(ops)


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
            match = HEADER.match(text, line_start) if line_start >= 0 else None
            if match is not None and match.end() == brace + 1:
                self._name = match.group(1)
                break
            end = brace
        self._searched = pos
        return self._name
