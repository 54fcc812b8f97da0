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
text's lines, and the lines around them take the renaming. A change whose names clash (lines
alike by chance, an operand that changed rather than a name) is left out with the renamings
that lead to it, and the rest checked again, a few rounds at most; where much clashes (a real
renumbering, whose chains of names run into edited lines) nothing is done here, and the
structural pass reads every line as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container
from typing import NamedTuple, cast

from jaxinspect.textdiff.hlonames import (
    DEFINES,
    HEADER_PARAM,
    HEADS,
    NamesAnswer,
    TextNames,
    answer_about,
    callee_counts,
    names_in,
)
from jaxinspect.textdiff.hlospans import computation_spans
from jaxinspect.textdiff.linediff import LineDiff
from jaxinspect.textdiff.linematch import Change
from jaxinspect.textdiff.rediff import Stretch, rediffed
from jaxinspect.textdiff.renamedlines import RenamedChanges, paired, worth_undoing

#: A computation's header line, after a newline (a literal first: the regex engine finds it
#: fast).
_HEADER_LINE = re.compile(r"\n(?:ENTRY )?%[\w.\-]+ \([^\n]*")


class BulkRenaming(NamedTuple):
    """The old text with renamed changes undone, the renaming (names that change), and the
    line diff of that text and the new one (what is left)."""

    text: str
    renaming: dict[str, str]
    rest: LineDiff


def undo_renamed_changes(
    plain: LineDiff, found: RenamedChanges, names: Callable[[], TextNames]
) -> BulkRenaming | None:
    """The old text of ``plain`` rewritten with the names of the changes ``found`` (see
    above), or ``None`` where too little of it holds.

    ``names`` gives the whole old text's names (read in a forked child for a large text:
    asked for after the first round's own checks). A change whose pairing clashes (a new name
    that a line left as it is still holds: an operand that changed, not a renaming) is left
    to the line-by-line pass with those renamed before it, and the rest is checked again, a
    few rounds at most.
    """
    if not worth_undoing(found):
        return None
    wanted = len(found.changes) * _KEPT
    for _ in range(_ROUNDS):
        attempt = _undo(plain, found, names)
        if not isinstance(attempt, set):
            return attempt
        if len(attempt) > _FEW:
            return None  # a renumbering whose chains of names clash: read line by line
        unmoved = _unmoved(found.renaming, attempt)
        kept = [
            k
            for k, (olds, news) in enumerate(found.names)
            if not any(old in unmoved and old != new for old, new in zip(olds, news, strict=True))
        ]
        if len(kept) < wanted or len(kept) == len(found.changes):
            return None
        fewer = paired([found.changes[k] for k in kept], [found.names[k] for k in kept], found.diff)
        if fewer is None:
            return None
        found = fewer
    return None


_ROUNDS = 4
#: The share of the renamed changes that must hold for the rest to be undone in bulk, and
#: the most names that may clash in a round for another to be tried; beyond either (a real
#: renumbering, whose chains of names run into edited lines), lines are read instead.
_KEPT = 0.9
_FEW = 8


def _unmoved(renaming: dict[str, str], clashes: set[str]) -> set[str]:
    """The old names that must keep their names for ``clashes`` to go: a clashing name, the
    old name renamed to it, and so on back along a renumbering (``%add.4`` became ``%add.5``
    because ``%add.3`` became ``%add.4``: if one stays, so must the one before)."""
    back = {new: old for old, new in renaming.items() if old != new}
    out: set[str] = set()
    frontier = list(clashes)
    while frontier:
        name = frontier.pop()
        if name in out:
            continue
        out.add(name)
        before = back.get(name)
        if before is not None:
            frontier.append(before)
    return out


def _undo(
    plain: LineDiff, found: RenamedChanges, names: Callable[[], TextNames]
) -> BulkRenaming | set[str] | None:
    """One round of ``undo_renamed_changes``: the renaming, or the names whose pairings
    clash, or ``None``."""
    changes, renaming = found.changes, found.renaming
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
        for change in found.diff
        if id(change) in pure or not moved.keys().isdisjoint(_names("\n".join(change.removed)))
    ]
    # The checks first, with names found (not yet replaced): most rounds that fail, fail here.
    spans = _spans(a, touched)
    cut = [
        (start, end, _between(a, start, end, [c for c in inside if id(c) in pure]))
        for start, end, inside in spans
    ]
    clashes: set[str] = set()
    for _, _, parts in cut:
        for before, _ in parts:
            clashes |= _clashes(before, moved, kept_targets)
        if len(clashes) > _FEW:
            return clashes  # too many to mend: no need to look further
    region = "\n" + "".join(a[start:end] for start, end, _ in spans)  # patterns start with \n
    computations = HEADS.findall(region)
    clashes |= moved.keys() - {*DEFINES.findall(region), *computations}  # defined elsewhere
    if clashes:
        return clashes
    renamed_computations = set(computations) & moved.keys()
    # What the whole old text's names must tell (a renamed computation called from a line
    # not rewritten here, a new name that a line elsewhere defines) is asked now, of the
    # child that reads them where it can: it answers while the text is rewritten and diffed
    # again, and only the answer comes back, not its 150,000 names.
    answer = _asked(names, kept_targets, renamed_computations)
    pieces: list[str] = []
    stretches: list[Stretch] = []
    at = length = 0  # in the old text, and the length of the text made so far
    for start, end, parts in cut:
        pieces.append(a[at:start])
        length += start - at
        span = "".join(
            _rewritten(before, moved) + ("" if change is None else "\n".join(change.added) + "\n")
            for before, change in parts
        )
        pieces.append(span)
        stretches.append((start, end, length, length + len(span)))
        length += len(span)
        at = end
    pieces.append(a[at:])
    text = "".join(pieces)
    rest = rediffed(plain, text, stretches)
    called = callee_counts(region, renamed_computations) if renamed_computations else {}
    whole = answer()
    clashes = {c for c in renamed_computations if whole.callees.get(c, 0) > called.get(c, 0)}
    clashes |= whole.defined
    if clashes:
        return clashes
    return BulkRenaming(text, moved, rest)


def _asked(
    names: Callable[[], TextNames], wanted: set[str], computations: set[str]
) -> Callable[[], NamesAnswer]:
    """The answer about ``wanted`` names and ``computations`` (``hlonames.answer_about``):
    asked of the forked child reading the names where ``names`` is one that answers
    (``Pending.ask``; once per child), else read off the names themselves."""
    question = (frozenset(wanted), frozenset(computations))
    ask = getattr(names, "ask", None)
    pending = ask(question) if callable(ask) else None
    if pending is not None:
        return lambda: cast(NamesAnswer, pending())
    return lambda: answer_about(names(), question)


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


def _spans(a: str, changes: list[Change]) -> list[tuple[int, int, list[Change]]]:
    """The computations holding ``changes`` (in order; start and end offsets in ``a``, merged
    where they touch), each with the changes inside it."""
    ranges = [(change.a_pos, change.a_end) for change in changes]
    return [
        (start, end, [changes[k] for k in members])
        for start, end, members in computation_spans(a, ranges)
    ]


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


def _clashes(text: str, moved: dict[str, str], kept_targets: set[str]) -> set[str]:
    """The names in lines around the renamed changes that clash with the renaming: a name that
    stays and is also a renamed value's new name, or a header's bare parameter name that the
    renaming would change (bare names are left to the line-by-line pass)."""
    out = kept_targets.intersection(_names(text))
    if text.startswith(("%", "ENTRY %")) or "\n%" in text or "\nENTRY %" in text:
        for header in _HEADER_LINE.findall("\n" + text):
            for match in HEADER_PARAM.finditer(header):
                name = match.group(1) or match.group(2)
                if name in moved or name in kept_targets:
                    out.add(name)
    return out


def _names(text: str) -> list[str]:
    return names_in(text).findall(text)


def _rewritten(text: str, moved: dict[str, str]) -> str:
    """Lines around the renamed changes with the renaming applied."""
    parts = names_in(text).split(text)
    names = parts[1::2]
    if not names or moved.keys().isdisjoint(names):
        return text
    get = moved.get
    parts[1::2] = ["%" + get(name, name) for name in names]
    return "".join(parts)
