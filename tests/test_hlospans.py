"""The HLO computations around changes, found by offsets (textdiff.hlospans), on real output.

The structural diff reads the computations holding a change without splitting the whole text;
these must be the lines that walking the split text up and down from each changed line finds.
"""

from __future__ import annotations

import random

import pytest

from conftest import sample
from jaxinspect.inputs.spec import load_spec
from jaxinspect.inputs.target import load_target
from jaxinspect.snapshot.capture import capture_snapshot
from jaxinspect.textdiff.hlospans import ComputationLines
from jaxinspect.textdiff.linediff import diff_lines


@pytest.fixture(scope="module")
def hlo() -> str:
    snapshot = capture_snapshot(
        load_target(f"{sample('transformer.py')}:block"), load_spec(sample("transformer.yaml"))
    )
    return snapshot.text("hlo") or ""


def walked(lines: list[str], touched: list[int]) -> set[int]:
    """The computations holding ``touched``, found line by line: up to the header (or the
    line after the previous ``}``), down to the closing ``}``; a ``}`` alone is itself."""
    wanted: set[int] = set()
    last = len(lines) - 1
    for i in touched:
        if i > last:
            continue
        start = i
        while start > 0 and not lines[start].startswith(("%", "ENTRY %")) and lines[start] != "}":
            start -= 1
        if lines[start] == "}" and start != i:
            start += 1
        end = i
        while end < last and lines[end] != "}":
            end += 1
        wanted.update(range(start, end + 1))
    return wanted


def touched(changes, side: str) -> list[int]:  # type: ignore[no-untyped-def]
    out: list[int] = []
    for c in changes:
        lo, hi = (c.a_lo, c.a_hi) if side == "a" else (c.b_lo, c.b_hi)
        out.extend(range(lo, hi) if hi > lo else (max(lo - 1, 0), lo))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_computations_found_by_offsets_are_those_found_by_lines(hlo: str, seed: int) -> None:
    rng = random.Random(seed)
    old = hlo.split("\n")[:-1] if hlo.endswith("\n") else hlo.split("\n")
    new = list(old)
    for _ in range(rng.randint(1, 4)):  # edits, deletions and insertions anywhere, "}" too
        at = rng.randrange(len(new) + 1)
        roll = rng.random()
        if roll < 0.4 and at < len(new):
            new[at] += " /*edited*/"
        elif roll < 0.7 and at < len(new):
            del new[at]
        else:
            new.insert(at, "  %inserted = f32[] constant(1)")
    plain = diff_lines("\n".join(old) + "\n", "\n".join(new) + "\n")
    for side, text, lines in (("a", plain.a, old), ("b", plain.b, new)):
        held = ComputationLines(text, plain.changes, side)
        assert all(held[i] == lines[i] for i in held.numbers())
        # The same lines but for ones that hold no name: blank ones and the module's first
        # line (the offsets take those before a header), and a closing line that a change
        # touches alone.
        blank_or_end = {i for i, line in enumerate(lines) if line in ("", "}")}
        blank_or_end |= {i for i, line in enumerate(lines) if line.startswith("HloModule ")}
        assert (
            set(held.numbers()) - blank_or_end
            == walked(lines, touched(plain.changes, side)) - blank_or_end
        )
        assert held.rewritten({}) == text
        first = min(held.numbers(), default=None)
        if first is not None:
            assert held.rewritten({first: "X"}).split("\n")[first] == "X"
