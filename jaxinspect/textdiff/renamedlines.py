"""The changes of an HLO line diff that differ in names alone, found without parsing a line.

A renumbered or renamed layer makes changes whose removed and added lines read the same once
names are cut out. A change that is only that is recognised with one regex split of each side.
Where an edit falls inside such a stretch the line diff cuts it differently: one change holds
the renamed lines and the edited one together, and a line added or removed between two
computations can make the diff pair each computation with its neighbour (``}`` agrees where the
bodies do not). Such neighbouring changes are aligned again as a whole, on their lines with
the names cut out (a line diff of the skeletons), so each stretch that differs in names alone
becomes a change of its own and only the edited lines are left over.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator
from itertools import accumulate
from typing import NamedTuple

from jaxinspect.textdiff.hlonames import DEFINES, names_in
from jaxinspect.textdiff.linediff import LineDiff, diff_lines
from jaxinspect.textdiff.linematch import Change

#: Changes at most this many equal lines apart are aligned again together (a computation's
#: ``}`` and the blank line after it lie between the pieces of one renamed layer).
_GAP = 3
#: The most rounds of leaving out the changes whose names pair two ways.
_ROUNDS = 4

#: Each change's old and new names, in order.
_Pair = tuple[list[str], list[str]]
NamePairs = list[_Pair]


class RenamedChanges(NamedTuple):
    """The changes that read the same on both sides but for names, and their names paired."""

    changes: list[Change]
    renaming: dict[str, str]
    names: NamePairs
    #: The whole line diff, its changes cut so that each renamed stretch is one of them (a
    #: diff of the same two texts; ``changes`` are among these).
    diff: tuple[Change, ...]


def renamed_changes(plain: LineDiff) -> RenamedChanges | None:
    """The changes of ``plain`` that read the same on both sides but for names, and their
    names paired by position; ``None`` where there are none, or no pairing is a bijection."""
    groups = _groups(plain.changes)
    return _collected(_pieces(plain, groups, _alike(groups)))


def undoable_changes(plain: LineDiff) -> RenamedChanges | None:
    """``renamed_changes(plain)`` where they are worth undoing in bulk (``worth_undoing``),
    else ``None``. Nothing is aligned again where the changes that differ in names alone as
    they stand (or, where there are none, the names the changed lines define) are mostly
    chains of names: a renumbering, where that work would be thrown away (a fifth of a
    second on a 24-layer haiku gradient with one op added)."""
    groups = _groups(plain.changes)
    alike = _alike(groups)
    named: set[tuple[str, str]] = set()
    for pairs in alike:
        for pair in pairs:
            if pair is not None:
                named.update(zip(*pair, strict=True))
    if not (_mostly_fresh(named) if named else _defines_mostly_fresh(plain)):
        return None
    found = _collected(_pieces(plain, groups, alike))
    return found if found is not None and worth_undoing(found) else None


_Pieces = list[tuple[Change, _Pair | None]]


def _alike(groups: list[list[Change]]) -> list[list[_Pair | None]]:
    return [[_names_alike(change) for change in group] for group in groups]


def _pieces(
    plain: LineDiff, groups: list[list[Change]], alike: list[list[_Pair | None]]
) -> Iterator[_Pieces]:
    """Each run of nearby changes with their names paired where they differ in names alone,
    the part of a run from its first change that does not to its last, with one change
    either side, cut again (``_realigned``): the changes farther off pair already (a renamed
    layer with one edited computation realigns three computations, not its 40), and an edit
    shifts the line diff's pairing by at most a neighbour (with none either side, a deleted
    line's name went unpaired in a 400,000-line pair)."""
    for group, pairs in zip(groups, alike, strict=True):
        unpaired = [k for k, pair in enumerate(pairs) if pair is None]
        if unpaired:
            lo, hi = max(unpaired[0] - 1, 0), unpaired[-1] + 2
            if _realignable(group[lo:hi]):
                yield [
                    *zip(group[:lo], pairs[:lo], strict=True),
                    *_realigned(plain.a, plain.b, group[lo:hi]),
                    *zip(group[hi:], pairs[hi:], strict=True),
                ]
                continue
        yield list(zip(group, pairs, strict=True))


def _collected(groups: Iterable[_Pieces]) -> RenamedChanges | None:
    """The changes of ``groups`` whose names pair, paired (``paired``), with the whole diff."""
    found: list[Change] = []
    names: NamePairs = []
    diff: list[Change] = []
    for pieces in groups:
        for change, pair in pieces:
            diff.append(change)
            if pair is not None:
                found.append(change)
                names.append(pair)
    return paired(found, names, tuple(diff)) if found else None


#: The least share of new names that no old name has (renamed layers: all of them) for a
#: bulk renaming to be tried. XLA's renumbering after an added instruction renames along
#: chains (``%add.3`` to ``%add.4``, ``%add.4`` to ``%add.5``) that run into edited lines,
#: where the bulk renaming clashed on every real pair tried (shares 0.04, 0.09 and 0.54:
#: 12-, 24- and 48-layer stacks, one op added); the attempt then only costs time.
_FRESH = 0.6


def worth_undoing(found: RenamedChanges) -> bool:
    """Whether ``found`` is worth undoing in bulk: not mostly chains of names (see
    ``_FRESH``), which clashed in every real renumbering tried. ``_mostly_fresh`` of its
    renaming, whose pairs are distinct already (one per old name)."""
    renaming = found.renaming
    return _fresh_enough([new for old, new in renaming.items() if old != new], renaming)


def _mostly_fresh(pairs: set[tuple[str, str]]) -> bool:
    """Whether, of the distinct (old name, new name) ``pairs`` that rename, enough give a
    new name that no old name has (``_FRESH``)."""
    olds = {old for old, _ in pairs}  # names kept as they are count as old ones too
    return _fresh_enough([new for old, new in pairs if old != new], olds)


def _fresh_enough(news: list[str], olds: Container[str]) -> bool:
    """Whether enough of ``news`` (the new name of each distinct pair that renames) are
    names no old name has (``_FRESH``)."""
    fresh = {new for new in news if new not in olds}
    return bool(news) and len(fresh) >= _FRESH * len(news)


def _defines_mostly_fresh(plain: LineDiff) -> bool:
    """Whether enough of the names the added lines define (``_FRESH``) are defined on no
    removed line: ``worth_undoing``'s test, before any pairing (one match per line, on
    slices of the texts)."""
    a, b = plain.a, plain.b
    removed = "".join(a[c.a_pos : c.a_end] for c in plain.changes)
    added = "".join(b[c.b_pos : c.b_end] for c in plain.changes)
    before, after = set(DEFINES.findall("\n" + removed)), set(DEFINES.findall("\n" + added))
    return bool(after) and len(after - before) >= _FRESH * len(after)


def paired(
    changes: list[Change], names: NamePairs, diff: tuple[Change, ...]
) -> RenamedChanges | None:
    """``changes`` with their names paired; where an old name pairs with two new ones, or two
    old names with one (lines alike by chance, not a renaming), the changes holding them are
    left out. ``None`` where none is left."""
    for _ in range(_ROUNDS):
        olds = [name for before, _ in names for name in before]
        news = [name for _, after in names for name in after]
        renaming = dict(zip(olds, news, strict=True))
        if len(set(zip(olds, news, strict=True))) == len(renaming) == len(set(renaming.values())):
            return RenamedChanges(changes, renaming, names, diff)
        clashing = _clashing(olds, news)
        kept = [k for k, (before, _) in enumerate(names) if clashing.isdisjoint(before)]
        if not kept:
            return None
        changes, names = [changes[k] for k in kept], [names[k] for k in kept]
    return None


def _clashing(olds: list[str], news: list[str]) -> set[str]:
    """The old names paired with two new names, or with a new name another old name has."""
    forward: dict[str, str] = {}
    back: dict[str, str] = {}
    out: set[str] = set()
    for old, new in zip(olds, news, strict=True):
        if forward.setdefault(old, new) != new:
            out.add(old)
        other = back.setdefault(new, old)
        if other != old:
            out.update((old, other))
    return out


def _names_alike(change: Change) -> _Pair | None:
    """The old and new names of a change whose sides read the same but for names (one split
    of each side), or ``None``."""
    if not change.removed or len(change.removed) != len(change.added):
        return None
    removed = "\n".join(change.removed)
    before = names_in(removed).split(removed)
    if len(before) < 3:
        return None  # no names
    added = "\n".join(change.added)
    after = names_in(added).split(added)
    if len(after) != len(before) or before[::2] != after[::2]:
        return None
    return before[1::2], after[1::2]


def _groups(changes: tuple[Change, ...]) -> list[list[Change]]:
    """``changes`` in runs at most ``_GAP`` equal lines apart."""
    out: list[list[Change]] = []
    for change in changes:
        if out and change.a_lo - out[-1][-1].a_hi <= _GAP:
            out[-1].append(change)
        else:
            out.append([change])
    return out


def _realignable(group: list[Change]) -> bool:
    """Whether the changes of ``group`` hold lines on both sides, more than a few in all: only
    then can a stretch of them differ in names alone beside an edit (a small change, an edited
    line or two, is left to the line-by-line pass)."""
    removed = sum(len(change.removed) for change in group)
    added = sum(len(change.added) for change in group)
    return removed > 0 and added > 0 and removed + added > _FEW_LINES


#: Groups of at most this many changed lines (both sides) are not aligned again.
_FEW_LINES = 8


def _realigned(a: str, b: str, group: list[Change]) -> _Pieces:
    """The changes of ``group`` and the equal lines between them, cut again where their lines
    agree once names are cut out: each such stretch a change with its names paired, each
    stretch that disagrees a change without. ``group`` itself where no stretch agrees."""
    first, last = group[0], group[-1]
    old, new = _Cut(a[first.a_pos : last.a_end]), _Cut(b[first.b_pos : last.b_end])
    skeletons = diff_lines(old.skeleton, new.skeleton)
    old_at = list(accumulate((len(line) + 1 for line in old.lines), initial=first.a_pos))
    new_at = list(accumulate((len(line) + 1 for line in new.lines), initial=first.b_pos))

    def piece(x: int, x_end: int, y: int, y_end: int) -> Change:
        return Change(
            first.a_lo + x,
            first.a_lo + x_end,
            first.b_lo + y,
            first.b_lo + y_end,
            old_at[x],
            old_at[x_end],
            new_at[y],
            tuple(old.lines[x:x_end]),
            tuple(new.lines[y:y_end]),
        )

    out: _Pieces = []
    x = y = 0
    for skew in [*skeletons.changes, None]:
        x_end = len(old.lines) if skew is None else skew.a_lo
        if x_end > x:  # lines that agree but for names (some may agree whole)
            n = x_end - x
            before, after = old.names_of(x, x_end), new.names_of(y, y + n)
            if before != after:
                out.append((piece(x, x_end, y, y + n), (before, after)))
            x, y = x_end, y + n
        if skew is not None:
            out.append((piece(skew.a_lo, skew.a_hi, skew.b_lo, skew.b_hi), None))
            x, y = skew.a_hi, skew.b_hi
    if not any(pair is not None for _, pair in out):
        return [(change, None) for change in group]
    return out


class _Cut:
    """A stretch of whole lines cut at its names (one regex split): its lines, the same with
    each name replaced by a character no HLO text holds, and the names of any lines."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")[:-1]
        parts = names_in(text).split(text)
        self.skeleton = _CUT.join(parts[::2])
        self._names = parts[1::2]
        #: Where each line's names start among all the names.
        self._first = list(
            accumulate((line.count(_CUT) for line in self.skeleton.split("\n")), initial=0)
        )

    def names_of(self, lo: int, hi: int) -> list[str]:
        """The names of lines ``lo`` to ``hi`` (not included), in order."""
        return self._names[self._first[lo] : self._first[hi]]


_CUT = "\x00"
