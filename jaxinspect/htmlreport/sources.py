"""The user-code frames of each instruction's stack, and the source lines around them.

The graph folds by the user functions that made an instruction (outermost first), and the
details panel shows the user's line in context with the frames that led to it. Both come
from the module's stack-frame tables, each frame chain walked once per distinct frame id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxinspect.xla.hlotext import HloInstr, HloText
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.sourcemap import FrameTable, SourceLocation, shown_path

#: Lines shown above and below the user's line.
AROUND = 2


@dataclass(frozen=True, slots=True)
class SourceContext:
    """A user's source line and the lines around it, read when the report was built."""

    file: str  # relative to the current folder when under it, as in the op's source
    line: int
    first: int  # the number of ``lines[0]``
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class UserStacks:
    """Each instruction's user-code frames, innermost first (by instruction name)."""

    chains: dict[str, tuple[SourceLocation, ...]]

    def scopes(self, instrs: Sequence[HloInstr]) -> dict[str, tuple[str, ...]]:
        """The user functions that made each instruction, outermost first."""
        return {
            x.name: tuple(loc.function for loc in reversed(self.chains[x.name]))
            for x in instrs
            if x.name in self.chains
        }

    @property
    def labels(self) -> dict[str, tuple[str, ...]]:
        """``file:line function`` of each frame, innermost first."""
        # Thousands of instructions share a few hundred stacks (one per jaxpr equation of a
        # layer): label each distinct stack once (relpath is slow enough to show at 96 layers).
        memo: dict[tuple[SourceLocation, ...], tuple[str, ...]] = {}
        out = {}
        for name, chain in self.chains.items():
            labels = memo.get(chain)
            if labels is None:
                labels = memo[chain] = tuple(map(frame_label, chain))
            out[name] = labels
        return out

    def frames_used(self) -> set[SourceLocation]:
        """Every distinct frame of every stack."""
        return {loc for chain in self.chains.values() for loc in chain}


def user_stacks(hlo: HloText, frames: FrameTable, user: UserCode) -> UserStacks:
    """The user-code frames of every instruction of ``hlo`` that names a stack frame."""
    memo: dict[int, tuple[SourceLocation, ...]] = {}
    parents = {fid: (loc, parent) for fid, loc, parent in frames.frames}
    chains: dict[str, tuple[SourceLocation, ...]] = {}
    for comp in hlo.computations:
        for instr in comp.instructions:
            fid = instr.stack_frame_id
            if fid is None:
                continue
            if fid not in memo:
                memo[fid] = _user_chain(fid, parents, user)
            if memo[fid]:
                chains[instr.name] = memo[fid]
    return UserStacks(chains)


def _user_chain(
    fid: int, parents: dict[int, tuple[SourceLocation, int]], user: UserCode
) -> tuple[SourceLocation, ...]:
    out: list[SourceLocation] = []
    seen: set[int] = set()
    while fid in parents and fid not in seen:
        seen.add(fid)
        loc, fid = parents[fid]
        if user.owns(loc.file):
            out.append(loc)
    return tuple(out)


def frame_label(loc: SourceLocation) -> str:
    """``file:line function``, the file as ``shown_path`` writes it."""
    return f"{shown_path(loc.file)}:{loc.line} {loc.function}"


def source_contexts(frames: Iterable[SourceLocation]) -> dict[str, SourceContext]:
    """By ``file:line``: each frame's line with ``AROUND`` lines either side (files that
    cannot be read are left out: the panel then shows the bare ``file:line``)."""
    texts: dict[str, list[str] | None] = {}
    out: dict[str, SourceContext] = {}
    for loc in frames:
        if loc.file not in texts:
            try:
                with open(loc.file, encoding="utf-8", errors="replace") as f:
                    texts[loc.file] = f.read().splitlines()
            except OSError:
                texts[loc.file] = None
        lines = texts[loc.file]
        if lines is None or not 1 <= loc.line <= len(lines):
            continue
        first = max(1, loc.line - AROUND)
        shown = shown_path(loc.file)
        out[f"{shown}:{loc.line}"] = SourceContext(
            shown, loc.line, first, tuple(lines[first - 1 : loc.line + AROUND])
        )
    return out
