"""The HLO computations around changed lines, found with string searches (no jax import).

Splitting a 200,000-line text into lines costs 40 ms; the structural diff needs only the
computations that hold a change. Each is found from a change's offsets: back to the line after
the previous computation's closing ``}``, on to its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jaxinspect.textdiff.linematch import Change

_END = "\n}\n"  # a computation's closing line, with the newlines around it


def computation_span(text: str, first: int, last_end: int) -> tuple[int, int]:
    """Start and end offsets of the computations holding ``text[first:last_end]`` (whole
    lines): from the line after the closing ``}`` before it to its own closing line."""
    start = text.rfind(_END, 0, first)
    start = 0 if start < 0 else start + len(_END)
    end = text.find(_END, max(last_end - 1, 0))
    return start, len(text) if end < 0 else end + len(_END)


def computation_spans(
    text: str, ranges: Sequence[tuple[int, int]]
) -> list[tuple[int, int, list[int]]]:
    """The computations holding ``ranges`` (whole lines ``text[first:last_end]``, in order):
    start and end offsets, merged where they touch, each with the indices of the ranges in it.

    A range inside the computation found last (a long ENTRY holds many changes) is searched
    again only if its lines run past that computation's end.
    """
    spans: list[tuple[int, int, list[int]]] = []
    for k, (first, last_end) in enumerate(ranges):
        if spans and first < spans[-1][1]:
            start, end, members = spans[-1]
            members.append(k)
            if last_end > end:
                spans[-1] = (start, computation_span(text, first, last_end)[1], members)
            continue
        start, end = computation_span(text, first, last_end)
        if spans and start < spans[-1][1]:
            begin, stop, members = spans[-1]
            members.append(k)
            spans[-1] = (begin, max(stop, end), members)
        else:
            spans.append((start, end, [k]))
    return spans


class ComputationLines(dict[int, str]):
    """The lines of the computations holding some changes on one side, by line number.

    Reads like the list of the text's lines for the lines it holds (a dict: a line is found
    without a Python call); a line outside them reads as a computation's end (``}``), which
    stops any scan of a computation's body there, and its length is a bound past the last
    line held.
    """

    def __init__(self, text: str, changes: Iterable[Change], side: str) -> None:
        super().__init__()
        self.text = text
        #: (start offset, end offset, number of the first line) of each span, in order.
        self.spans: list[tuple[int, int, int]] = []
        ranges = _touched_ranges(text, changes, side)
        for start, end, members in computation_spans(text, [(f, e) for f, e, _ in ranges]):
            first, _, first_line = ranges[members[0]]
            self.spans.append((start, end, first_line - text.count("\n", start, first)))
        for start, end, number in self.spans:
            lines = text[start:end].split("\n")[:-1]
            self.update(zip(range(number, number + len(lines)), lines, strict=True))
        # A bound, not the text's count of lines (which would cost a scan of it): no line
        # past it is held, and those read as "}".
        self._bound = max(self.keys()) + 2 if dict.__len__(self) else 0

    def __missing__(self, number: int) -> str:
        return "}"

    def __len__(self) -> int:
        return self._bound

    def numbers(self) -> list[int]:
        """The numbers of the lines held, in order."""
        return sorted(self.keys())

    def rewritten(self, rewrite: dict[int, str]) -> str:
        """The text with the held lines numbered in ``rewrite`` replaced."""
        pieces: list[str] = []
        at = 0
        for start, end, number in self.spans:
            lines = self.text[start:end].split("\n")
            for k in range(len(lines) - 1):
                new = rewrite.get(number + k)
                if new is not None:
                    lines[k] = new
            pieces += [self.text[at:start], "\n".join(lines)]
            at = end
        pieces.append(self.text[at:])
        return "".join(pieces)


def _touched_ranges(text: str, changes: Iterable[Change], side: str) -> list[tuple[int, int, int]]:
    """For each change, the offsets of the lines it touches on this side and the number of
    the first: a change empty on this side touches the lines around where the other side's
    lines go."""
    out = []
    for c in changes:
        if side == "a":
            lo, hi, pos, end = c.a_lo, c.a_hi, c.a_pos, c.a_end
        else:
            lo, hi, pos, end = c.b_lo, c.b_hi, c.b_pos, c.b_end
        if hi > lo:
            first, last_end, number = pos, end, lo
        else:
            first = text.rfind("\n", 0, pos - 1) + 1 if lo > 0 else pos
            after = text.find("\n", pos)
            last_end, number = len(text) if after < 0 else after + 1, max(lo - 1, 0)
        # A closing line alone belongs to no computation to read: the one it closes is not
        # read for it, nor the next one.
        while first < last_end and text.startswith("}\n", first):
            first, number = first + 2, number + 1
        while (
            last_end - first >= 2
            and text.startswith("}\n", last_end - 2)
            and (last_end == 2 or text[last_end - 3] == "\n")
        ):
            last_end -= 2
        if first < last_end:
            out.append((first, last_end, number))
    out.sort()
    return out
