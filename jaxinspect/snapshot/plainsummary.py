"""A diff's console summary as plain text, exactly as rich lays it out, without importing rich.

A piped ``jaxinspect diff`` (CI's case) gets no colour, so rich only lays the summary out:
wraps its lines at the console's width and pads its two tables. Importing and running rich
for that took about as long as GNU ``diff`` takes on a 200,000-line file. This module lays
out the same blocks (``text.diff_summary_blocks``) the way ``snapshot.console`` and
``renderers.fit`` have rich do it, in the cases where that is simple: every character one
cell wide and printable, every word shorter than the width, every table on one line per row
at its natural width. Anything else returns ``None`` and the caller uses rich; the tests
compare the two on both sides of every limit.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from jaxinspect.snapshot.text import SummaryLine, SummaryTable, diff_summary_blocks

if TYPE_CHECKING:
    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict

#: Characters besides printable ASCII that the summary prints, each one cell wide.
_NARROW = frozenset("Δ±")
#: A word as rich's wrapping sees it: leading spaces, the word, its trailing spaces.
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")
#: rich's SIMPLE_HEAD box: the rule under the header row.
_RULE = "─"


def plain_diff_summary(diff: SnapshotDiff, verdict: Verdict | None, width: int) -> str | None:
    """The summary ``render_diff_summary`` prints on a colourless ``width``-column console,
    or ``None`` where only rich can say."""
    out: list[str] = []
    for block in diff_summary_blocks(diff, verdict):
        lines = _line(block.text, width) if isinstance(block, SummaryLine) else _table(block, width)
        if lines is None:
            return None
        out += lines
    return "".join(f"{line}\n" for line in out)


def _simple(text: str) -> bool:
    """Whether every character of ``text`` is one cell wide and printed as it is."""
    return (text.isascii() and text.isprintable()) or all(
        c in _NARROW or (c.isascii() and c.isprintable()) for c in text
    )


def _line(text: str, width: int) -> list[str] | None:
    """``text`` word-wrapped as rich's ``Text.wrap`` does (``rich._wrap.divide_line``)."""
    if not _simple(text):
        return None
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            return None  # rich folds such a word across lines
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    lines = [text[i:j] for i, j in zip([0, *breaks], [*breaks, len(text)], strict=True)]
    return [_fit(line, width) for line in lines]


def _fit(line: str, width: int) -> str:
    """A wrapped line cut to ``width``: trailing spaces first, as rich's ``rstrip_end``."""
    excess = len(line) - width
    if excess > 0:
        spaces = _TRAILING_SPACE.search(line)
        if spaces is not None:
            line = line[: len(line) - min(len(spaces.group()), excess)]
    return line[:width]


def _table(table: SummaryTable, width: int) -> list[str] | None:
    """The title, then the table as ``FitTable`` has rich draw it when every cell fits."""
    cells = [table.headers, *table.rows]
    if any(not _simple(c) or c != c.strip() for row in cells for c in row):
        return None  # rich would justify what the cell's own spaces leave
    widths = [max(max(len(row[i]) for row in cells), 1) for i in range(len(table.headers))]
    # Each column is padded by a space on either side, and columns are one space apart.
    if sum(widths) + 3 * len(widths) - 1 > width:
        return None  # FitTable drops or wraps columns
    title = _line(table.title, width)
    if title is None:
        return None

    def row(cells: tuple[str, ...]) -> str:
        return " ".join(
            f" {c.ljust(w) if i < table.left else c.rjust(w)} "
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    rule = _RULE * (sum(widths) + 3 * len(widths) - 1)
    return [*title, row(table.headers), rule, *(row(r) for r in table.rows)]
