"""Line matching on whole texts: equal stretches compared in C, lines split only near changes.

Splitting two 200,000-line texts into lists costs more than GNU diff's whole run, and the lines
that agree need never be looked at one by one. This matcher compares the texts as strings with
galloping slice comparisons while they agree, turns the agreed characters into whole lines with
``str.count``/``str.rfind``, and splits only a window of lines after each difference. There it
looks for the nearest point where the texts agree again, in a window that grows until it finds
one, and aligns the small changed region: the lines that agree in place from either end of it
are matched where they stand, and ``difflib`` aligns what lies between. The result is always a
correct diff; like patience diff, it is not minimal globally.

Texts given here end every line with ``"\\n"`` (see ``terminated``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

# Changed regions whose line-count product is at most this are aligned line by line.
_DIFFLIB_LIMIT = 250_000
# Lines that must agree after a difference before the texts count as back in step.
_RESYNC_RUN = 3
_QUICK_WINDOW = 8
_FIRST_WINDOW = 64
_MAX_CANDIDATES = 32
# Characters compared by the first probe of an equal stretch; later probes double up to the
# largest, which keeps each slice in memory the allocator reuses (fresh pages cost more).
_FIRST_PROBE = 256
_LARGEST_PROBE = 1 << 15


@dataclass(frozen=True, slots=True)
class Change:
    """Lines ``a[a_lo:a_hi]`` replaced by ``b[b_lo:b_hi]`` (0-based line numbers).

    ``a_pos``/``a_end`` and ``b_pos`` are where lines ``a_lo``/``a_hi`` and ``b_lo`` start in the
    texts, so callers can read the lines around a change without splitting the whole text.
    """

    a_lo: int
    a_hi: int
    b_lo: int
    b_hi: int
    a_pos: int
    a_end: int
    b_pos: int
    removed: tuple[str, ...]
    added: tuple[str, ...]

    @property
    def b_end(self) -> int:
        """Where line ``b_hi`` starts in the new text (the end of the added lines)."""
        return self.b_pos + sum(map(len, self.added)) + len(self.added)


def line_changes(a: str, b: str) -> list[Change]:
    """The changed line runs between terminated texts ``a`` and ``b``, in order."""
    changes: list[Change] = []
    i = j = pa = pb = 0
    while True:
        span = _equal_lines_span(a, pa, b, pb)
        if span:
            n = a.count("\n", pa, pa + span)
            i, j, pa, pb = i + n, j + n, pa + span, pb + span
        if pa == len(a) or pb == len(b):
            break
        a_lines, b_lines, p, q = _resync(a, pa, b, pb)
        changes.extend(_region_changes(a_lines, b_lines, p, q, (i, j, pa, pb)))
        i, j = i + p, j + q
        pa, pb = pa + _chars(a_lines, p), pb + _chars(b_lines, q)
    if pa < len(a) or pb < len(b):  # one text ended: the rest of the other is the change
        removed, added = split_lines(a[pa:]), split_lines(b[pb:])
        changes.append(
            Change(i, i + len(removed), j, j + len(added), pa, len(a), pb, removed, added)
        )
    return changes


def split_lines(chunk: str) -> tuple[str, ...]:
    """The lines of a terminated piece of text, without their newlines."""
    return tuple(chunk.split("\n")[:-1])


def take_lines(text: str, pos: int, count: int) -> list[str]:
    """Up to ``count`` lines of terminated ``text`` from offset ``pos`` (a line start)."""
    est = 128 * max(count, 1)
    while True:
        end = pos + est
        if end >= len(text):
            return text[pos:].split("\n")[:-1][:count]
        lines = text[pos:end].split("\n", count)
        if len(lines) > count:
            del lines[count:]
            return lines
        est *= 2


def _equal_lines_span(a: str, pa: int, b: str, pb: int) -> int:
    """Characters of the whole lines that agree from ``a[pa:]``/``b[pb:]`` on."""
    same = _common_prefix(a, pa, b, pb)
    return a.rfind("\n", pa, pa + same) + 1 - pa if same else 0


def _common_prefix(a: str, pa: int, b: str, pb: int) -> int:
    """How many characters agree from ``a[pa]``/``b[pb]`` on: gallop, then bisect."""
    limit = min(len(a) - pa, len(b) - pb)
    good, step = 0, _FIRST_PROBE
    while good < limit:  # gallop: double the probe while it agrees
        n = min(step, limit - good)
        if not a.startswith(b[pb + good : pb + good + n], pa + good):
            break
        good += n
        step = min(2 * step, _LARGEST_PROBE)
    else:
        return good
    bad = good + n  # the first difference lies in [good, bad)
    while bad - good > 1:
        mid = (good + bad) // 2
        if a.startswith(b[pb + good : pb + mid], pa + good):
            good = mid
        else:
            bad = mid
    return good


def _resync(a: str, pa: int, b: str, pb: int) -> tuple[list[str], list[str], int, int]:
    """Lines from ``pa``/``pb`` on and the nearest ``(p, q)`` in them where the texts agree.

    Nearest means the smallest ``p + q`` found within a window that doubles until a point
    is found or both texts are exhausted (then ``p``, ``q`` are all their remaining lines).
    The window that finds a point costs most (its lines past the point, which agree, are all
    indexed): doubling, not quadrupling, keeps it at most twice the change (a renamed
    computation of 337 lines is found in a window of 512, not 1,024: 43 -> 34 ms for the
    first line diff of a 200,000-line pair with 30 renamed layers).
    """
    # Most changes are a line or two: look near first. An agreement closer than the quick
    # window (``p + q`` below it) is the nearest in any larger one too, since every nearer
    # point (and every as near with a smaller ``p``) lies inside the quick window.
    a_lines = take_lines(a, pa, _QUICK_WINDOW + _RESYNC_RUN)
    b_lines = take_lines(b, pb, _QUICK_WINDOW + _RESYNC_RUN)
    a_hi, b_hi = min(len(a_lines), _QUICK_WINDOW), min(len(b_lines), _QUICK_WINDOW)
    best = _nearest_agreement(a_lines, b_lines, a_hi, b_hi)
    if best is not None and best[0] + best[1] < _QUICK_WINDOW:
        return a_lines, b_lines, best[0], best[1]
    window = _FIRST_WINDOW
    while True:
        # A few lines past the window let an agreement found at its edge be confirmed.
        a_lines = take_lines(a, pa, window + _RESYNC_RUN)
        b_lines = take_lines(b, pb, window + _RESYNC_RUN)
        a_hi, b_hi = min(len(a_lines), window), min(len(b_lines), window)
        best = _nearest_agreement(a_lines, b_lines, a_hi, b_hi)
        if best is not None:
            return a_lines, b_lines, best[0], best[1]
        if len(a_lines) <= window and len(b_lines) <= window:
            return a_lines, b_lines, len(a_lines), len(b_lines)
        window *= 2


def _nearest_agreement(a: list[str], b: list[str], a_hi: int, b_hi: int) -> tuple[int, int] | None:
    # ``a``/``b`` hold all remaining lines or at least _RESYNC_RUN past the window, so
    # their lengths stand for the texts' ends below. The texts agree again at ``(p, q)`` if
    # ``_RESYNC_RUN`` lines match there (or the texts end together after fewer): the runs
    # are the keys, so each ``p`` costs one look-up, however often its line occurs.
    at: dict[tuple[str, ...], list[int]] = {}
    seen: dict[str, int] = {}
    # A line on one side only cannot start an agreement (most lines of a renamed region).
    a_lines = set(a[:a_hi])
    for q in range(b_hi):
        line = b[q]
        if line not in a_lines:
            continue
        rank = seen.get(line, 0)
        seen[line] = rank + 1
        # Only the nearest occurrences of a line: one like "}" must not make this quadratic.
        if rank < _MAX_CANDIDATES:
            at.setdefault(_run_at(b, q), []).append(q)
    best: tuple[int, int] | None = None
    best_cost = a_hi + b_hi + 1
    for p in range(a_hi):
        if p >= best_cost:
            break
        if a[p] not in seen:
            continue
        found = at.get(_run_at(a, p))
        if found is not None and p + found[0] < best_cost:
            best, best_cost = (p, found[0]), p + found[0]
    return best


_END = ("\n",)  # a run cut short by the text's end (no line holds a newline)


def _run_at(lines: list[str], start: int) -> tuple[str, ...]:
    """The ``_RESYNC_RUN`` lines from ``start``, or those left and the end of the text."""
    stop = start + _RESYNC_RUN
    if stop <= len(lines):
        return tuple(lines[start:stop])
    return (*lines[start:], *_END)


def _region_changes(
    a: list[str], b: list[str], p: int, q: int, origin: tuple[int, int, int, int]
) -> list[Change]:
    """The changes inside the region ``a[:p]``/``b[:q]``, placed at ``origin`` (i, j, pa, pb)."""
    i, j, pa, pb = origin
    a_at = list(accumulate((len(line) + 1 for line in a[:p]), initial=pa))
    b_at = list(accumulate((len(line) + 1 for line in b[:q]), initial=pb))
    out: list[Change] = []
    x = y = 0
    for bx, by, n in [*_aligned(a, b, p, q), (p, q, 0)]:
        if x < bx or y < by:
            removed, added = tuple(a[x:bx]), tuple(b[y:by])
            out.append(
                Change(i + x, i + bx, j + y, j + by, a_at[x], a_at[bx], b_at[y], removed, added)
            )
        x, y = bx + n, by + n
    return out


def _aligned(a: list[str], b: list[str], p: int, q: int) -> list[tuple[int, int, int]]:
    """Equal lines inside a changed region, exactly when it is small, else none."""
    if p == 0 or q == 0 or p * q > _DIFFLIB_LIMIT:
        return []
    a_short, a_at = _squeezed(a[:p], set(b[:q]), "a")
    b_short, b_at = _squeezed(b[:q], set(a[:p]), "b")
    return [(a_at[x], b_at[y], n) for x, y, n in _squeezed_blocks(a_short, b_short)]


@lru_cache(maxsize=256)
def _squeezed_blocks(
    a: tuple[object, ...], b: tuple[object, ...]
) -> tuple[tuple[int, int, int], ...]:
    """The equal runs of squeezed regions: the places where both agree from the start and from
    the end aligned one by one (``_in_step``), difflib's blocks between them.

    Cached: the copies of one repeated computation, renamed alike (every layer after an added
    instruction), squeeze to the same pair, and are aligned once.
    """
    head = _in_step(a, b, range(min(len(a), len(b))))
    tail = _in_step(a, b, range(-1, -min(len(a), len(b)) + head - 1, -1))
    middle: tuple[tuple[int, int, int], ...] = ()
    a_end, b_end = len(a) - tail, len(b) - tail
    if head < a_end and head < b_end:
        import difflib  # here: a plain diff never gets this far, and is spared the import

        matcher = difflib.SequenceMatcher(None, a[head:a_end], b[head:b_end], autojunk=False)
        middle = tuple((head + x, head + y, n) for x, y, n in matcher.get_matching_blocks() if n)
    return _joined_blocks(
        [
            *_diagonal_blocks(a[:head], b[:head]),
            *middle,
            *((a_end + x, b_end + y, n) for x, y, n in _diagonal_blocks(a[a_end:], b[b_end:])),
        ]
    )


def _in_step(a: tuple[object, ...], b: tuple[object, ...], places: range) -> int:
    """How many of ``places`` (from the start, or negative: from the end) hold the same line
    on both sides or a folded run on both (a renamed computation: its lines differ, its ``}``
    and blank lines agree).

    A renamed computation beside an edit (a line or brace added or dropped) is aligned place
    by place up to the edit, from both ends, and difflib is left the few items around it: on
    the whole region, where ``}`` and blank lines recur every few items, difflib walks every
    recurrence for each block it finds (milliseconds a computation), and pairs each
    computation with its neighbour past the edit.
    """
    count = 0
    for k in places:
        x, y = a[k], b[k]
        if not (x == y or (x.__class__ is tuple and y.__class__ is tuple)):
            break
        count += 1
    return count


def _joined_blocks(blocks: list[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    """``blocks`` (in order) with each that continues the one before merged into it."""
    out: list[tuple[int, int, int]] = []
    for x, y, n in blocks:
        if out and out[-1][0] + out[-1][2] == x and out[-1][1] + out[-1][2] == y:
            px, py, pn = out.pop()
            out.append((px, py, pn + n))
        else:
            out.append((x, y, n))
    return tuple(out)


def _diagonal_blocks(
    a: tuple[object, ...], b: tuple[object, ...]
) -> tuple[tuple[int, int, int], ...]:
    """The runs of equal items at the same places of ``a`` and ``b`` (in step: see
    ``_in_step``)."""
    out: list[tuple[int, int, int]] = []
    start = -1
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        if x.__class__ is not tuple and x == y:
            if start < 0:
                start = k
        elif start >= 0:
            out.append((start, start, k - start))
            start = -1
    if start >= 0:
        out.append((start, start, len(a) - start))
    return tuple(out)


def _squeezed(lines: list[str], other: set[str], side: str) -> tuple[tuple[object, ...], list[int]]:
    """``lines`` with each run of lines absent from ``other`` folded into one unmatched token,
    and where each kept item starts in ``lines``.

    A renamed computation is a region of hundreds of lines of which only ``}`` and a few
    name-free lines occur on both sides; difflib's cost grows with the lines it walks. The
    lines that can match keep their order and adjacency, and a folded run (a token equal to
    nothing, unlike any line: ``(side, its place)``) still separates them, so difflib finds
    the same blocks, with the same ties, as on the whole region.
    """
    short: list[object] = []
    at: list[int] = []
    folding = False
    for index, line in enumerate(lines):
        if line in other:
            short.append(line)
            at.append(index)
            folding = False
        elif not folding:
            short.append((side, len(short)))  # a tuple never equals a line (a str)
            at.append(index)
            folding = True
    return tuple(short), at


def _chars(lines: list[str], count: int) -> int:
    """Characters taken by the first ``count`` lines with their newlines."""
    return sum(map(len, lines[:count])) + count
