"""Fold the entry computation's instructions into groups the graph can collapse.

Two kinds of structure, found in one pass over the printed order:

- **Runs of identical groups** (a model's layers): the longest tandem repeat of instruction
  tokens (opcode, fusion kind, shape, ``op_name``, stack frame: the layer's instructions up
  to their names) becomes one ``repeat`` group, marked ``×count``, whose members are the
  copies. Candidate periods are the distances between successive occurrences of a token,
  so finding one is linear in the sequence for each of a few candidates.
- **Scopes**: consecutive instructions that share a scope component (the user function
  that made them, then JAX's name scopes from ``op_name``) at the current depth. A scope
  every instruction shares (the jitted function itself) makes no group.

Parameters and constants are placed afterwards (graph.py), in the innermost group holding
all their users.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

#: A repeat worth folding covers at least this many instructions.
MIN_REPEAT_COVER = 6
#: Candidate periods tried per sequence (the most frequent token distances).
CANDIDATES = 5


@dataclass(slots=True)
class Group:
    """A group as folding builds it; children are node indices or ``Ref``s to groups."""

    label: str
    kind: str  # "root", "repeat", "member" or "scope"
    parent: int  # index of the enclosing group, -1 for the root
    count: int = 0  # a repeat's members
    children: list[int | Ref] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Ref:
    """A child that is a group (index into the folder's groups)."""

    group: int


class Folder:
    """Folds node indices (in printed order) given each node's token and scope path."""

    def __init__(self, tokens: Sequence[Hashable], scopes: Sequence[tuple[str, ...]]) -> None:
        self.tokens, self.scopes = tokens, scopes
        self.groups: list[Group] = [Group("", "root", -1)]

    def fold_root(self, seq: list[int]) -> None:
        """Fold ``seq`` into the root group (index 0)."""
        self.groups[0].children = self._fold(seq, 0, 0)

    def _new(self, label: str, kind: str, parent: int, count: int = 0) -> int:
        self.groups.append(Group(label, kind, parent, count))
        return len(self.groups) - 1

    def _fold(self, seq: list[int], depth: int, parent: int) -> list[int | Ref]:
        found = best_repeat([self.tokens[i] for i in seq])
        if found is None:
            return self._scopes(seq, depth, parent)
        start, period, count = found
        label = self._common_label(seq[start : start + period], depth)
        repeat = self._new(f"{label} ×{count}", "repeat", parent, count)
        for k in range(count):
            chunk = seq[start + k * period : start + (k + 1) * period]
            member = self._new(f"{label} #{k}", "member", repeat)
            self.groups[member].children = self._fold(chunk, depth, member)
            self.groups[repeat].children.append(Ref(member))
        end = start + period * count
        before = self._fold(seq[:start], depth, parent)
        return [*before, Ref(repeat), *self._fold(seq[end:], depth, parent)]

    def _scopes(self, seq: list[int], depth: int, parent: int) -> list[int | Ref]:
        if not seq or all(len(self.scopes[i]) <= depth for i in seq):
            return list(seq)
        runs = self._runs(seq, depth)
        keyed = [key for key, run in runs if key is not None or not self._unscoped(run)]
        if len(keyed) == 1 and keyed[0] is not None:  # one scope for all: look deeper
            return self._scopes(seq, depth + 1, parent)
        out: list[int | Ref] = []
        for key, run in runs:
            if key is None or len(run) < 2:
                out += run
                continue
            group = self._new(_short(key), "scope", parent)
            self.groups[group].children = self._fold(run, depth + 1, group)
            out.append(Ref(group))
        return out

    def _runs(self, seq: list[int], depth: int) -> list[tuple[str | None, list[int]]]:
        """Consecutive instructions with the same scope at ``depth``. One with no scope at
        all (a copy XLA made) does not end a run that goes on after it."""
        runs: list[tuple[str | None, list[int]]] = []
        for i in seq:
            key = self.scopes[i][depth] if len(self.scopes[i]) > depth else None
            loose = not self.scopes[i] and runs and runs[-1][0] is not None
            if runs and (runs[-1][0] == key or loose):
                runs[-1][1].append(i)
            else:
                runs.append((key, [i]))
        out: list[tuple[str | None, list[int]]] = []
        for key, run in runs:  # what trails a run without its scope is not part of it
            cut = len(run)
            while key is not None and not self.scopes[run[cut - 1]]:
                cut -= 1
            out.append((key, run[:cut]))
            if cut < len(run):
                out.append((None, run[cut:]))
        return out

    def _unscoped(self, run: list[int]) -> bool:
        return all(not self.scopes[i] for i in run)

    def _common_label(self, chunk: list[int], depth: int) -> str:
        """The deepest scope component every instruction of ``chunk`` shares (its function)."""
        first = self.scopes[chunk[0]]
        common = len(first)
        for i in chunk[1:]:
            other = self.scopes[i]
            common = min(common, len(other))
            while common and other[:common] != first[:common]:
                common -= 1
        return _short(first[common - 1]) if common else "repeat"


def _short(function: str) -> str:
    """``train_step.<locals>.loss_of`` -> ``loss_of``: the name as written at its ``def``."""
    return function.rsplit(".<locals>.", 1)[-1]


def best_repeat(tokens: Sequence[Hashable]) -> tuple[int, int, int] | None:
    """The tandem repeat covering most of ``tokens``: (start, period, count), or ``None``.

    For a candidate period ``p``, positions where ``tokens[i] == tokens[i + p]`` in a row from
    ``s`` to ``e`` mean copies of ``tokens[s:s+p]`` cover ``[s, e + p)``. Ties go to the
    shorter period (more, smaller copies).
    """
    last: dict[Hashable, int] = {}
    gaps: Counter[int] = Counter()
    for i, token in enumerate(tokens):
        if token in last:
            gaps[i - last[token]] += 1
        last[token] = i
    best: tuple[int, int, int, int] | None = None  # (cover, -period, start, count)
    for period, _ in gaps.most_common(CANDIDATES):
        run_start = 0
        n = len(tokens)
        for i in range(n - period + 1):
            if i < n - period and tokens[i] == tokens[i + period]:
                continue
            count = (i - run_start + period) // period
            cover = count * period
            ok = count >= 2 and cover >= MIN_REPEAT_COVER and (period > 1 or count >= 4)
            if ok and (best is None or (cover, -period) > best[:2]):
                best = (cover, -period, run_start, count)
            run_start = i + 1
    if best is None:
        return None
    return best[2], -best[1], best[3]
