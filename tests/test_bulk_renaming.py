"""Renamed layers undone in bulk (textdiff.bulkrename), on copies of real compiler output.

A stack of layers printed with per-layer names, some renamed throughout in the new text (what
a renumbering does to a deep model): the structural diff undoes those in bulk, keeps the old
side the old program under a bijective renaming, and falls back to reading lines where the
bulk renaming would not be one.
"""

from __future__ import annotations

import pickle
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from test_snapshot_fastdiff import _edited
from test_structural_renaming import renaming_problems

from conftest import fork_free_python, sample
from jaxinspect.inputs.spec import load_spec
from jaxinspect.inputs.target import load_target
from jaxinspect.snapshot.capture import capture_snapshot
from jaxinspect.textdiff.bulkrename import undo_renamed_changes
from jaxinspect.textdiff.hlonames import TextNames, text_names
from jaxinspect.textdiff.linediff import diff_lines
from jaxinspect.textdiff.renamedlines import renamed_changes, undoable_changes
from jaxinspect.textdiff.structural import structural_diff
from jaxinspect.xla.hlocount import apply_delta, count_hlo, line_delta, renamed_count

_NAME = re.compile(r"%([\w.\-]+)")


@pytest.fixture(scope="module")
def layer() -> tuple[str, list[str]]:
    """The sample transformer block's optimized HLO: its first line, and the rest."""
    snapshot = capture_snapshot(
        load_target(f"{sample('transformer.py')}:block"), load_spec(sample("transformer.yaml"))
    )
    head, *body = (snapshot.text("hlo") or "").splitlines()
    return head, body


def stack(layer: tuple[str, list[str]], copies: int) -> list[str]:
    """``copies`` of the module's body, each with its own names (``_L<copy>`` appended)."""
    head, body = layer
    return [head] + [
        _NAME.sub(lambda m, c=copy: f"%{m.group(1)}_L{c}", line)
        for copy in range(copies)
        for line in body
    ]


def renamed(lines: list[str], *copies: int) -> list[str]:
    """``lines`` with the names of ``copies`` renamed throughout (``_L3`` -> ``_M3``)."""
    pattern = re.compile(r"_L(\d+)\b")
    return [
        pattern.sub(lambda m: f"_M{m.group(1)}" if int(m.group(1)) in copies else m.group(0), line)
        for line in lines
    ]


def text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def check(old: str, new: str) -> tuple[int, int]:
    """The structural diff's changed lines and renamings, after checking its old side is the
    old program under a bijective renaming and its new side the new text."""
    plain = diff_lines(old, new)
    result = structural_diff("hlo", plain)
    problems = renaming_problems("hlo", plain.a, result.lines.a)
    assert not problems, "\n".join(problems[:5])
    assert result.lines.b == plain.b
    changed = sum(len(c.removed) + len(c.added) for c in result.lines.changes)
    return changed, result.renamed


def refused_in_bulk(old: list[str], new: list[str], refused: set[str]) -> None:
    """The bulk renaming's checks on the whole old text's names keep it from renaming any of
    ``refused`` (old names), or to any of them, and the structural diff still shows the old
    program."""
    plain = diff_lines(text(old), text(new))
    found = renamed_changes(plain)
    assert found is not None and not refused.isdisjoint({*found.renaming, *found.renaming.values()})
    bulk = undo_renamed_changes(plain, found, lambda: text_names(plain.a))
    if bulk is not None:
        assert refused.isdisjoint({*bulk.renaming, *bulk.renaming.values()})
    check(text(old), text(new))


def test_renamed_layers_are_undone_in_bulk(layer: tuple[str, list[str]]) -> None:
    old = stack(layer, 6)
    new = renamed(old, 1, 4)
    plain = diff_lines(text(old), text(new))
    found = renamed_changes(plain)
    assert found is not None
    bulk = undo_renamed_changes(plain, found, lambda: text_names(plain.a))
    assert bulk is not None
    assert bulk.text == plain.b  # names were all that differed
    names_in_copy = {m for line in layer[1] for m in _NAME.findall(line)}
    assert len(bulk.renaming) == 2 * len(names_in_copy)
    assert check(text(old), text(new)) == (0, 2 * len(names_in_copy))


def test_an_edit_inside_a_renamed_layer_is_its_lines_alone(layer: tuple[str, list[str]]) -> None:
    old = stack(layer, 5)
    new = renamed(old, 2)
    edited = next(
        i for i, line in enumerate(new) if "_M2" in line and " multiply(" in line and "f32[" in line
    )
    new[edited] = new[edited].replace("f32[", "bf16[", 1)
    assert check(text(old), text(new))[0] == 2
    # The edited line alone, old and new, under its new name: the lines that use its value
    # pair its names, and the rest of the layer is renamed.
    result = structural_diff("hlo", diff_lines(text(old), text(new)))
    (change,) = result.lines.changes
    assert change.added == (new[edited],)
    assert change.removed == (new[edited].replace("bf16[", "f32[", 1),)


def test_a_line_inserted_between_renamed_computations_is_its_line_alone(
    layer: tuple[str, list[str]],
) -> None:
    # A line inserted between two renamed computations: the line diff keeps each computation
    # with its own renamed copy (the changed region is aligned in place from both ends, not
    # by difflib alone, which paired each with its neighbour), and the bulk renaming alone
    # leaves only the inserted line.
    old = stack(layer, 5)
    new = renamed(old, 2)
    first = next(i for i, line in enumerate(new) if "_M2" in line)
    gap = new.index("", first)  # the blank line after the renamed layer's first computation
    new.insert(gap, "  %inserted = f32[] constant(7)")
    plain = diff_lines(text(old), text(new))
    heads = [
        (c.removed[0].split(" ")[0], c.added[0].split(" ")[0])
        for c in plain.changes
        if c.removed and c.added and c.removed[0].startswith("%") and c.added[0].startswith("%")
    ]
    assert heads and all(before.replace("_L2", "_M2") == after for before, after in heads)
    found = renamed_changes(plain)
    assert found is not None
    bulk = undo_renamed_changes(plain, found, lambda: text_names(plain.a))
    assert bulk is not None
    (left,) = bulk.rest.changes
    assert (left.removed, left.added) == ((), ("  %inserted = f32[] constant(7)",))
    changed, renamings = check(text(old), text(new))
    assert changed == 1
    assert renamings > 0


def test_a_new_name_the_old_text_keeps_elsewhere_is_no_bulk_renaming(
    layer: tuple[str, list[str]],
) -> None:
    # Copy 1 renamed, one of its values to a name that copy 3's unchanged lines still define:
    # renaming copy 1's value to it would make two values one name.
    old = stack(layer, 4)
    new = renamed(old, 1)
    value = next(m for line in new for m in re.findall(r"^  %([\w.\-]+)_M1 = ", line))
    new = [line.replace(f"%{value}_M1", f"%{value}_L3") for line in new]
    refused_in_bulk(old, new, {f"{value}_L3"})


_CHAIN = """HloModule m

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %a.1 = f32[8]{0} negate(%x)
  %a.2 = f32[8]{0} exponential(%a.1)
  ROOT %r = f32[8]{0} sine(%a.2)
}
"""


def test_chains_of_names_are_left_to_the_lines() -> None:
    # A renumbering: ``a.1`` became ``a.2`` and ``a.2`` became ``a.3``, half the new names
    # old ones. The bulk pass leaves such chains to the line-by-line pass (on real
    # renumberings they ran into edited lines every time), which shows no change.
    new = _CHAIN.replace("a.2", "a.3").replace("a.1", "a.2")
    plain = diff_lines(_CHAIN, new)
    found = renamed_changes(plain)
    assert found is not None and found.renaming == {"x": "x", "a.1": "a.2", "a.2": "a.3", "r": "r"}
    assert undo_renamed_changes(plain, found, lambda: text_names(plain.a)) is None
    assert undoable_changes(plain) is None  # nothing aligned again or undone in bulk
    assert check(_CHAIN, new) == (0, 2)


def test_a_renamed_computation_called_from_an_unchanged_line_is_no_bulk_renaming(
    layer: tuple[str, list[str]],
) -> None:
    old = stack(layer, 3)
    callee = next(m for line in old for m in re.findall(r"calls=%([\w.\-]+_L1)\b", line))
    # Its header and body renamed, one of its callers not: a line the bulk pass does not
    # rewrite still calls the old name.
    header = next(i for i, line in enumerate(old) if line.startswith(f"%{callee} ("))
    end = old.index("}", header)
    new = [
        line.replace(f"%{callee}", f"%{callee}_new") if header <= i <= end else line
        for i, line in enumerate(old)
    ]
    refused_in_bulk(old, new, {callee})


_FUSED = """HloModule m

%fused (p.1: f32[8], q.2: f32[8]) -> f32[8] {
  %p.1 = f32[8]{0} parameter(0)
  %q.2 = f32[8]{0} parameter(1)
  ROOT %add.3 = f32[8]{0} add(%p.1, %q.2)
}

ENTRY %main (a: f32[8], b: f32[8]) -> f32[8] {
  %a = f32[8]{0} parameter(0)
  %b = f32[8]{0} parameter(1)
  ROOT %f = f32[8]{0} fusion(%a, %b), kind=kLoop, calls=%fused
}
"""


def test_a_renamed_bare_parameter_name_is_read_line_by_line() -> None:
    # XLA spells a parameter's name bare in its computation's header too: renaming ``q.2``
    # changes the header (a change of its own, the next line being equal) and the body lines
    # (a change in names alone). The bulk pass would leave the header's bare name, so it
    # leaves the computation to the line-by-line pass, which shows no change.
    new = _FUSED.replace("q.2", "q.5")
    plain = diff_lines(_FUSED, new)
    found = renamed_changes(plain)
    assert found is not None and found.renaming["q.2"] == "q.5"
    bulk = undo_renamed_changes(plain, found, lambda: text_names(plain.a))
    assert bulk is None or "q.2" not in bulk.renaming
    assert check(_FUSED, new) == (0, 1)


def test_mismatched_pairings_are_no_bulk_renaming() -> None:
    # Two changes pair %a with %x and with %y: no bijection, so nothing is done in bulk.
    head = "HloModule m\n\n%c (p: f32[]) -> f32[] {\n"
    old = head + "  %a = f32[] parameter(0)\n  ROOT %b = f32[] negate(%a)\n}\n"
    new = head + "  %x = f32[] parameter(0)\n  ROOT %b = f32[] negate(%y)\n}\n"
    assert renamed_changes(diff_lines(old, new)) is None


# The CLI starts reading the old text's names in a forked child as soon as the line diff is
# known (structural.early_names); the result is the one computed inline, and a start made
# for another text is stopped.
_EARLY = r"""
import os, sys
from jaxinspect.snapshot.background import in_background
from jaxinspect.textdiff.linediff import diff_lines
from jaxinspect.textdiff.renamedlines import renamed_changes
from jaxinspect.textdiff.structural import early_names, structural_diff

a, b = (open(path).read() for path in sys.argv[1:3])
plain = diff_lines(a, b)
early = early_names(plain, in_background)
assert early.found is not None and early.names is not None
started = structural_diff("hlo", plain, early=early)
inline = structural_diff("hlo", plain)
assert started == inline and started.renamed > 0 and started.lines.changes
other = diff_lines(a + "\n", b)  # another old text: the early start does not fit it
unused = early_names(plain, in_background)
assert structural_diff("hlo", other, early=unused) == structural_diff("hlo", other)
edited = early_names(diff_lines(a, a.replace("f32[", "bf16[", 1)), in_background)
assert edited.found is None and edited.names is None  # nothing to undo in bulk, no child
try:
    os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    print("same, no child left")
"""


def test_names_started_early_give_the_same_diff_and_leave_no_child(
    layer: tuple[str, list[str]], tmp_path: Path
) -> None:
    from jaxinspect.snapshot.background import MIN_FORK_CHARS

    size = len(text([layer[0], *layer[1]]))
    old = stack(layer, MIN_FORK_CHARS // size + 2)
    new = renamed(old, 1)
    new[len(layer[1]) // 2] = new[len(layer[1]) // 2].replace("f32", "bf16", 1)
    (tmp_path / "old.txt").write_text(text(old))
    (tmp_path / "new.txt").write_text(text(new))
    done = fork_free_python(_EARLY, tmp_path / "old.txt", tmp_path / "new.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "same, no child left\n"


# The console script: the child that counts the old text reads its names next, and the diff
# it prints is the one computed in one process (pytest's, where jax forbids a fork).
_CONSOLE = r"""
import sys
from jaxinspect.cli.entry import main
sys.argv = ["jaxinspect", "diff", "--color", "never", *sys.argv[1:3]]
main()
"""


def test_the_console_diff_of_renamed_layers_forks_and_prints_the_same(
    layer: tuple[str, list[str]], tmp_path: Path, run_cli
) -> None:
    from jaxinspect.snapshot.background import MIN_FORK_CHARS

    size = len(text([layer[0], *layer[1]]))
    old = stack(layer, MIN_FORK_CHARS // size + 2)
    new = renamed(old, 1, 3)
    new.insert(new.index("", len(layer[1]) + 1), "  %inserted = f32[] constant(7)")
    (tmp_path / "old.txt").write_text(text(old))
    (tmp_path / "new.txt").write_text(text(new))
    done = fork_free_python(_CONSOLE, tmp_path / "old.txt", tmp_path / "new.txt")
    inline = run_cli("diff", "--color", "never", tmp_path / "old.txt", tmp_path / "new.txt")
    assert done.returncode == inline.exit_code == 1
    assert done.stdout == inline.stdout
    assert "+  %inserted = f32[] constant(7)" in done.stdout
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr


def test_counts_derived_after_a_bulk_renaming_equal_counting_whole(
    layer: tuple[str, list[str]],
) -> None:
    # diff derives the new side's op counts from the few lines a bulk renaming leaves, with
    # the old count's computations renamed (xla.hlocount.renamed_count): whatever the edits
    # among the renamed layers (fusions unfused, callees renamed, braces deleted), the counts
    # are those of the new text counted whole.
    old = stack(layer, 6)
    derived = 0
    for seed in range(12):
        new = _edited(renamed(old, 1, 4), random.Random(seed), 12)
        plain = diff_lines(text(old), text(new))
        found = renamed_changes(plain)
        assert found is not None
        bulk = undo_renamed_changes(plain, found, lambda plain=plain: text_names(plain.a))
        if bulk is None:
            continue  # an edit that clashes with the renaming: counted from the line diff
        delta = line_delta(bulk.text, plain.b, bulk.rest.changes)
        if delta is None:
            continue  # a line moved to or from the top: counted whole anyway
        renamed_old = renamed_count(count_hlo(plain.a), bulk.renaming)
        assert +apply_delta(renamed_old, delta) == +count_hlo(plain.b).ops, seed
        derived += 1
    assert derived >= 6


def test_names_defined_among_some_are_those_the_whole_set_holds(
    layer: tuple[str, list[str]],
) -> None:
    whole = text(stack(layer, 3))
    names = text_names(whole)
    asked = {"param_0_L1", "fused_computation_L2", "no_such_name", "custom-call.1_L0", ""}
    expected = {name for name in asked if name in text_names(whole).defined()}
    assert "no_such_name" not in expected and len(expected) >= 1
    assert names.defined_among(asked) == expected  # read from the names as found
    every = set(names.joined_defined.split("\n"))
    assert pickle.loads(pickle.dumps(names)).defined_among(every | asked) == every  # joined
    names.defined()
    assert names.defined_among(asked) == expected  # and from the set, once made


def test_names_sent_by_a_child_are_joined_only() -> None:
    # The list a text's names were found as is looked up where they were read, and not
    # pickled: a child sends the joined string, and the parent splits it where it must.
    names = text_names("HloModule m\n\n%c (p: f32[]) -> f32[] {\n  %a.1 = f32[] add(%p, %p)\n}\n")
    copy = pickle.loads(pickle.dumps(names))
    assert copy.__dict__["_listed"] is None and names.__dict__["_listed"] is not None
    for either in (names, copy):
        assert either.defined_among({"a.1", "c", "p", "zz"}) == {"a.1", "c"}
    assert TextNames("", Counter()).defined_among({"a.1"}) == set()
