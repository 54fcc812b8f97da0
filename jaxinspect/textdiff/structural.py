"""A diff that matches names by structure, so a renaming is never a change (no jax import).

One added instruction renumbers XLA's names after it (``%add.3`` becomes ``%add.4`` in every
later line), and a jaxpr's variables are lettered in order, so a line diff of two compiles
shows dozens of changed lines for one changed operation. Here, before the line diff, the
values defined on changed lines are paired across the two texts: runs of lines that differ in
names alone pair in order; then by structure, in the spirit of XLA's ``hlo_diff`` (a value's
signature is its defining line with every name blanked out, and the signatures of the values
it uses, recursively; values on unchanged lines and values paired already are anchors, the
same on both sides), which survives any reordering; what is left pairs by name and by the
shape of its lines in order. The old text is rewritten with the new names, and only then
diffed line by line. What is left are the lines whose meaning changed, shown with the new
names, plus a count of renamings.

The renaming is a bijection applied to every line that holds its names, so the old side shown
is always the old program under other names (``_bijective``); and where it explains less than
the lines do, the plain line diff stands.

Only changed computations are parsed, so the cost follows the size of the change, not of the
text. Each dialect's parsing reads the printed text; the tests run it on real compiler output.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from jaxinspect.textdiff.bulkrename import BulkRenaming, renamed_names, undo_renamed_changes
from jaxinspect.textdiff.hlonames import COMPUTATION as _HLO_COMPUTATION
from jaxinspect.textdiff.hlonames import HEADER_PARAM as _HLO_HEADER_PARAM
from jaxinspect.textdiff.hlonames import INSTRUCTION as _HLO_INSTRUCTION
from jaxinspect.textdiff.hlonames import NAME as _HLO_NAME
from jaxinspect.textdiff.hlonames import TextNames, callee_counts, text_names
from jaxinspect.textdiff.hlospans import ComputationLines
from jaxinspect.textdiff.linediff import LineDiff, diff_lines
from jaxinspect.textdiff.linematch import Change
from jaxinspect.textdiff.renamedlines import RenamedChanges, undoable_changes

#: StableHLO: SSA values ``%0``, ``%cst_1``, ``%arg3``, ``%iterArg`` and symbols ``@name``.
_MLIR_NAME = re.compile(r"([%@][\w.\-$]+)")
_MLIR_DEF = re.compile(r"(%[\w.\-$]+)(?::\d+)? = |(%[\w.\-$]+): |func\.func \w+ (@[\w.\-$]+)")
#: jaxpr: binders ``name:dtype[...]``; uses are bare names.
_JAXPR_BINDER = re.compile(r"(?<![\w.])([a-z]+):(?=[a-z]+\d*\[|[a-z]+\d*\b)")
_JAXPR_WORD = re.compile(r"(?<![\w.\[=:])([a-z]+)(?![\w\[=:(])")
_JAXPR_PRIMITIVE = re.compile(r" = ([a-z_][\w]*)")


@dataclass(frozen=True, slots=True)
class StructuralDiff:
    """The line diff after renaming, and what the matching found."""

    lines: LineDiff
    renamed: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]


@dataclass(slots=True)
class _Line:
    defs: list[str]
    refs: list[str]
    template: str
    #: Whether the line heads an HLO computation (read once per distinct line, see ``_header``).
    header: bool = False


class PendingNames(Protocol):
    """A value being computed: call for it; ``close`` where it is no longer wanted."""

    def __call__(self) -> TextNames: ...

    def close(self) -> None: ...


#: Starts ``function(text)``: ``diff`` passes one that computes it in a forked child
#: (``snapshot.background.in_background``), so two cores share the work.
RunAside = Callable[[Callable[[str], "TextNames"], str], PendingNames]


class _Later:
    """``function(text)`` computed in this process, when first asked for (then kept)."""

    def __init__(self, function: Callable[[str], TextNames], text: str) -> None:
        self._function, self._text = function, text
        self._value: TextNames | None = None

    def __call__(self) -> TextNames:
        if self._value is None:
            self._value = self._function(self._text)
        return self._value

    def close(self) -> None:
        pass


class EarlyNames(NamedTuple):
    """What ``early_names`` found for an HLO line diff: its changes to undo in bulk, if any,
    the old text's names being read aside for them, and, where asked for, the bulk renaming
    done and the line diff after it."""

    text: str
    found: RenamedChanges | None
    names: PendingNames | None
    undone: BulkRenaming | None = None

    def close(self) -> None:
        """Stop reading the names where they are no longer wanted."""
        if self.names is not None:
            self.names.close()


def early_names(
    plain: LineDiff, aside: RunAside, names: PendingNames | None = None, *, undo: bool = False
) -> EarlyNames:
    """For an HLO line diff, its changes that differ in names alone, and, where they are
    worth undoing in bulk, the old text's names started aside (``aside``) as soon as the line
    diff is known, so the work done before the structural diff (``diff``'s op counts)
    overlaps the reading. ``names``, if given, are those names being read already (by the
    child that counted the old text), and are taken instead, and kept also where nothing is
    to be undone in bulk (the line-by-line pass may need them). With ``undo``, the bulk
    renaming is done here too (waiting for the names), so the op counts can be derived from
    the few lines left after it. Pass the result to ``structural_diff``; close it where that
    never runs."""
    found = undoable_changes(plain)
    if found is None:
        return EarlyNames(plain.a, None, names)
    names = names if names is not None else aside(text_names, plain.a)
    if not undo:
        return EarlyNames(plain.a, found, names)
    bulk = undo_renamed_changes(plain, found, names)
    if bulk is None:  # refused: the structural diff reads the lines, with the names
        return EarlyNames(plain.a, None, names)
    return EarlyNames(plain.a, found, names, bulk)


def structural_diff(
    stage: str, plain: LineDiff, aside: RunAside | None = None, early: EarlyNames | None = None
) -> StructuralDiff:
    """``plain`` (a line diff) redone with the old text's names rewritten where values match.

    ``aside``, if given, starts computing the whole old text's defined and called names (HLO),
    which the renaming needs last, while the changed computations are parsed and matched;
    else they are computed here, where needed. ``early``, if given and made from ``plain``
    (``early_names``), has started them already.
    """
    if not plain.changes:
        return StructuralDiff(plain, 0, (), (), ())
    dialect, rename = _DIALECTS.get(stage, (None, None))
    if dialect is None or rename is None:
        return StructuralDiff(plain, 0, (), (), ())
    parse = _memoized(dialect)
    # Changes that differ in names alone are found first, in bulk (HLO): a renumbered text
    # is mostly such changes, and they need no line parsed.
    if early is not None and (stage != "hlo" or early.text is not plain.a):
        early.close()
        early = None
    if early is not None:
        in_bulk: RenamedChanges | None = early.found
    else:
        in_bulk = undoable_changes(plain) if stage == "hlo" else None
    if in_bulk is None and not _could_be_renamed(plain, parse):
        return _outcome(plain, 0, parse)
    if early is not None and early.names is not None:
        names = early.names
    else:
        start = aside if aside is not None and stage == "hlo" else _Later
        names = start(text_names, plain.a)
    try:
        found = None
        if in_bulk is not None:
            undone = early.undone if early is not None else None
            found = _after_bulk(stage, plain, in_bulk, parse, rename, names, undone)
        if found is None:
            found = _renamed(stage, plain, parse, rename, names)
    finally:
        names.close()  # no child left behind where the names were not needed
    if found is None or _size(found[0]) >= _size(plain):
        return _outcome(plain, 0, parse)  # names found no better story than the lines tell
    final, renaming, fresh = found
    return _outcome(final, len(renaming) - fresh, parse)


#: A line diff after a renaming, the renaming (old name -> new name, names that change), and
#: how many of its new names are fresh (no value's name in the new text).
_Renamed = tuple[LineDiff, dict[str, str], int]


def _after_bulk(
    stage: str,
    plain: LineDiff,
    in_bulk: RenamedChanges,
    parse: Callable[[str], _Line],
    rename: Callable[[str, dict[str, str]], str],
    names: Callable[[], TextNames],
    undone: BulkRenaming | None = None,
) -> _Renamed | None:
    """The changes renamed in bulk undone (or ``undone`` already), then the rest matched line
    by line; ``None`` where the bulk renaming fails its checks (the whole diff is then
    matched line by line)."""
    bulk = undone if undone is not None else undo_renamed_changes(plain, in_bulk, names)
    if bulk is None:
        return None
    rest = bulk.rest
    found: _Renamed = (rest, bulk.renaming, 0)
    renamable = _renamable(rest.changes, parse)
    if renamable and _could_be_renamed(rest, parse):
        renamed: dict[str, TextNames] = {}

        def names_after() -> TextNames:  # the old text's names, as the bulk renaming left them
            if not renamed:
                renamed["names"] = renamed_names(names(), bulk.renaming)
            return renamed["names"]

        more = _renamed(stage, rest, parse, rename, names_after, renamable)
        if more is not None:
            final, second, fresh = more
            found = (final, _composed(bulk.renaming, second), fresh)
    return found


def _composed(first: dict[str, str], second: dict[str, str]) -> dict[str, str]:
    """``first``, then ``second`` (on the names ``first`` left), as one renaming."""
    out = {old: second.get(new, new) for old, new in first.items()}
    targets = set(first.values())
    out.update((old, new) for old, new in second.items() if old not in targets)
    return {old: new for old, new in out.items() if old != new}


def _renamed(
    stage: str,
    plain: LineDiff,
    parse: Callable[[str], _Line],
    rename: Callable[[str, dict[str, str]], str],
    names: Callable[[], TextNames],
    renamable: tuple[Change, ...] | None = None,
) -> _Renamed | None:
    """``plain`` matched line by line and diffed again after the renaming; ``None`` where
    that tells no shorter story. ``renamable``, if given (after a bulk renaming, whose
    renamed lines are gone and edited ones remain: ``_renamable``), are the only changes
    whose HLO computations are read: edited lines elsewhere keep their names."""
    # A line equal on both sides can still name another value (``%mul.6`` is another
    # broadcast after a renumbering), so every line of a computation holding a change is
    # parsed, on both sides (also where one side of a change is empty); names from elsewhere
    # (other computations) are anchors. In HLO those computations are found by offsets: the
    # texts are not split into lines.
    if stage == "hlo":
        changes = plain.changes if renamable is None else renamable
        a_held = ComputationLines(plain.a, changes, "a")
        b_held = ComputationLines(plain.b, changes, "b")
        old = _Side(a_held, a_held.numbers(), parse)
        new = _Side(b_held, b_held.numbers(), parse)
    else:
        changes = plain.changes
        a_lines, b_lines = plain.a.split("\n"), plain.b.split("\n")
        # jaxpr and StableHLO texts are small: read whole.
        old = _Side(a_lines, list(range(len(a_lines))), parse)
        new = _Side(b_lines, list(range(len(b_lines))), parse)
    paired = _match(old, new, changes, parse)
    renaming, fresh = _bijective(stage, names, old, paired)
    if stage == "hlo":
        text = a_held.rewritten({i: rename(a_held[i], renaming) for i in old.parsed})
    else:
        for i in sorted(old.parsed):
            a_lines[i] = rename(a_lines[i], renaming)
        text = "\n".join(a_lines)
    final = diff_lines(text, plain.b)
    if _size(final) >= _size(plain):
        return None
    return final, renaming, fresh


def _size(diff: LineDiff) -> int:
    return sum(len(c.removed) + len(c.added) for c in diff.changes)


def _memoized(parse: Callable[[str], _Line]) -> Callable[[str], _Line]:
    """``parse`` once per distinct line: both sides share the unchanged lines of a changed
    computation, and the removed and added lines are read again for the outcome."""
    seen: dict[str, _Line] = {}

    def parsed(text: str) -> _Line:
        line = seen.get(text)
        if line is None:
            line = seen[text] = parse(text)
            line.header = bool(line.defs) and text[:1] in "%E" and _is_header(text)
        return line

    return parsed


def _could_be_renamed(plain: LineDiff, parse: Callable[[str], _Line]) -> bool:
    """Whether some removed line equals some added line once names are blanked out.

    If none does, no renaming can turn a removed line into an added one, and the structural
    pass (which parses whole computations) is skipped: a diff of edits only costs no more
    than a line diff.
    """
    removed = {parse(line).template for c in plain.changes for line in c.removed}
    return any(parse(line).template in removed for c in plain.changes for line in c.added)


def _renamable(changes: tuple[Change, ...], parse: Callable[[str], _Line]) -> tuple[Change, ...]:
    """The changes a renaming could explain in part. Left out are only small changes whose
    removed lines read as none of their added lines once names are blanked out, nor as any
    line of a change that only adds, and the other way round (edited lines, which keep their
    names); and small changes that only remove lines reading as no added line anywhere, or
    only add lines reading as no removed line (a line inserted or deleted: a computation
    moved reads alike on both sides). Changes of more lines are kept without being read."""

    def templates(lines: tuple[str, ...]) -> set[str]:
        return {parse(line).template for line in lines}

    removed_alone: set[str] = set()  # lines of changes that only remove
    added_alone: set[str] = set()
    removed_all: set[str] = set()
    added_all: set[str] = set()
    for c in changes:
        before, after = templates(c.removed), templates(c.added)
        removed_all |= before
        added_all |= after
        if not c.added:
            removed_alone |= before
        elif not c.removed:
            added_alone |= after
    out = []
    for c in changes:
        if len(c.removed) + len(c.added) > _SMALL:
            out.append(c)
            continue
        before, after = templates(c.removed), templates(c.added)
        if not c.added:
            kept = not before.isdisjoint(added_all)
        elif not c.removed:
            kept = not after.isdisjoint(removed_all)
        else:
            kept = not (
                before.isdisjoint(after)
                and before.isdisjoint(added_alone)
                and after.isdisjoint(removed_alone)
            )
        if kept:
            out.append(c)
    return tuple(out)


#: Changes of at most this many lines (both sides) may be edits that ``_renamable`` leaves out.
_SMALL = 4


def _outcome(final: LineDiff, renamed: int, parse: Callable[[str], _Line]) -> StructuralDiff:
    removed_defs = {d for c in final.changes for line in c.removed for d in parse(line).defs}
    added_defs = {d for c in final.changes for line in c.added for d in parse(line).defs}
    both = removed_defs & added_defs
    return StructuralDiff(
        final,
        renamed,
        tuple(sorted(added_defs - both)),
        tuple(sorted(removed_defs - both)),
        tuple(sorted(both)),
    )


class _Lines(Protocol):
    """A text's lines by number: a list, or only the computations that are read."""

    def __getitem__(self, number: int, /) -> str: ...

    def __len__(self) -> int: ...


class _Side:
    """One text's changed lines, parsed, with each defined value's signature on demand."""

    def __init__(self, lines: _Lines, changed: list[int], parse: Callable[[str], _Line]) -> None:
        self.lines = lines
        self.parse = parse
        self.parsed: dict[int, _Line] = {}
        self.where: dict[str, tuple[int, int]] = {}  # name -> (line, position among defs)
        self.scope: dict[str, str | None] = {}  # name -> the HLO computation it is in
        self.order: list[str] = []  # defined names, in text order
        #: Names already paired with the other side: their signature is the pair's, so
        #: signatures of what uses them agree across the two texts.
        self.anchors: dict[str, str] = {}
        current: str | None = None
        where, scope, order, parsed = self.where, self.scope, self.order, self.parsed
        for i in changed:
            text = lines[i]
            line = parsed[i] = parse(text)
            header = line.header
            for k, name in enumerate(line.defs):
                if name not in where:
                    where[name] = (i, k)
                    scope[name] = None if header else current
                    order.append(name)
            if header:
                current = line.defs[0]
            elif text == "}":
                current = None
        self._memo: dict[str, int] = {}
        self._users_memo: dict[str, int] = {}
        self._users: dict[str, list[str]] | None = None
        self._scopes: dict[str | None, list[str]] | None = None

    def names_in(self, scope: str | None) -> list[str]:
        """Names defined in computation ``scope`` (``None``: at the top level), in text order."""
        if self._scopes is None:
            self._scopes = {}
            for name in self.order:
                self._scopes.setdefault(self.scope[name], []).append(name)
        return self._scopes.get(scope, [])

    def is_computation(self, name: str) -> bool:
        """Whether ``name`` is an HLO computation."""
        i, _ = self.where[name]
        return self.parsed[i].header

    def is_entry(self, name: str) -> bool:
        """Whether ``name`` is the ENTRY computation."""
        i, _ = self.where[name]
        return self.lines[i].startswith("ENTRY ")

    def template(self, name: str) -> str:
        """The template of the line defining ``name``."""
        i, _ = self.where[name]
        return self.parsed[i].template

    def users_signature(self, name: str) -> int:
        """The signatures of the values that use ``name``: tells equal values apart by use."""
        if name in self._users_memo:  # asked by two tie-breaks, for every value of a bucket
            return self._users_memo[name]
        if self._users is None:
            self._users = {}
            for line in self.parsed.values():
                for ref in line.refs:
                    self._users.setdefault(ref, []).extend(line.defs)
        value = hash(tuple(sorted(self.signature(u) for u in self._users.get(name, ()))))
        self._users_memo[name] = value
        return value

    def signature(self, name: str, depth: int = 0) -> int:
        """Its line's template and its operands' signatures (an anchor's is its name)."""
        memo = self._memo.get(name)
        if memo is not None:
            return memo
        paired = self.anchors.get(name)
        if paired is not None:
            return hash(("paired", paired))
        if name not in self.where or depth > 200:
            return hash(("anchor", name))
        self._memo[name] = hash(("cycle", name))  # a loop body reached again: cut there
        i, k = self.where[name]
        line = self.parsed[i]
        # Each distinct operand once: a line may name one symbol hundreds of times (every
        # argument of a 96-layer ``@main`` has its ``@empty_mesh`` sharding), and each of its
        # hundreds of values is signed by that line: quadratic, one call each. The same
        # calls in the same order, the repeats answered from their first.
        signed = {r: self.signature(r, depth + 1) for r in dict.fromkeys(line.refs) if r != name}
        refs = [signed[r] for r in line.refs if r != name]
        extra = self._body_root(i, line)
        if extra is not None:
            refs.append(self.signature(extra, depth + 1))
        refs += [self.signature(r, depth + 1) for r in self._continued_refs(i, line)]
        value = hash((line.template, k, tuple(refs)))
        self._memo[name] = value
        return value

    def _continued_refs(self, i: int, line: _Line) -> list[str]:
        """A jaxpr equation printed over lines (``= dot_general[`` ... ``] e c``): its operands."""
        if not line.template.endswith("["):
            return []
        for j in range(i + 1, min(i + 40, len(self.lines))):
            if self.lines[j].lstrip().startswith("]"):
                return self.parse(self.lines[j]).refs
        return []

    def _body_root(self, i: int, line: _Line) -> str | None:
        """For an HLO computation header, the name of its ROOT instruction."""
        if not line.header or not line.template.endswith("{"):
            return None
        for j in range(i + 1, len(self.lines)):
            text = self.lines[j]
            if text.startswith("}"):
                return None
            if text.lstrip().startswith("ROOT %"):
                match = _HLO_INSTRUCTION.match(text)
                return match.group(1) if match else None
        return None


def _is_header(text: str) -> bool:
    return _HLO_COMPUTATION.match(text) is not None


def _match(
    old: _Side, new: _Side, changes: tuple[Change, ...], parse: Callable[[str], _Line]
) -> dict[str, str]:
    """Old name -> new name for values that are the same value, found in three passes.

    First the runs of changed lines that differ in names alone (a renumbered layer): their
    values pair in order, at the cost of reading each line once. Then, by content, the
    values whose signatures agree, pairs found so far serving as anchors: this survives any
    reordering. HLO computations are matched first, then the instructions of each pair of
    computations among themselves. Last, what is left pairs by name, then in order of the
    lines that read alike (a changed operand changes the signature of everything after it,
    but not the shape of the lines).
    """
    mapping = _renamed_runs(old, new, changes, parse)
    for before, after in mapping.items():
        old.anchors[before] = after
        new.anchors[after] = after
    taken = set(mapping.values())
    top_old = [n for n in old.names_in(None) if n not in mapping]
    top_new = [n for n in new.names_in(None) if n not in taken]
    mapping.update(_pair(old, new, top_old, top_new))
    computations = [(o, n) for o, n in mapping.items() if old.is_computation(o)]
    taken = set(mapping.values())
    left_old = [c for c in top_old if old.is_computation(c) and c not in mapping]
    left_new = [c for c in top_new if new.is_computation(c) and c not in taken]
    computations += _pair_leftovers(old, new, left_old, left_new)
    for before, after in computations:
        mapping[before] = after
    taken = set(mapping.values())
    scopes: list[tuple[str | None, str | None]] = [(None, None), *computations]
    for scope_old, scope_new in scopes:
        olds = [n for n in old.names_in(scope_old) if n not in mapping]
        news = [n for n in new.names_in(scope_new) if n not in taken]
        if not olds or not news:
            continue
        found = _pair(old, new, olds, news)
        olds = [n for n in olds if n not in found]
        news = [n for n in news if n not in found.values()]
        found.update(_by_shape(old, new, olds, news))
        mapping.update(found)
        taken.update(found.values())
    return mapping


def _renamed_runs(
    old: _Side, new: _Side, changes: tuple[Change, ...], parse: Callable[[str], _Line]
) -> dict[str, str]:
    """Values of changes whose removed and added lines read the same but for names."""
    mapping: dict[str, str] = {}
    for change in changes:
        if len(change.removed) != len(change.added) or not change.removed:
            continue
        removed = [parse(line) for line in change.removed]
        added = [parse(line) for line in change.added]
        if any(r.template != a.template for r, a in zip(removed, added, strict=True)):
            continue
        for r, a in zip(removed, added, strict=True):
            for before, after in zip(r.defs, a.defs, strict=False):
                mapping.setdefault(before, after)
    taken: set[str] = set()
    out: dict[str, str] = {}
    for before, after in mapping.items():  # one old value per new name
        if after not in taken and before in old.where and after in new.where:
            out[before] = after
            taken.add(after)
    return out


def _by_shape(old: _Side, new: _Side, olds: list[str], news: list[str]) -> dict[str, str]:
    """What signatures left: same name on both sides, then lines alike in shape, in order."""
    mapping: dict[str, str] = {}
    new_set = set(news)
    for name in olds:
        if name in new_set and old.template(name) == new.template(name):
            mapping[name] = name
    olds = [n for n in olds if n not in mapping]
    news = [n for n in news if n not in mapping.values()]
    if not olds or not news or len(olds) * len(news) > _SHAPE_LIMIT:
        return mapping
    a = [old.template(n) for n in olds]
    b = [new.template(n) for n in news]
    import difflib  # here: most diffs never pair names by shape

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for x, y, n in matcher.get_matching_blocks():
        for k in range(n):
            mapping[olds[x + k]] = news[y + k]
    return mapping


# Leftover values aligned by the shape of their lines up to this many pairs (difflib is
# quadratic in the worst case).
_SHAPE_LIMIT = 25_000_000


def _pair(old: _Side, new: _Side, olds_all: list[str], news_all: list[str]) -> dict[str, str]:
    """Names of ``olds_all`` and ``news_all`` with equal signatures, ties broken in turn."""
    buckets: dict[int, tuple[list[str], list[str]]] = {}
    for name in olds_all:
        buckets.setdefault(old.signature(name), ([], []))[0].append(name)
    for name in news_all:
        buckets.setdefault(new.signature(name), ([], []))[1].append(name)
    mapping: dict[str, str] = {}
    for olds, news in buckets.values():
        if not olds or not news:
            continue
        if len(olds) == 1 and len(news) == 1:  # the common case: one value each
            mapping[olds[0]] = news[0]
            continue
        # Equal values (two ``constant(0.5)``): pair those whose users and names agree, then
        # users, then names, then the rest in text order.
        for key in _TIE_BREAKS:
            if not olds or not news:
                break
            groups: dict[object, tuple[list[str], list[str]]] = {}
            for name in olds:
                groups.setdefault(key(old, name), ([], []))[0].append(name)
            for name in news:
                groups.setdefault(key(new, name), ([], []))[1].append(name)
            for first, second in groups.values():
                for before, after in zip(first, second, strict=False):
                    mapping[before] = after
            taken = set(mapping.values())
            olds = [n for n in olds if n not in mapping]
            news = [n for n in news if n not in taken]
    return mapping


def _pair_leftovers(
    old: _Side, new: _Side, olds: list[str], news: list[str]
) -> list[tuple[str, str]]:
    """Changed computations: ENTRY with ENTRY, then same name, then by content (the most
    instructions in common), then same header, then order."""
    pairs: list[tuple[str, str]] = []
    for key in _LEFTOVER_KEYS:
        if key is None:
            found = _by_common_content(old, new, olds, news)
        else:
            found = []
            groups: dict[object, tuple[list[str], list[str]]] = {}
            for name in olds:
                groups.setdefault(key(old, name), ([], []))[0].append(name)
            for name in news:
                groups.setdefault(key(new, name), ([], []))[1].append(name)
            for first, second in groups.values():
                found += list(zip(first, second, strict=False))
        pairs += found
        done_old, done_new = {p[0] for p in found}, {p[1] for p in found}
        olds = [n for n in olds if n not in done_old]
        news = [n for n in news if n not in done_new]
    return pairs


def _by_common_content(
    old: _Side, new: _Side, olds: list[str], news: list[str]
) -> list[tuple[str, str]]:
    """Computations paired greedily by the instruction signatures they share (a constant
    changed in one of several similar fused computations leaves the rest of it alike)."""
    if not olds or not news or len(olds) * len(news) > 10_000:
        return []
    old_sets = {c: Counter(old.signature(n) for n in old.names_in(c)) for c in olds}
    new_sets = {c: Counter(new.signature(n) for n in new.names_in(c)) for c in news}
    scored = []
    for o in olds:
        for n in news:
            common = sum((old_sets[o] & new_sets[n]).values())
            if common:
                scored.append((-common, old.where[o], new.where[n], o, n))
    scored.sort()
    pairs: list[tuple[str, str]] = []
    used_old: set[str] = set()
    used_new: set[str] = set()
    for _, _, _, o, n in scored:
        if o not in used_old and n not in used_new:
            pairs.append((o, n))
            used_old.add(o)
            used_new.add(n)
    return pairs


_TIE_BREAKS: tuple[Callable[[_Side, str], object], ...] = (
    lambda side, name: (side.users_signature(name), name),
    lambda side, name: side.users_signature(name),
    lambda side, name: name,
    lambda side, name: 0,
)
_LEFTOVER_KEYS: tuple[Callable[[_Side, str], object] | None, ...] = (
    lambda side, name: side.is_entry(name),
    lambda side, name: name,
    None,
    lambda side, name: side.template(name),
    lambda side, name: 0,
)


def _bijective(
    stage: str, names: Callable[[], TextNames], old: _Side, paired: dict[str, str]
) -> tuple[dict[str, str], int]:
    """The renaming applied to the old text: ``paired`` cut down to a bijection, so the old
    side shown is always the old program under other names (never two values under one name).

    A name the old text keeps (not paired, or used where the old text is not rewritten:
    names defined elsewhere, and HLO computations called from unchanged lines) must not be
    another value's new name: the pairing that would take it is dropped where the name must
    stay, else the kept value moves to a fresh name. Returns the renaming (names that change)
    and how many of its names are fresh.
    """
    universe: set[str] = set()
    for line in old.parsed.values():
        universe.update(line.defs)
        universe.update(line.refs)
    pinned = {n for n in universe if n not in old.where}
    renaming = {o: n for o, n in paired.items() if o != n and o not in pinned}
    elsewhere: Container[str] = ()  # names defined where the old text is not rewritten
    if stage == "hlo":
        computations = {o for o in renaming if old.is_computation(o)}
        if computations:
            pinned |= _called_elsewhere(names().callees, old, computations)
        renaming = {o: n for o, n in renaming.items() if o not in pinned}
        # A new name that an unchanged line of the old text defines stays that line's; and
        # fresh names must be new to the whole text.
        if any(n not in universe or n not in renaming for n in renaming.values()):
            elsewhere = names().defined()
    targets: set[str] = set()
    for before, after in list(renaming.items()):  # one old value per new name
        if after in targets:
            del renaming[before]
        else:
            targets.add(after)
    fresh: set[str] = set()

    def kept(name: str) -> bool:  # an old name nothing renames
        return (name in universe or name in elsewhere) and name not in renaming

    def used(name: str) -> bool:
        return name in universe or name in elsewhere or name in targets

    changed = True
    while changed:
        changed = False
        for before, after in list(renaming.items()):
            if before not in renaming or not kept(after):
                continue  # its new name is no old name that stays
            if after in pinned or after not in old.where:  # defined where no line changes
                del renaming[before]  # ``before`` keeps its name; that may clash in turn
                targets.discard(after)
            else:
                renaming[after] = _fresh(stage, after, used)
                targets.add(renaming[after])
                fresh.add(after)
            changed = True
    return renaming, len(fresh)


def _fresh(stage: str, name: str, used: Callable[[str], bool]) -> str:
    """A name for a value whose own name another value takes, used nowhere in the old text
    (``used``: whether a name is the old text's, or one the renaming gives)."""
    for k in range(1, 1_000_000):
        if stage == "jaxpr":  # letters only; JAX starts no longer name, and no primitive, so
            candidate = "aa" + name + "a" * (k - 1)
        elif stage == "hlo":
            candidate = f"{name}.old{k if k > 1 else ''}"
        else:
            candidate = f"{name}_old{k if k > 1 else ''}"
        if not used(candidate) and candidate not in _KEYWORDS:
            return candidate
    raise AssertionError("no fresh name")  # pragma: no cover - a million names are used


def _called_elsewhere(total: Counter[str], old: _Side, computations: set[str]) -> set[str]:
    """Those of ``computations`` that a line the diff does not rewrite calls (``total``: how
    often the whole text names each callee)."""
    inside: Counter[str] = Counter()
    for i in old.parsed:
        line = old.lines[i]
        if "=%" in line:
            inside.update(callee_counts(line, computations))
    return {name for name in computations if total[name] > inside[name]}


# --- HLO ---------------------------------------------------------------------------------


def _parse_hlo(text: str) -> _Line:
    # One split gives both the names (odd items) and the template (the rest joined by "%"):
    # this runs on every line of a changed computation.
    parts = _HLO_NAME.split(text.strip())
    if len(parts) < 3:
        return _Line([], [], parts[0])
    template = "%".join(parts[::2])
    first, after = parts[0], parts[2]
    names = parts[1::2]
    if first in ("", "ROOT ") and after.startswith(" = "):  # %name = ... (an instruction)
        return _Line([names[0]], [n for n in names if n != names[0]], template)
    if first in ("", "ENTRY ") and after.startswith(" (") and text[:1] in ("%", "E"):
        refs = [n for n in names if n != names[0]]
        params = [m.group(1) or m.group(2) for m in _HLO_HEADER_PARAM.finditer(text)]
        refs += [p for p in params if p]
        return _Line([names[0]], refs, _HLO_HEADER_PARAM.sub("_", template))
    return _Line([], names, template)


def _rename_hlo(text: str, mapping: dict[str, str]) -> str:
    # The names are the odd items of a split: renamed in one comprehension, not one Python
    # callback per name (this runs on every line of a changed computation).
    parts = _HLO_NAME.split(text)
    if len(parts) > 1:
        get = mapping.get
        parts[1::2] = ["%" + get(name, name) for name in parts[1::2]]
        text = "".join(parts)
    if text[:1] in "%E" and _HLO_COMPUTATION.match(text):
        text = _HLO_HEADER_PARAM.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)
    return text


# --- StableHLO ---------------------------------------------------------------------------


def _parse_mlir(text: str) -> _Line:
    defs = [d for m in _MLIR_DEF.finditer(text) for d in m.groups() if d]
    defined = set(defs)  # a function's header defines hundreds (its arguments)
    refs = [n for n in _MLIR_NAME.findall(text) if n not in defined]
    return _Line(defs, refs, _MLIR_NAME.sub(lambda m: m.group(1)[0], text.strip()))


def _rename_mlir(text: str, mapping: dict[str, str]) -> str:
    return _MLIR_NAME.sub(lambda m: mapping.get(m.group(1), m.group(1)), text)


# --- jaxpr -------------------------------------------------------------------------------

_KEYWORDS = frozenset({"lambda", "let", "in"})


def _jaxpr_spans(text: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str]]]:
    """Spans of the binders and of the used names (the primitive's own name excluded)."""
    binders = [
        (m.start(1), m.end(1), m.group(1))
        for m in _JAXPR_BINDER.finditer(text)
        if m.group(1) not in _KEYWORDS
    ]
    primitive = _JAXPR_PRIMITIVE.search(text)
    skip = primitive.start(1) if primitive else -1
    taken = {start for start, _, _ in binders}
    uses = [
        (m.start(1), m.end(1), m.group(1))
        for m in _JAXPR_WORD.finditer(text)
        if m.start(1) != skip and m.start(1) not in taken and m.group(1) not in _KEYWORDS
    ]
    return binders, uses


def _parse_jaxpr(text: str) -> _Line:
    binders, uses = _jaxpr_spans(text)
    template = _replace_spans(text, binders + uses, lambda _: "_").strip()
    return _Line([n for *_, n in binders], [n for *_, n in uses], template)


def _rename_jaxpr(text: str, mapping: dict[str, str]) -> str:
    binders, uses = _jaxpr_spans(text)
    return _replace_spans(text, binders + uses, lambda name: mapping.get(name, name))


def _replace_spans(text: str, spans: list[tuple[int, int, str]], new: Callable[[str], str]) -> str:
    out, at = [], 0
    for start, end, name in sorted(spans):
        out += [text[at:start], new(name)]
        at = end
    return "".join(out) + text[at:]


_DIALECTS: dict[str, tuple[Callable[[str], _Line], Callable[[str, dict[str, str]], str]]] = {
    "hlo": (_parse_hlo, _rename_hlo),
    "stablehlo": (_parse_mlir, _rename_mlir),
    "jaxpr": (_parse_jaxpr, _rename_jaxpr),
}
