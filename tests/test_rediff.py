"""The line diff of a text rewritten in stretches, derived from the line diff before it
(``textdiff.rediff``): always a correct diff of the rewritten text, placed where it lies."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxinspect.textdiff.linediff import LineDiff, diff_lines
from jaxinspect.textdiff.rediff import Stretch, rediffed

lines_of = st.lists(st.sampled_from(["a", "b", "}", "", "x = 1", "y = 2"]), max_size=40)


def _text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def _rewritten(old: list[str], seed: int) -> tuple[str, list[Stretch]]:
    """``old`` with a few stretches of lines rewritten (each line kept, its text changed)."""
    rng = random.Random(seed)
    count = min(len(old) + 1, 2 * rng.randint(0, 3)) // 2 * 2  # an even number of cuts
    cuts = sorted(rng.sample(range(len(old) + 1), count))
    out: list[str] = []
    stretches: list[Stretch] = []
    a_at = t_at = 0
    done = 0
    for lo, hi in zip(cuts[::2], cuts[1::2], strict=True):
        before = _text(old[done:lo])
        out.append(before)
        a_at, t_at = a_at + len(before), t_at + len(before)
        piece = _text([rng.choice([line.upper(), line + "!", line]) for line in old[lo:hi]])
        out.append(piece)
        a_len = len(_text(old[lo:hi]))
        stretches.append((a_at, a_at + a_len, t_at, t_at + len(piece)))
        a_at, t_at = a_at + a_len, t_at + len(piece)
        done = hi
    out.append(_text(old[done:]))
    return "".join(out), stretches


def _applies(diff: LineDiff) -> None:
    """Every change lies where it says, in order, and applying them all gives ``diff.b``."""
    a_lines, b_lines = diff.a.split("\n")[:-1], diff.b.split("\n")[:-1]
    out: list[str] = []
    at = 0
    for change in diff.changes:
        assert change.a_lo >= at
        out += a_lines[at : change.a_lo]
        assert change.b_lo == len(out)
        assert tuple(a_lines[change.a_lo : change.a_hi]) == change.removed
        assert tuple(b_lines[change.b_lo : change.b_hi]) == change.added
        assert diff.a[change.a_pos : change.a_end] == _text(list(change.removed))
        assert diff.b[change.b_pos :].startswith(_text(list(change.added)))
        out += change.added
        at = change.a_hi
    out += a_lines[at:]
    assert out == b_lines


@settings(max_examples=400, deadline=None)
@given(lines_of, lines_of, st.integers(0, 2**32 - 1))
def test_rediffed_is_a_diff_of_the_rewritten_text(
    old: list[str], new: list[str], seed: int
) -> None:
    plain = diff_lines(_text(old), _text(new))
    text, stretches = _rewritten(old, seed)
    result = rediffed(plain, text, stretches)
    assert (result.a, result.b) == (text, plain.b)
    _applies(result)
    if not stretches:  # nothing rewritten: the old diff, as it stood
        assert result.changes == plain.changes


def test_a_stretch_renamed_to_the_new_lines_leaves_only_the_changes_around_it() -> None:
    # The old text's second computation rewritten to read as the new one's (a renaming
    # undone); an edit elsewhere stays as the old diff found it.
    old = ["%c.1 {", "  %x.1 = f32[] add", "}", "", "%c.2 {", "  %x.2 = f32[] mul", "}", "", "e"]
    new = ["%c.1 {", "  %x.1 = f32[] sub", "}", "", "%d.2 {", "  %y.2 = f32[] mul", "}", "", "e"]
    plain = diff_lines(_text(old), _text(new))
    start = len(_text(old[:4]))
    end = start + len(_text(old[4:7]))
    text = _text(old[:4]) + _text(new[4:7]) + _text(old[7:])
    result = rediffed(plain, text, [(start, end, start, start + len(_text(new[4:7])))])
    _applies(result)
    assert result.changes == diff_lines(text, plain.b).changes
    assert [(c.removed, c.added) for c in result.changes] == [
        (("  %x.1 = f32[] add",), ("  %x.1 = f32[] sub",))
    ]
