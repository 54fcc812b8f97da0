"""Checks that a rendered report fits its width and shows every identifier whole.

``assert_readable(text, width, identifiers)`` fails when

* a line is wider than ``width``;
* an identifier (op name, shape, argument path) is split across two or more lines: the test
  follows a word at the end of one line into the words that continue it on the next lines,
  under its start (a left-justified folded cell) or its end (a right-justified one);
* an identifier is cut with ``…``: at its end or start (``f32[12…``, ``['Lay…``) always, and
  in its middle unless it is one of ``cuttable`` (argument paths may read
  ``params['Lay…_0']['scale']``; op names and shapes may not).

``assert_fits_json(text, width, doc)`` takes the identifiers from the JSON document of the
same run: op names, fusions and shapes must be whole, argument paths may be cut in the middle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: A word: anything between spaces and the vertical rules of a table.
_WORD = re.compile(r"[^\s│┃║]+")
#: Identifiers shorter than this are too common as plain words to check.
_SHORTEST = 4
#: Fewer characters than this before or after ``…`` are not taken for a cut identifier.
_SHORTEST_PIECE = 3

Word = tuple[int, int, str]  # start column, end column, text


def assert_readable(
    text: str, width: int, identifiers: Iterable[str], cuttable: Iterable[str] = ()
) -> None:
    """``text`` has no line over ``width`` and splits or cuts none of ``identifiers``.

    Args:
        text: The rendered output, as printed (no colour codes).
        width: The console width it was rendered at.
        identifiers: Names that must read whole wherever they appear.
        cuttable: Identifiers that may be cut in the middle with ``…`` (argument paths).
    """
    lines = text.splitlines()
    too_wide = [(i, line) for i, line in enumerate(lines) if len(line) > width]
    assert not too_wide, f"{len(too_wide)} lines over {width} columns, e.g. {too_wide[0]!r}"
    wanted = {i for i in identifiers if len(i) >= _SHORTEST}
    if not wanted:
        return
    longest = max(len(i) for i in wanted)
    words = [[(m.start(), m.end(), m.group()) for m in _WORD.finditer(line)] for line in lines]
    for row, line_words in enumerate(words):
        for word in line_words:
            _follow(words, row, [word], wanted, longest)
            _check_cut(word[2], wanted, set(cuttable))


def assert_fits_json(text: str, width: int, doc: Any) -> None:
    """:func:`assert_readable` with the identifiers of ``doc``, the same run's JSON document."""
    names, paths = json_identifiers(doc), json_paths(doc)
    assert_readable(text, width, names | paths, cuttable=paths)


def _follow(
    words: list[list[Word]], row: int, chain: list[Word], wanted: set[str], longest: int
) -> None:
    """Fail when an identifier starts in the chain's first word and ends in its last."""
    if len(chain) > 1:
        pieces = [w[2] for w in chain]
        joined = "".join(pieces)
        first, last_start = len(pieces[0]), len(joined) - len(pieces[-1])
        for ident in wanted:
            at = joined.find(ident)
            while at != -1:
                if at < first and at + len(ident) > last_start:
                    raise AssertionError(f"{ident!r} split across lines: {' / '.join(pieces)}")
                at = joined.find(ident, at + 1)
    # An identifier reaching a further line holds every word after the first whole.
    middle = "".join(w[2] for w in chain[1:])
    if row + 1 >= len(words) or len(middle) >= longest:
        return
    if middle and not any(middle in ident for ident in wanted):
        return
    start, end, _ = chain[-1]
    for below in words[row + 1]:
        if below[0] == start or below[1] == end:
            _follow(words, row + 1, [*chain, below], wanted, longest)


def _check_cut(word: str, wanted: set[str], cuttable: set[str]) -> None:
    if "…" not in word:
        return
    head, _, tail = word.partition("…")
    if len(head) < _SHORTEST_PIECE and len(tail) < _SHORTEST_PIECE:
        return  # "…", "… 3 more …": a marker, not a cut name
    for ident in wanted:
        if len(head) + len(tail) >= len(ident):
            continue
        if not (ident.startswith(head) and ident.endswith(tail)):
            continue
        if not head or not tail:
            raise AssertionError(f"{ident!r} cut at an end: {word!r}")
        if ident not in cuttable:
            raise AssertionError(f"{ident!r} may not be cut, but reads {word!r}")


def json_identifiers(doc: Any) -> set[str]:
    """Op names, fusions, shapes and argument paths found anywhere in a report's JSON."""
    found: set[str] = set()
    for key, value in _items(doc):
        if key in ("name", "op", "path", "shape", "fusion") and isinstance(value, str):
            found.add(value.split("{")[0])
        if key == "shape" and isinstance(value, list):
            found.add("[" + ",".join(str(d) for d in value) + "]")
    return {f for f in found if f and " " not in f}


def json_paths(doc: Any) -> set[str]:
    """The argument paths (``path`` fields) of a report's JSON: these may be cut in the middle."""
    return {v for k, v in _items(doc) if k == "path" and isinstance(v, str) and " " not in v}


def _items(node: Any) -> Iterable[tuple[str, Any]]:
    """Every ``(key, value)`` of every object in a JSON document, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _items(value)
    elif isinstance(node, list):
        for item in node:
            yield from _items(item)
