"""Renamed stretches of two HLO texts undone in bulk, before the structural pass reads lines.

A renumbering (XLA's names after one added instruction, a repeated layer printed under other
names) makes changes whose removed and added lines read the same but for names: hundreds of
lines each, most of a large diff's changed lines. Read line by line they are most of the
structural pass's time. Here each such change is recognised with one regex split of each side
(its text with the names cut out is the same on both), its names paired by position, and the
pairing checked as a whole, with no line parsed:

- one new name per old name and one old name per new name, over all such changes;
- every renamed name is defined in the computations holding those changes, which are
  rewritten whole (an instruction is used only in its own computation);
- a renamed computation is called from nowhere else (``TextNames.callees``);
- no new name is a name the old text keeps (``TextNames.defined``, and the lines around);
- a computation header's bare parameter names are not renamed (they are not cut out here).

Then the old text is rewritten in those computations at once: the changes become the new
text's lines, and the lines around them take the renaming. Where any check fails nothing is
done here, and the structural pass reads every line as before.
"""

from __future__ import annotations

import re
from collections.abc import Container
from typing import NamedTuple

from jaxinspect.textdiff.hlonames import (
    DEFINES,
    HEADER_PARAM,
    HEADS,
    NAME,
    TextNames,
    callee_counts,
)
from jaxinspect.textdiff.hlospans import computation_span
from jaxinspect.textdiff.linediff import LineDiff
from jaxinspect.textdiff.linematch import Change

#: A computation's header line, after a newline (a literal first: the regex engine finds it
#: fast).
_HEADER_LINE = re.compile(r"\n(?:ENTRY )?%[\w.\-]+ \([^\n]*")


class BulkRenaming(NamedTuple):
    """The old text with renamed changes undone, and the renaming (names that change).

    Whether it holds in the whole old text is asked last (``holds``): the whole text's
    names are read in a forked child meanwhile.
    """

    text: str
    renaming: dict[str, str]
    #: New names that no old name had: the old text must define none of them.
    kept_targets: frozenset[str]
    #: How often the rewritten computations call each renamed computation.
    called: dict[str, int]

    def holds(self, names: TextNames) -> bool:
        """Whether the renaming is a bijection of the whole old text (``names``): no line
        outside the rewritten computations calls a renamed computation or defines a new name."""
        if any(names.callees[c] > count for c, count in self.called.items()):
            return False
        defined = names.defined()
        return not any(name in defined for name in self.kept_targets)


class RenamedChanges(NamedTuple):
    """The changes that read the same on both sides but for names, and their names paired."""

    changes: list[Change]
    renaming: dict[str, str]


def undo_renamed_changes(plain: LineDiff, found: RenamedChanges) -> BulkRenaming | None:
    """The old text of ``plain`` rewritten with the names of the changes ``found`` (see
    above), or ``None`` where the renaming fails a check that the rewritten computations
    answer; ``BulkRenaming.holds`` answers the rest."""
    changes, renaming = found
    moved = {old: new for old, new in renaming.items() if old != new}
    if not moved:
        return None
    kept_targets = moved.values() - moved.keys()  # new names no old name had
    a = plain.a
    pure = {id(change) for change in changes}
    # Other changes that name a renamed value (an edited line of a renamed layer) are
    # rewritten with the computations they are in, and left for the line-by-line pass.
    touched = [
        change
        for change in plain.changes
        if id(change) in pure
        or not moved.keys().isdisjoint(NAME.findall("\n".join(change.removed)))
    ]
    pieces: list[str] = []
    regions: list[str] = []
    at = 0
    for start, end, inside in _spans(a, touched):
        pieces.append(a[at:start])
        for before, change in _between(a, start, end, [c for c in inside if id(c) in pure]):
            rewritten = _rewritten(before, moved, kept_targets)
            if rewritten is None:
                return None
            pieces.append(rewritten)
            if change is not None:
                pieces.append("\n".join(change.added) + "\n")
        regions.append(a[start:end])
        at = end
    pieces.append(a[at:])
    region = "\n" + "".join(regions)  # each pattern below starts with a newline
    computations = HEADS.findall(region)
    if not moved.keys() <= {*DEFINES.findall(region), *computations}:
        return None  # a name defined elsewhere would keep it there
    for header in _HEADER_LINE.findall(region):
        for match in HEADER_PARAM.finditer(header):
            name = match.group(1) or match.group(2)
            if name in moved or name in kept_targets:
                return None  # a bare parameter name is not rewritten here
    renamed_computations = set(computations) & moved.keys()
    called = callee_counts(region, renamed_computations) if renamed_computations else {}
    return BulkRenaming(
        "".join(pieces),
        moved,
        frozenset(kept_targets),
        {c: called.get(c, 0) for c in renamed_computations},
    )


def renamed_names(names: TextNames, renaming: dict[str, str]) -> TextNames:
    """``names`` of a text after ``renaming`` (old name -> new name) is applied to it."""
    callees = names.callees.copy()
    for old in renaming.keys() & callees.keys():
        del callees[old]
    for old, new in renaming.items():
        count = names.callees.get(old)
        if count:
            callees[new] = count
    return TextNames("", callees, _Renamed(names.defined(), renaming))


class _Renamed:
    """A set of names seen through a renaming, without copying it (only ``in`` is asked)."""

    def __init__(self, names: Container[str], renaming: dict[str, str]) -> None:
        self._names, self._renaming = names, renaming
        self._targets = set(renaming.values())

    def __contains__(self, name: object) -> bool:
        if name in self._targets:
            return True
        return name not in self._renaming and name in self._names


def renamed_changes(changes: tuple[Change, ...]) -> RenamedChanges | None:
    """The changes that read the same on both sides but for names, and their names paired by
    position (one regex split per side of each); ``None`` where there are none, or the
    pairing is no bijection."""
    found: list[Change] = []
    olds: list[str] = []
    news: list[str] = []
    split = NAME.split
    for change in changes:
        if not change.removed or len(change.removed) != len(change.added):
            continue
        before = split("\n".join(change.removed))
        if len(before) < 3:
            continue  # no names
        after = split("\n".join(change.added))
        if len(after) != len(before) or before[::2] != after[::2]:
            continue
        found.append(change)
        olds += before[1::2]
        news += after[1::2]
    if not found:
        return None
    renaming = dict(zip(olds, news, strict=True))
    pairs = set(zip(olds, news, strict=True))
    if len(pairs) != len(renaming) or len(set(renaming.values())) != len(renaming):
        return None  # an old name paired with two new ones, or two old names with one
    return RenamedChanges(found, renaming)


def _spans(a: str, changes: list[Change]) -> list[tuple[int, int, list[Change]]]:
    """The computations holding ``changes`` (start and end offsets in ``a``, merged where they
    touch), each with the changes inside it."""
    spans: list[tuple[int, int, list[Change]]] = []
    for change in changes:
        start, end = computation_span(a, change.a_pos, change.a_end)
        if spans and start < spans[-1][1]:
            first, last, inside = spans[-1]
            inside.append(change)
            spans[-1] = (first, max(end, last), inside)
        else:
            spans.append((start, end, [change]))
    return spans


def _between(a: str, start: int, end: int, inside: list[Change]) -> list[tuple[str, Change | None]]:
    """The text of a span cut at its changes: each piece before a change, with that change;
    the last piece with ``None``."""
    out: list[tuple[str, Change | None]] = []
    at = start
    for change in inside:
        out.append((a[at : change.a_pos], change))
        at = change.a_end
    out.append((a[at:end], None))
    return out


def _rewritten(text: str, moved: dict[str, str], kept_targets: set[str]) -> str | None:
    """Lines around the renamed changes with the renaming applied; ``None`` where one holds
    a name that stays and is also a renamed value's new name."""
    parts = NAME.split(text)
    names = parts[1::2]
    if not names:
        return text
    if not kept_targets.isdisjoint(names):
        return None
    if moved.keys().isdisjoint(names):
        return text
    get = moved.get
    parts[1::2] = ["%" + get(name, name) for name in names]
    return "".join(parts)
