"""Checks that a rendered report fits its width and shows every identifier whole.

``assert_readable(text, width, identifiers)`` fails when a line is wider than ``width`` or when
an identifier (op name, shape, argument path) was split across two lines: the test finds the
start of an identifier at the end of one line with its rest at the start of the next, which is
how a folded table cell looks. An identifier cut in the middle with ``…`` on purpose is whole
by this check (it never appears split).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: A word: anything between spaces and the vertical rules of a table.
_WORD = re.compile(r"[^\s│┃║]+")


def assert_readable(text: str, width: int, identifiers: Iterable[str]) -> None:
    """``text`` has no line over ``width`` and splits none of ``identifiers``."""
    lines = text.splitlines()
    too_wide = [(i, line) for i, line in enumerate(lines) if len(line) > width]
    assert not too_wide, f"{len(too_wide)} lines over {width} columns, e.g. {too_wide[0]!r}"
    wanted = {i for i in identifiers if len(i) >= 4}
    words = [[(m.start(), m.end(), m.group()) for m in _WORD.finditer(line)] for line in lines]
    for above, below in zip(words, words[1:], strict=False):
        starts = {start: word for start, _, word in above}
        ends = {end: word for _, end, word in above}
        for start, end, word in below:
            # A folded cell continues under its own start (left-justified) or end (right).
            for top in {starts.get(start), ends.get(end)} - {None}:
                assert top is not None
                for ident in wanted:
                    joined = top + word
                    if ident in joined and ident not in top and ident not in word:
                        raise AssertionError(f"{ident!r} split across lines: {top!r} / {word!r}")


def json_identifiers(doc: Any) -> set[str]:
    """Op names, shapes and argument paths found anywhere in a report's JSON document."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("name", "op", "path", "shape", "fusion") and isinstance(value, str):
                    found.add(value.split("{")[0])
                if key == "shape" and isinstance(value, list):
                    found.add("[" + ",".join(str(d) for d in value) + "]")
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(doc)
    return {f for f in found if f and " " not in f}
