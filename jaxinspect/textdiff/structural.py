"""A diff that matches names by structure, so a renaming is never a change (no jax import).

One added instruction renumbers XLA's names after it (``%add.3`` becomes ``%add.4`` in every
later line), and a jaxpr's variables are lettered in order, so a line diff of two compiles
shows dozens of changed lines for one changed operation. Here, before the line diff, the
values defined on changed lines are matched across the two texts by structure, in the spirit
of XLA's ``hlo_diff``: a value's signature is its defining line with every name blanked out,
and the signatures of the values it uses, recursively (values on unchanged lines are anchors,
the same on both sides). Values with equal signatures are the same value under another name;
the old text is rewritten with the new names, and only then diffed line by line. What is left
are the lines whose meaning changed, shown with the new names, plus a count of renamings.

Only changed lines are parsed, so the cost follows the size of the change, not of the text.
Each dialect's parsing reads the printed text; the tests run it on real compiler output.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from jaxinspect.textdiff.linediff import LineDiff, diff_lines

#: HLO: ``%name = ...`` (an instruction) and ``%name (p: f32[]) -> ... {`` (a computation).
_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = ")
_HLO_COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(")
_HLO_NAME = re.compile(r"%([\w.\-]+)")
_HLO_HEADER_PARAM = re.compile(r"(?<=[(,] )([\w.\-]+)(?=: )|(?<=\()([\w.\-]+)(?=: )")
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


@dataclass
class _Line:
    defs: list[str]
    refs: list[str]
    template: str


def structural_diff(stage: str, plain: LineDiff) -> StructuralDiff:
    """``plain`` (a line diff) redone with the old text's names rewritten where values match."""
    if not plain.changes:
        return StructuralDiff(plain, 0, (), (), ())
    dialect, rename = _DIALECTS.get(stage, (None, None))
    if dialect is None or rename is None:
        return StructuralDiff(plain, 0, (), (), ())
    parse = _memoized(dialect)
    if not _could_be_renamed(plain, parse):
        return _outcome(plain, 0, parse)
    a_lines, b_lines = plain.a.split("\n"), plain.b.split("\n")
    a_changed = [i for c in plain.changes for i in range(c.a_lo, c.a_hi)]
    b_changed = [i for c in plain.changes for i in range(c.b_lo, c.b_hi)]
    # A line equal on both sides can still name another value (``%mul.6`` is another
    # broadcast after a renumbering), so every line of a computation holding a change is
    # parsed; names from elsewhere (other computations) are anchors.
    old = _Side(a_lines, _blocks(stage, a_lines, a_changed), parse)
    new = _Side(b_lines, _blocks(stage, b_lines, b_changed), parse)
    mapping = _match(old, new)
    for i in sorted(old.parsed):
        a_lines[i] = rename(a_lines[i], mapping)
    renamed_text = "\n".join(a_lines)
    final = diff_lines(renamed_text, plain.b)
    return _outcome(final, sum(1 for k, v in mapping.items() if k != v), parse)


def _memoized(parse: Callable[[str], _Line]) -> Callable[[str], _Line]:
    """``parse`` once per distinct line: both sides share the unchanged lines of a changed
    computation, and the removed and added lines are read again for the outcome."""
    seen: dict[str, _Line] = {}

    def parsed(text: str) -> _Line:
        line = seen.get(text)
        if line is None:
            line = seen[text] = parse(text)
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


def _blocks(stage: str, lines: list[str], changed: list[int]) -> list[int]:
    """``changed`` widened to the whole computations (HLO) or text (other stages) they are in."""
    if stage != "hlo":
        return list(range(len(lines)))
    wanted: set[int] = set()
    for i in changed:
        if i in wanted:
            continue
        start = i
        while start > 0 and not _HLO_COMPUTATION.match(lines[start]) and lines[start] != "}":
            start -= 1
        if lines[start] == "}" and start != i:
            start += 1
        end = i
        while end < len(lines) - 1 and lines[end] != "}":
            end += 1
        wanted.update(range(start, end + 1))
    return sorted(wanted)


class _Side:
    """One text's changed lines, parsed, with each defined value's signature on demand."""

    def __init__(self, lines: list[str], changed: list[int], parse: Callable[[str], _Line]) -> None:
        self.lines = lines
        self.parse = parse
        self.parsed: dict[int, _Line] = {}
        self.where: dict[str, tuple[int, int]] = {}  # name -> (line, position among defs)
        self.scope: dict[str, str | None] = {}  # name -> the HLO computation it is in
        current: str | None = None
        for i in changed:
            line = self._line(i)
            header = _HLO_COMPUTATION.match(lines[i]) is not None
            for k, name in enumerate(line.defs):
                self.where.setdefault(name, (i, k))
                self.scope.setdefault(name, None if header else current)
            if header and line.defs:
                current = line.defs[0]
            elif lines[i] == "}":
                current = None
        self._memo: dict[str, int] = {}
        self._users_memo: dict[str, int] = {}
        self._users: dict[str, list[str]] | None = None
        self._scopes: dict[str | None, list[str]] | None = None

    def _line(self, i: int) -> _Line:
        if i not in self.parsed:
            self.parsed[i] = self.parse(self.lines[i])
        return self.parsed[i]

    def names_in(self, scope: str | None) -> list[str]:
        """Names defined in computation ``scope`` (``None``: at the top level), in text order."""
        if self._scopes is None:
            self._scopes = {}
            for name in self.order():
                self._scopes.setdefault(self.scope.get(name), []).append(name)
        return self._scopes.get(scope, [])

    def is_computation(self, name: str) -> bool:
        """Whether ``name`` is an HLO computation."""
        i, _ = self.where[name]
        return _HLO_COMPUTATION.match(self.lines[i]) is not None

    def is_entry(self, name: str) -> bool:
        """Whether ``name`` is the ENTRY computation."""
        i, _ = self.where[name]
        return self.lines[i].startswith("ENTRY ")

    def header_template(self, name: str) -> str:
        """The template of the line defining ``name``."""
        i, _ = self.where[name]
        return self._line(i).template

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

    def order(self) -> list[str]:
        """Defined names, in text order."""
        return sorted(self.where, key=lambda n: self.where[n])

    def signature(self, name: str, depth: int = 0) -> int:
        """Its line's template and its operands' signatures (an anchor's is its name)."""
        if name in self._memo:
            return self._memo[name]
        if name not in self.where or depth > 200:
            return hash(("anchor", name))
        self._memo[name] = hash(("cycle", name))  # a loop body reached again: cut there
        i, k = self.where[name]
        line = self._line(i)
        refs = [self.signature(r, depth + 1) for r in line.refs if r != name]
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
        if not line.template.endswith("{") or not _HLO_COMPUTATION.match(self.lines[i]):
            return None
        for j in range(i + 1, len(self.lines)):
            text = self.lines[j]
            if text.startswith("}"):
                return None
            if text.lstrip().startswith("ROOT %"):
                match = _HLO_INSTRUCTION.match(text)
                return match.group(1) if match else None
        return None


def _match(old: _Side, new: _Side) -> dict[str, str]:
    """Old name -> new name for values whose signatures agree.

    HLO computations are matched first; then the instructions of each pair of computations
    among themselves (XLA may swap the numbers of two identical fusions, and their parameters
    share names), pairing what is left over by header, name and order.
    """
    mapping = _pair(old, new, old.names_in(None), new.names_in(None))
    computations = [(o, n) for o, n in mapping.items() if old.is_computation(o)]
    left_old = [c for c in old.names_in(None) if old.is_computation(c) and c not in mapping]
    taken = set(mapping.values())
    left_new = [c for c in new.names_in(None) if new.is_computation(c) and c not in taken]
    computations += _pair_leftovers(old, new, left_old, left_new)
    for before, after in computations:
        mapping.update(_pair(old, new, old.names_in(before), new.names_in(after)))
    return mapping


def _pair(old: _Side, new: _Side, olds_all: list[str], news_all: list[str]) -> dict[str, str]:
    """Names of ``olds_all`` and ``news_all`` with equal signatures, ties broken in turn."""
    buckets: dict[int, tuple[list[str], list[str]]] = {}
    for name in olds_all:
        buckets.setdefault(old.signature(name), ([], []))[0].append(name)
    for name in news_all:
        buckets.setdefault(new.signature(name), ([], []))[1].append(name)
    mapping: dict[str, str] = {}
    for olds, news in buckets.values():
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
    """Changed computations: ENTRY with ENTRY, then same name, then same header, then order."""
    pairs: list[tuple[str, str]] = []
    for key in _LEFTOVER_KEYS:
        groups: dict[object, tuple[list[str], list[str]]] = {}
        for name in olds:
            groups.setdefault(key(old, name), ([], []))[0].append(name)
        for name in news:
            groups.setdefault(key(new, name), ([], []))[1].append(name)
        for first, second in groups.values():
            pairs += list(zip(first, second, strict=False))
        done_old, done_new = {p[0] for p in pairs}, {p[1] for p in pairs}
        olds = [n for n in olds if n not in done_old]
        news = [n for n in news if n not in done_new]
    return pairs


_TIE_BREAKS: tuple[Callable[[_Side, str], object], ...] = (
    lambda side, name: (side.users_signature(name), name),
    lambda side, name: side.users_signature(name),
    lambda side, name: name,
    lambda side, name: 0,
)
_LEFTOVER_KEYS: tuple[Callable[[_Side, str], object], ...] = (
    lambda side, name: side.is_entry(name),
    lambda side, name: name,
    lambda side, name: side.header_template(name),
    lambda side, name: 0,
)


# --- HLO ---------------------------------------------------------------------------------


def _parse_hlo(text: str) -> _Line:
    defs: list[str] = []
    instruction = _HLO_INSTRUCTION.match(text)
    computation = None if instruction else _HLO_COMPUTATION.match(text)
    if instruction:
        defs.append(instruction.group(1))
    elif computation:
        defs.append(computation.group(1))
    refs = [n for n in _HLO_NAME.findall(text) if n not in defs]
    template = _HLO_NAME.sub("%", text.strip())
    if computation:
        params = [m.group(1) or m.group(2) for m in _HLO_HEADER_PARAM.finditer(text)]
        refs += [p for p in params if p]
        template = _HLO_HEADER_PARAM.sub("_", template)
    return _Line(defs, refs, template)


def _rename_hlo(text: str, mapping: dict[str, str]) -> str:
    text = _HLO_NAME.sub(lambda m: "%" + mapping.get(m.group(1), m.group(1)), text)
    if _HLO_COMPUTATION.match(text):
        text = _HLO_HEADER_PARAM.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)
    return text


# --- StableHLO ---------------------------------------------------------------------------


def _parse_mlir(text: str) -> _Line:
    defs = [d for m in _MLIR_DEF.finditer(text) for d in m.groups() if d]
    refs = [n for n in _MLIR_NAME.findall(text) if n not in defs]
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
        if m.start(1) not in (skip, *taken) and m.group(1) not in _KEYWORDS
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
