"""A unified diff that stays linear on 100k-line HLO texts with scattered changes (no jax).

``difflib`` is quadratic on texts with many repeated lines, and a per-line Python loop over
200,000 equal lines costs more than GNU diff's whole run. This matcher walks both texts with
galloping slice comparisons (done in C) while they agree; at a difference it looks for the
nearest point where they agree again within a window that doubles until it finds one, and
lets ``difflib`` align the small changed region exactly. The result is always a correct diff;
it is minimal within each changed region but, like patience diff, not globally.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# Changed regions whose line-count product is at most this are aligned by difflib.
_DIFFLIB_LIMIT = 250_000
# Lines that must agree after a difference before the texts count as back in step.
_RESYNC_RUN = 3
_FIRST_WINDOW = 64
_MAX_CANDIDATES = 32

Block = tuple[int, int, int]  # (start in a, start in b, length) of equal lines


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` hunk: 1-based starts and lengths, and its lines with their ``' '/-/+`` mark."""

    a_start: int
    a_len: int
    b_start: int
    b_len: int
    lines: tuple[tuple[str, str], ...]


def matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[Block]:
    """Runs of equal lines, increasing in both sequences, ending with ``(len(a), len(b), 0)``."""
    found: list[Block] = []
    i = j = 0
    len_a, len_b = len(a), len(b)
    while True:
        run = _common_run(a, b, i, j)
        if run:
            found.append((i, j, run))
            i, j = i + run, j + run
        if i == len_a or j == len_b:
            break
        i2, j2 = _resync(a, b, i, j)
        found.extend(_align_region(a, b, i, i2, j, j2))
        i, j = i2, j2
    return _merge(found, len_a, len_b)


def unified_hunks(a: Sequence[str], b: Sequence[str], context: int = 3) -> Iterator[Hunk]:
    """Hunks of a unified diff of ``a`` and ``b`` with ``context`` lines around each change."""
    blocks = matching_blocks(a, b)
    changes: list[tuple[int, int, int, int]] = []  # (a_lo, a_hi, b_lo, b_hi) of changed runs
    i = j = 0
    for bi, bj, n in blocks:
        if i < bi or j < bj:
            changes.append((i, bi, j, bj))
        i, j = bi + n, bj + n
    group: list[tuple[int, int, int, int]] = []
    for change in changes:
        if group and change[0] - group[-1][1] > 2 * context:
            yield _hunk(a, b, group, context)
            group = []
        group.append(change)
    if group:
        yield _hunk(a, b, group, context)


def unified_diff(
    a: Sequence[str], b: Sequence[str], a_name: str, b_name: str, context: int = 3
) -> Iterator[str]:
    """Lines (with newlines) of a ``diff -u`` style diff; nothing when the texts are equal."""
    first = True
    for hunk in unified_hunks(a, b, context):
        if first:
            yield f"--- {a_name}\n+++ {b_name}\n"
            first = False
        yield f"@@ -{_range(hunk.a_start, hunk.a_len)} +{_range(hunk.b_start, hunk.b_len)} @@\n"
        for mark, line in hunk.lines:
            yield f"{mark}{line}\n"


def _hunk(
    a: Sequence[str], b: Sequence[str], group: list[tuple[int, int, int, int]], context: int
) -> Hunk:
    a_lo = max(0, group[0][0] - context)
    b_lo = max(0, group[0][2] - context)
    a_hi = min(len(a), group[-1][1] + context)
    b_hi = min(len(b), group[-1][3] + context)
    lines: list[tuple[str, str]] = []
    i = a_lo
    for c_alo, c_ahi, c_blo, c_bhi in group:
        lines.extend((" ", line) for line in a[i:c_alo])
        lines.extend(("-", line) for line in a[c_alo:c_ahi])
        lines.extend(("+", line) for line in b[c_blo:c_bhi])
        i = c_ahi
    lines.extend((" ", line) for line in a[i:a_hi])
    return Hunk(a_lo + 1, a_hi - a_lo, b_lo + 1, b_hi - b_lo, tuple(lines))


def _range(start: int, length: int) -> str:
    # diff -u prints an empty range as the line before it.
    if length == 0:
        return f"{start - 1},0"
    return str(start) if length == 1 else f"{start},{length}"


def _common_run(a: Sequence[str], b: Sequence[str], i: int, j: int) -> int:
    """How many lines agree from ``a[i]``/``b[j]`` on: gallop, then bisect, on slices."""
    limit = min(len(a) - i, len(b) - j)
    good, step = 0, 1
    while good < limit:  # gallop: double the probe while it agrees
        n = min(step, limit - good)
        if a[i + good : i + good + n] != b[j + good : j + good + n]:
            break
        good += n
        step *= 2
    else:
        return good
    bad = min(good + step, limit)  # a[i+bad-1] differs somewhere in (good, bad]
    while bad - good > 1:
        mid = (good + bad) // 2
        if a[i + good : i + mid] == b[j + good : j + mid]:
            good = mid
        else:
            bad = mid
    return good


def _resync(a: Sequence[str], b: Sequence[str], i: int, j: int) -> tuple[int, int]:
    """The nearest ``(i2, j2)`` past a difference where both texts agree again.

    Nearest means the smallest ``(i2 - i) + (j2 - j)`` found within a window that doubles
    until a point is found or both texts are exhausted.
    """
    window = _FIRST_WINDOW
    while True:
        a_hi, b_hi = min(len(a), i + window), min(len(b), j + window)
        best = _nearest_agreement(a, b, i, a_hi, j, b_hi)
        if best is not None:
            return best
        if a_hi == len(a) and b_hi == len(b):
            return len(a), len(b)
        window *= 4


def _nearest_agreement(
    a: Sequence[str], b: Sequence[str], i: int, a_hi: int, j: int, b_hi: int
) -> tuple[int, int] | None:
    run = _RESYNC_RUN
    first_b: dict[str, list[int]] = {}
    for q in range(j, b_hi):
        first_b.setdefault(b[q], []).append(q)
    best: tuple[int, int] | None = None
    best_cost = (a_hi - i) + (b_hi - j) + 1
    for p in range(i, a_hi):
        if p - i >= best_cost:
            break
        # Only the nearest occurrences: a line like "}" must not make this quadratic.
        for q in first_b.get(a[p], ())[:_MAX_CANDIDATES]:
            cost = (p - i) + (q - j)
            if cost >= best_cost:
                break
            # The texts agree again if the next lines match too (or the texts end together).
            n = min(run, len(a) - p, len(b) - q)
            if a[p : p + n] == b[q : q + n] and (n == run or (p + n == len(a) and q + n == len(b))):
                best, best_cost = (p, q), cost
                break
    return best


def _align_region(
    a: Sequence[str], b: Sequence[str], alo: int, ahi: int, blo: int, bhi: int
) -> list[Block]:
    """Equal lines inside a changed region, exactly when it is small, else none."""
    if alo == ahi or blo == bhi or (ahi - alo) * (bhi - blo) > _DIFFLIB_LIMIT:
        return []
    matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
    return [(alo + x, blo + y, n) for x, y, n in matcher.get_matching_blocks() if n]


def _merge(found: list[Block], len_a: int, len_b: int) -> list[Block]:
    merged: list[Block] = []
    for i, j, n in sorted(found):
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            pi, pj, pn = merged[-1]
            merged[-1] = (pi, pj, pn + n)
        else:
            merged.append((i, j, n))
    merged.append((len_a, len_b, 0))
    return merged
