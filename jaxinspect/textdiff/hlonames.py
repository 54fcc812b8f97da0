"""How HLO text spells names: the patterns the structural diff reads them with, and the names
of a whole old text that a renaming must respect (no jax import)."""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Container
from functools import cache

#: ``%name = ...`` (an instruction) and ``%name (p: f32[]) -> ... {`` (a computation).
INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = ")
COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(")
NAME = re.compile(r"%([\w.\-]+)")
#: A parameter's name in a computation's header, where it is bare: ``(p.1: f32[], q: ...)``.
HEADER_PARAM = re.compile(r"(?<=[(,] )([\w.\-]+)(?=: )|(?<=\()([\w.\-]+)(?=: )")

#: Where an HLO line defines a name: an instruction, or a computation's header (each pattern
#: starts with a literal, which the regex engine finds fast).
DEFINES = re.compile(r"\n  (?:ROOT )?%([\w.\-]+) = ")
HEADS = re.compile(r"\n(?:ENTRY )?%([\w.\-]+) \(")

#: An HLO computation named as a callee: ``calls=%c``, ``to_apply=%c``, ``body=%c``, ... and
#: in lists, ``branch_computations={%a, %b}`` (two patterns: each starts with a literal, which
#: the regex engine finds fast).
CALLEE = re.compile(r"=%([\w.\-]+)")
CALLEES = re.compile(r"computations=\{([^}]*)")


class TextNames:
    """What the renaming needs of the whole old HLO text: the names its lines define (one per
    line, kept as one string: a forked child sends it back in a few milliseconds), and how
    often each computation is named as a callee.

    ``hashes``, where given, are ``hash(name)`` of each defined name (``array("q")`` bytes),
    computed by the process that read the text: a forked child shares this process's string
    hashing, so a few thousand names are looked up among 150,000 without making a string of
    each (``defined_among``). ``stamp`` is that process's ``hash`` of a fixed string: hashes
    made under another seed are not used.
    """

    def __init__(
        self,
        joined_defined: str,
        callees: Counter[str],
        defined: Container[str] | None = None,
        hashes: bytes | None = None,
        stamp: int | None = None,
    ) -> None:
        self.joined_defined = joined_defined
        self.callees = callees
        self._defined = defined
        self._hashes, self._stamp = hashes, stamp

    def defined(self) -> Container[str]:
        """The names that lines of the text define (made once, when first asked for)."""
        if self._defined is None:
            self._defined = set(self.joined_defined.split("\n")) if self.joined_defined else set()
        return self._defined

    def defined_among(self, names: set[str]) -> set[str]:
        """Those of ``names`` that lines of the text define: for a few thousand names, a
        fraction of the cost of making the set of all (a large text defines 150,000)."""
        if self._defined is not None:
            return {name for name in names if name in self._defined}
        if not self.joined_defined:
            return set()
        if self._hashes is None or self._stamp != hash_stamp():
            return names.intersection(self.joined_defined.split("\n"))
        by_hash: dict[int, list[str]] = {}
        for name in names:
            by_hash.setdefault(hash(name), []).append(name)
        hits = by_hash.keys() & array("q", self._hashes)
        maybe = [name for found in hits for name in by_hash[found]]
        if len(maybe) > _CONFIRMED_ONE_BY_ONE:
            return set(maybe).intersection(self.joined_defined.split("\n"))
        lines = f"\n{self.joined_defined}\n" if maybe else ""
        return {name for name in maybe if f"\n{name}\n" in lines}  # equal hashes, or names


#: Names whose hash a defined name has are confirmed one by one (a search of the joined
#: names each) up to this many; more (a clash is rare, and ends a bulk renaming) are looked
#: up in the set of all.
_CONFIRMED_ONE_BY_ONE = 8


def hash_stamp() -> int:
    """This process's ``hash`` of a fixed string: equal in processes whose string hashes are
    (a forked child and its parent)."""
    return hash("jaxinspect.textdiff.hlonames")


def text_names(text: str) -> TextNames:
    """The whole text's defined names and callee counts: a few scans of a large text, run
    beside the matching (``structural_diff``'s ``aside``)."""
    instruction, root, heads, _, _ = _patterns_for(text)
    # Joined as found (a name twice is no matter): the parent makes the set, once.
    defined = instruction.findall(text)
    defined += root.findall(text)
    defined += heads.findall(text)
    hashes = array("q", map(hash, defined)).tobytes()
    return TextNames("\n".join(defined), callee_counts(text, None), None, hashes, hash_stamp())


def _patterns_for(text: str) -> tuple[re.Pattern[str], ...]:
    return _patterns(re.ASCII if text.isascii() else 0)


@cache
def _patterns(flags: int) -> tuple[re.Pattern[str], ...]:
    """``DEFINES`` (as two patterns, each with a longer literal start: the regex engine finds
    those fast), ``HEADS``, ``CALLEE`` and ``CALLEES``, compiled with ``flags``: an ASCII
    text (as XLA prints it) is read with ``re.ASCII``, the same matches, found faster (with
    the split pattern, about 15% less CPU for a 200,000-line text's names)."""
    return (
        re.compile(DEFINES.pattern.replace("(?:ROOT )?", ""), flags),
        re.compile(DEFINES.pattern.replace("(?:ROOT )?", "ROOT "), flags),
        re.compile(HEADS.pattern, flags),
        re.compile(CALLEE.pattern, flags),
        re.compile(CALLEES.pattern, flags),
    )


def callee_counts(text: str, computations: set[str] | None) -> Counter[str]:
    """How often ``text`` names each callee (of ``computations`` only, unless ``None``)."""
    _, _, _, callee, callees = _patterns_for(text)
    names = callee.findall(text)
    for listed in callees.findall(text):
        names += NAME.findall(listed)
    if computations is None:
        return Counter(names)
    return Counter(name for name in names if name in computations)
