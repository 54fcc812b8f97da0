"""How HLO text spells names: the patterns the structural diff reads them with, and the names
of a whole old text that a renaming must respect (no jax import)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Container
from functools import cache
from typing import NamedTuple, cast

#: ``%name = ...`` (an instruction) and ``%name (p: f32[]) -> ... {`` (a computation).
INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = ")
COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(")
NAME = re.compile(r"%([\w.\-]+)")
_ASCII_NAME = re.compile(NAME.pattern, re.ASCII)


def names_in(text: str) -> re.Pattern[str]:
    """``NAME`` for ``text``: compiled with ``re.ASCII`` where the text is ASCII (as XLA
    prints it), the same matches found about a quarter faster (``\\w`` tests fewer classes)."""
    return _ASCII_NAME if text.isascii() else NAME


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

    ``listed``, where given, are the defined names as found (a list): the process that read
    them looks names up there without splitting the joined string again. It is not pickled
    (a child sends the joined string only).
    """

    def __init__(
        self,
        joined_defined: str,
        callees: Counter[str],
        defined: Container[str] | None = None,
        listed: list[str] | None = None,
    ) -> None:
        self.joined_defined = joined_defined
        self.callees = callees
        self._defined = defined
        self._listed = listed

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_listed": None}

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
        if self._listed is not None:
            return names.intersection(self._listed)
        return names.intersection(self.joined_defined.split("\n")) if self.joined_defined else set()


class NamesAnswer(NamedTuple):
    """What a bulk renaming asks of the whole old text's names (``answer_about``): which of
    its new names the text defines, and how often the text names each of its renamed
    computations as a callee."""

    defined: frozenset[str]
    callees: dict[str, int]


def answer_about(names: TextNames, question: object) -> NamesAnswer:
    """The answer to ``(names asked, computations asked)`` from the text's ``names``: asked of
    the child that read them, which sends this instead of all 150,000 names."""
    wanted, computations = cast(tuple[frozenset[str], frozenset[str]], question)
    callees = {name: names.callees[name] for name in computations if name in names.callees}
    return NamesAnswer(frozenset(names.defined_among(set(wanted))), callees)


def text_names(text: str, computations: str | None = None) -> TextNames:
    """The whole text's defined names and callee counts: a few scans of a large text, run
    beside the matching (``structural_diff``'s ``aside``).

    ``computations``, where given, are the names of the text's computations, one per line,
    as counting it found them (``hloscan.headers``: the same header lines as ``HEADS``
    finds in XLA's text), so the text is not searched for them again.
    """
    instruction, root, heads, _, _ = _patterns_for(text)
    # Joined as found (a name twice is no matter): the parent makes the set, once.
    defined = instruction.findall(text)
    defined += root.findall(text)
    if computations is None:
        defined += heads.findall(text)
    elif computations:
        defined += computations.split("\n")
    return TextNames("\n".join(defined), callee_counts(text, None), None, defined)


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
