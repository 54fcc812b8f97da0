"""The fast loose-file diff: text-level line matching and op counts derived from a line diff."""

from __future__ import annotations

import difflib
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import fork_free_python
from jaxinspect.inputs.spec import load_spec
from jaxinspect.inputs.target import load_target
from jaxinspect.snapshot.background import MIN_FORK_CHARS, fork_is_safe, in_background
from jaxinspect.snapshot.capture import capture_snapshot
from jaxinspect.snapshot.loose import hlo_counts_pair, loose_pair, text_op_counts
from jaxinspect.snapshot.loosefile import count_parts, names_of
from jaxinspect.snapshot.store import load_sides
from jaxinspect.stages.runner import InspectOptions, run_inspection
from jaxinspect.textdiff import linematch
from jaxinspect.textdiff.hlonames import text_names
from jaxinspect.textdiff.linediff import diff_lines, text_hunks, unified_hunks
from jaxinspect.xla.hlocount import count_hlo, counts_after, find_bodies
from jaxinspect.xla.hloscan import FUSED_CALL, HEADER, KIND_CALL, OPCODE, fusion_calls

SAMPLES = Path(__file__).resolve().parent.parent / "sample_programs"
INSERTS = (
    "  %inserted = f32[] constant(1)",
    "%new_computation (p: f32[]) -> f32[] {",
    "}",
    "",
    "  %extra_fusion = f32[] fusion(%p), kind=kLoop, calls=%region_0.1",
)


@pytest.fixture(scope="module")
def hlo_texts() -> dict[str, str]:
    """Normalized (snapshot) and raw (``compiled.as_text()``) HLO of the sample transformer."""
    target = load_target(f"{SAMPLES}/transformer.py:block")
    spec = load_spec(SAMPLES / "transformer.yaml")
    normalized = capture_snapshot(target, spec).text("hlo")
    assert normalized is not None
    _, artifacts = run_inspection(target, spec, InspectOptions(execute=False, sections=("hlo",)))
    return {"normalized": normalized, "raw": artifacts.compiled.as_text()}


def _edited(lines: list[str], rng: random.Random, edits: int) -> list[str]:
    """Scattered edits of every kind a diff meets: headers, fusion calls, braces included."""
    out = list(lines)
    for _ in range(edits):
        index = rng.randrange(1, len(out))
        roll = rng.random()
        if roll < 0.4:
            out[index] = out[index].replace("f32", "bf16", 1) + rng.choice(("", " /*edited*/"))
        elif roll < 0.55:
            del out[index]
        elif roll < 0.75:
            out.insert(index, rng.choice(INSERTS))
        elif roll < 0.85:
            out[index] = out[index].replace("fusion(", "add(", 1)
        else:
            out[index] = out[index].replace("%fused_computation", "%renamed_computation", 1)
    return out


@pytest.mark.parametrize("flavour", ["normalized", "raw"])
def test_counts_from_the_line_diff_equal_counting_whole(
    hlo_texts: dict[str, str], flavour: str
) -> None:
    lines = hlo_texts[flavour].splitlines()
    derived = 0
    for seed in range(150):
        rng = random.Random(seed)
        old = "\n".join(_edited(lines, rng, rng.randint(0, 2)))
        new = "\n".join(_edited(old.split("\n"), rng, rng.randint(1, 8)))
        diff = diff_lines(old, new)
        fast = counts_after(count_hlo(diff.a), diff.a, diff.b, diff.changes)
        if fast is not None:
            derived += 1
            assert fast == count_hlo(new).ops, seed
        assert hlo_counts_pair(old, new, diff) == (
            text_op_counts("hlo", old),
            text_op_counts("hlo", new),
        )
    assert derived >= 140  # only lines moved to or from the top need a whole count


def test_unchanged_compiler_output_counts_as_jax_does(hlo_texts: dict[str, str]) -> None:
    text = hlo_texts["raw"]
    old, new, diffs = loose_pair(text, text.replace("f32", "bf16", 1))
    assert old.summary.stage_ops("hlo") == dict(text_op_counts("hlo", text))
    assert new.summary.stage_ops("hlo") == old.summary.stage_ops("hlo")  # a type, not an op
    assert set(diffs) == {"hlo"}


lines = st.lists(st.sampled_from(["a", "b", "}", "", "x = 1", "a\r"]), max_size=40)


@settings(max_examples=200, deadline=None)
@given(lines, lines, st.booleans(), st.integers(0, 4))
def test_text_hunks_equal_line_hunks(
    a: list[str], b: list[str], final_newline: bool, context: int
) -> None:
    # A missing final newline (after a non-empty last line) is no difference.
    def text(lines: list[str]) -> str:
        joined = "".join(f"{line}\n" for line in lines)
        return joined if final_newline or not lines or not lines[-1] else joined[:-1]

    a_text, b_text = text(a), text(b)
    assert list(text_hunks(a_text, b_text, context)) == list(unified_hunks(a, b, context))


def test_loose_files_read_with_universal_newlines(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"HloModule m\r\n\r\nENTRY %main () -> f32[] {\r\n}\r\n")
    (tmp_path / "b.txt").write_bytes(b"HloModule m\rENTRY %main () -> f32[] {\n}")
    (tmp_path / "empty.txt").write_bytes(b"")
    old, new, _ = load_sides(tmp_path / "a.txt", tmp_path / "b.txt")
    assert old.text("hlo") == "HloModule m\n\nENTRY %main () -> f32[] {\n}\n"
    assert new.text("hlo") == "HloModule m\nENTRY %main () -> f32[] {\n}"
    empty, _, _ = load_sides(tmp_path / "empty.txt", tmp_path / "a.txt")
    assert empty.text("jaxpr") == ""


def test_many_computations_unfused_at_once(hlo_texts: dict[str, str]) -> None:
    # Many fusions undone at once: every unfused body is counted from the index of bodies.
    old = hlo_texts["normalized"]
    new = old.replace("fusion(", "add(")
    diff = diff_lines(old, new)
    unfused = count_hlo(old).calls.keys() - count_hlo(new).calls.keys()
    assert len(unfused) > 16
    assert counts_after(count_hlo(diff.a), diff.a, diff.b, diff.changes) == count_hlo(new).ops


@pytest.mark.parametrize("flavour", ["normalized", "raw"])
def test_names_read_after_the_count_are_those_read_alone(
    hlo_texts: dict[str, str], flavour: str
) -> None:
    # The child that counted the old text reads its names with the computations the count
    # found (``loosefile.names_of``): on compiler output, the names read from scratch.
    whole = hlo_texts[flavour]
    alone = text_names(whole)
    after = names_of(whole, count_parts(whole))
    assert (after.joined_defined, after.callees) == (alone.joined_defined, alone.callees)
    assert alone.joined_defined.count("\n") > 100  # a module of many names


def _entry_first(text: str) -> str:
    return text.replace("\nENTRY %", "\n%", 1).replace("\n%", "\nENTRY %", 1)


@pytest.mark.parametrize("flavour", ["normalized", "raw"])
def test_body_index_finds_the_headers_one_pattern_finds(
    hlo_texts: dict[str, str], flavour: str
) -> None:
    # The index a count records (and sends back from its forked child) gives each body's
    # span as the header pattern reads it, wherever ENTRY stands, and finds bodies by name.
    text = hlo_texts[flavour]
    for module in (text, _entry_first(text), "%first (p: f32[]) -> f32[] {\n}\n", ""):
        headers = [(m.group(1), m.start(), m.end()) for m in HEADER.finditer(module)]
        stops = [*(start for _, start, _ in headers[1:]), len(module)]
        expected = [(name, end, stop) for (name, _, end), stop in zip(headers, stops, strict=False)]
        bodies = find_bodies(module)
        assert bodies.spans() == expected
        assert bodies.top == (headers[0][1] if headers else len(module))
        wanted = {name for name, _, _ in expected[::3]}
        assert bodies.named(wanted) == [span for span in expected if span[0] in wanted]


# The background count forks only in a process without jax (pytest's has it): run it in one.
_FORKED = r"""
import sys
from jaxinspect.snapshot import background
from jaxinspect.snapshot.loose import hlo_counts_pair, loose_pair, text_op_counts

old = open(sys.argv[1]).read()
new = open(sys.argv[2]).read()
assert background.fork_is_safe() and len(old) >= background.MIN_FORK_CHARS
a, b, _ = loose_pair(old, new, meanwhile=lambda: print("meanwhile"))
assert a.summary.ops == (("hlo", text_op_counts("hlo", old)),)
assert b.summary.ops == (("hlo", text_op_counts("hlo", new)),)

import os
assert background.in_background(lambda text: os.getpid(), old)() != os.getpid()  # it forked

def fails(text):
    raise ValueError("counted inline too")

try:
    background.in_background(fails, old)()
except ValueError as exc:  # the child's failure is the parent's to report, not a hang
    print(exc)

# A child asked one question about its values answers it where they are.
def answer(text, values, question):
    return os.getpid(), values, question

def length(text, one):  # the second value is given the first
    return len(text) + one

first, second = background.in_background_then(lambda text: 1, length, old, answer)
first()
reply = second.ask("which?")
assert reply is not None and first.ask("again?") is None  # one question, once
assert reply()[0] != os.getpid() and reply()[1:] == ([1, len(old) + 1], "which?")
assert second() == len(old) + 1 and first() == 1  # its values, still read after the answer
# A question waiting when the last value is known is answered first: the parent waits.
def slowly(text, one):
    import time
    time.sleep(0.3)
    return one + 1

first, second = background.in_background_then(lambda text: 1, slowly, old, answer)
reply = second.ask("which?")
assert reply()[0] != os.getpid() and reply()[1:] == ([1, 2], "which?")
assert second.in_child  # answered before the last value was sent
assert second() == 2 and not second.in_child
# Stopped before its question: answered here, the same way.
first, second = background.in_background_then(lambda text: 1, length, old, answer)
second()
first.close()
reply = second.ask("which?")
assert reply is not None and reply() == (os.getpid(), [1, len(old) + 1], "which?")
# Too small to fork: answered here.
first, second = background.in_background_then(lambda text: 1, length, "small", answer)
assert second.ask("which?")() == (os.getpid(), [1, 6], "which?")
del first, second, reply

def unreadable():
    raise ValueError("new side unreadable")

try:
    loose_pair(old, unreadable)
except ValueError as exc:
    print(exc)
try:
    os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    print("no child left")
print("ok")
"""


def test_background_count_in_a_forked_child(hlo_texts: dict[str, str], tmp_path: Path) -> None:
    lines = hlo_texts["normalized"].splitlines()
    repeats = MIN_FORK_CHARS // len(hlo_texts["normalized"]) + 1
    big = "\n".join(lines + lines[1:] * repeats)  # duplicate names are fine for counting
    rng = random.Random(0)
    (tmp_path / "old.txt").write_text(big)
    (tmp_path / "new.txt").write_text("\n".join(_edited(big.split("\n"), rng, 40)))
    done = fork_free_python(_FORKED, tmp_path / "old.txt", tmp_path / "new.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == [
        "meanwhile",
        "counted inline too",
        "new side unreadable",
        "no child left",
        "ok",
        "",
    ]


def test_no_fork_where_jax_is_loaded() -> None:
    import jax  # noqa: F401

    assert not fork_is_safe()
    assert in_background(len, "x" * MIN_FORK_CHARS)() == MIN_FORK_CHARS


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["%a = f32[] fusion(%p), kind=kLoop, calls=%c1"], {"c1": 1}),  # as XLA prints it
        (
            ["%a = f32[] fusion(%p), kind=kLoop, calls=%c1", "%b = f32[] fusion(%q), calls=%c2"],
            {"c1": 1, "c2": 1},
        ),
        (
            [
                "%a = f32[] fusion(%p), kind=kLoop, calls=%c1",
                "%x = f32[] call(%p), kind=kX, calls=%c3",
            ],
            {"c1": 1},
        ),
    ],
)
def test_fusion_calls_read_each_fusion_line_however_printed(
    lines: list[str], expected: dict[str, int]
) -> None:
    assert fusion_calls("".join(f"  {line}\n" for line in lines)) == expected


def test_undecodable_new_file_is_a_usage_error_naming_it(
    hlo_texts: dict[str, str], tmp_path: Path, run_cli
) -> None:
    # The new side is read after the old side's count has started: its error still surfaces.
    (tmp_path / "old.txt").write_text(hlo_texts["normalized"])
    (tmp_path / "new.txt").write_bytes(b"HloModule m\n\xff\xfe\n")
    result = run_cli("diff", tmp_path / "old.txt", tmp_path / "new.txt")
    assert result.exit_code == 2
    assert f"{tmp_path / 'new.txt'}: cannot read" in result.stderr


# Lines of two alphabets: the first few occur on both sides, the rest on one side only.
region = st.lists(st.sampled_from(["}", "", "a", "b", "c", "d", "e", "f"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(region, region)
def test_squeezed_alignment_is_in_step_at_both_ends_and_difflib_between(
    a: list[str], b: list[str]
) -> None:
    # Runs of lines found on one side only are folded before a changed region is aligned
    # (and the result cached by shape). The places where both sides agree from the start
    # and from the end (a folded run on both counts as agreeing) are aligned one by one;
    # difflib aligns what lies between, as it would the whole where nothing agrees at the ends.
    b = [line.upper() if line in "def" and line else line for line in b]
    blocks = linematch._aligned(a, b, len(a), len(b))
    x_end = y_end = 0
    for x, y, n in blocks:  # equal runs, in order
        assert n > 0 and x >= x_end and y >= y_end and a[x : x + n] == b[y : y + n]
        x_end, y_end = x + n, y + n
    if not (a and b):
        assert blocks == []
        return
    short_a, _ = linematch._squeezed(a, set(b), "a")
    short_b, _ = linematch._squeezed(b, set(a), "b")
    places = range(min(len(short_a), len(short_b)))
    head = linematch._in_step(short_a, short_b, places)
    tail = linematch._in_step(short_a, short_b, range(-1, -len(places) + head - 1, -1))
    if head == tail == 0:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        assert blocks == [(x, y, n) for x, y, n in matcher.get_matching_blocks() if n]


def test_renamed_computations_beside_an_edit_align_in_place() -> None:
    # Four renamed computations (every line differs but ``}`` and the blank line after it);
    # the new text drops the blank line after the second. Aligned from both ends, each
    # computation's brace is matched with its own, and only the dropped line is left over;
    # difflib on the whole region matches the first brace with the second one.
    a = ["a1", "}", "", "a2", "}", "", "a3", "}", "", "a4", "}"]
    b = ["b1", "}", "", "b2", "}", "b3", "}", "", "b4", "}"]
    blocks = linematch._aligned(a, b, len(a), len(b))
    assert blocks == [(1, 1, 2), (4, 4, 1), (7, 6, 2), (10, 9, 1)]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    assert blocks != [(x, y, n) for x, y, n in matcher.get_matching_blocks() if n]


@settings(max_examples=300, deadline=None)
@given(region, st.integers(0, 2**32 - 1))
def test_same_shaped_regions_align_as_difflib_does(a: list[str], seed: int) -> None:
    # A renamed computation squeezes to the same shape on both sides (its lines differ, its
    # braces and blank lines agree); such regions are in step from end to end, aligned
    # place by place, not by difflib, which finds the same blocks there.
    rng = random.Random(seed)
    b = [line.upper() if line in "def" and line else line for line in a]
    for k, line in enumerate(b):  # other one-side lines, where a run of them is
        if line in "DEF" and line and rng.random() < 0.5:
            b[k] = rng.choice("DEF")
    short_a, short_b = (
        linematch._squeezed(x, set(y), s)[0] for x, y, s in ((a, b, "a"), (b, a, "b"))
    )
    assert len(short_a) == len(short_b)
    assert linematch._in_step(short_a, short_b, range(len(short_a))) == len(short_a)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    expected = [(x, y, n) for x, y, n in matcher.get_matching_blocks() if n]
    assert linematch._aligned(a, b, len(a), len(b)) == (expected if a and b else [])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "}", "", "x = 1"]), min_size=1, max_size=60), region)
def test_quick_resync_finds_what_the_full_window_finds(base: list[str], noise: list[str]) -> None:
    # The nearest agreement is first looked for in a small window; it must be the one the
    # full window finds (monkeypatch.setattr would not reset between hypothesis examples).
    rng = random.Random(len(base) * 31 + len(noise))
    edited = list(base)
    for line in noise:
        edited.insert(rng.randrange(len(edited) + 1), line.upper())
    a, b = "".join(f"{x}\n" for x in base), "".join(f"{x}\n" for x in edited)
    quick = linematch.line_changes(a, b)
    saved, linematch._QUICK_WINDOW = linematch._QUICK_WINDOW, 0
    try:
        assert quick == linematch.line_changes(a, b)
    finally:
        linematch._QUICK_WINDOW = saved


def test_quick_resync_defers_to_a_nearer_agreement_outside_it() -> None:
    # Inside the quick window the texts agree at (5, 5), but nine inserted lines then the old
    # text, (0, 9), are nearer: the diff is one insertion.
    old = [f"L{i}" for i in range(30)]
    new = ["n0", "n1", "n2", "n3", "n4", "L5", "L6", "L7", "n8", *old]
    a, b = "".join(f"{x}\n" for x in old), "".join(f"{x}\n" for x in new)
    [change] = linematch.line_changes(a, b)
    assert (change.a_lo, change.a_hi, change.b_lo, change.b_hi) == (0, 0, 0, 9)


def _reference_count(text: str) -> tuple[Counter[str], Counter[str], list[tuple[str, int, int]]]:
    """What ``count_hlo`` counts, by its definition: one header pattern, then each body's
    opcodes unless a fusion calls it (``count_hlo`` splits and joins the text instead)."""
    callees = KIND_CALL.findall(text)
    if len(callees) != text.count(" fusion("):
        callees = FUSED_CALL.findall(text)
    calls = Counter(callees)
    headers = list(HEADER.finditer(text))
    stops = [*(header.start() for header in headers[1:]), len(text)][: len(headers)]
    spans = [(h.group(1), h.end(), stop) for h, stop in zip(headers, stops, strict=True)]
    ops = Counter(OPCODE.findall(text, 0, headers[0].start() if headers else len(text)))
    for name, start, stop in spans:
        if name not in calls:
            ops.update(OPCODE.findall(text, start, stop))
    return ops, calls, spans


def _assert_counts_as_defined(text: str) -> None:
    counted = count_hlo(text)
    ops, calls, spans = _reference_count(text)
    assert counted.ops == ops
    assert counted.calls == calls
    assert counted.bodies.spans() == spans == find_bodies(text).spans()


@pytest.mark.parametrize("flavour", ["normalized", "raw"])
def test_count_of_compiler_output_is_the_count_by_definition(
    hlo_texts: dict[str, str], flavour: str
) -> None:
    text = hlo_texts[flavour]
    every_entry = text.replace("\n%", "\nENTRY %")  # every header an ENTRY one
    non_ascii = text.replace("%fused_computation", "%fusé", 3)  # read without re.ASCII
    unfused = text.replace(" fusion(", " add(", 2)
    for variant in (
        text,
        _entry_first(text),
        every_entry,
        non_ascii,
        unfused,
        text.rstrip("\n") + "{",
    ):
        assert count_hlo(variant).ops, variant[:40]
        _assert_counts_as_defined(variant)


# Pieces of HLO lines that make headers, fusion calls and opcodes, and break them.
hlo_pieces = st.lists(
    st.sampled_from(
        [
            "\n",
            "%",
            "ENTRY ",
            " ",
            "{",
            "}",
            "(",
            ")",
            "a",
            "é",
            " = ",
            "f32[] ",
            "add(",
            " fusion(",
            " kind=kLoop, calls=%a",
            "calls=%b",
            "%a (p: f32[]) -> f32[] {",
        ]
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(hlo_pieces)
def test_count_of_any_text_is_the_count_by_definition(pieces: list[str]) -> None:
    _assert_counts_as_defined("".join(pieces))


# The count started before diff's imports (loosefile.start_count) forks only without jax.
_EARLY = r"""
import os, sys
from pathlib import Path
from jaxinspect.cli.entry import run
from jaxinspect.snapshot.loosefile import count_parts, read_text, start_count
from jaxinspect.textdiff.hlonames import answer_about, text_names
from jaxinspect.textdiff.terminated import terminated

old, new, small, folder = map(Path, sys.argv[1:5])
early = start_count(old, new)
assert early is not None and early.path == old and early.parts.in_child  # a child counts
# Its value, computed once: that of the old text as the line diff reads it.
text = terminated(read_text(old))
assert early.parts() == early.parts() == count_parts(text)
# The same child reads the old text's names next.
assert early.names.in_child and not early.parts.in_child
names, inline = early.names(), text_names(text)
assert (names.joined_defined, names.callees) == (inline.joined_defined, inline.callees)
assert not early.names.in_child
# Then it waits for one question about them (a bulk renaming's), until it is closed.
question = (frozenset({"no_such_name", *list(names.defined())[:3]}), frozenset(names.callees))
answer = early.names.ask(question)
assert answer is not None and early.names.ask(question) is None  # one question, once
assert answer() == answer_about(inline, question)
early.parts.close()
fifo = folder / "fifo"
os.mkfifo(fifo)
# Only two regular files, the old one a large HLO text: else load_sides reads as before.
for pair in ((small, new), (new, folder), (folder, folder), (old, fifo), (fifo, old),
             (folder / "missing.txt", new)):
    assert start_count(*pair) is None, pair
closed = start_count(old, new)
closed.parts.close()  # stopped before its value: asked for anyway, it counts inline
assert closed.parts() == early.parts()
counted = start_count(old, new)
counted.parts()
counted.parts.close()  # the names were not asked for: the child reading them is stopped
assert not counted.names.in_child and counted.names().callees == names.callees  # read inline
# A usage error found after the count started (a bad --fail-on) stops the child.
print(run(["diff", "--fail-on", "bogus!!", str(old), str(new)]))
try:
    os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    print("no child left")
"""


def test_early_count_of_a_large_old_file(hlo_texts: dict[str, str], tmp_path: Path) -> None:
    lines = hlo_texts["normalized"].splitlines()
    big = "\n".join(lines + lines[1:] * (MIN_FORK_CHARS // len(hlo_texts["normalized"]) + 1))
    (tmp_path / "old.txt").write_text(big)
    (tmp_path / "new.txt").write_text(big.replace("f32", "bf16", 3))
    (tmp_path / "small.txt").write_text(hlo_texts["normalized"])
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    paths = [str(tmp_path / name) for name in ("old.txt", "new.txt", "small.txt")]
    done = subprocess.run(
        [sys.executable, "-c", _EARLY, *paths, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["2", "no child left", ""]
    assert "--fail-on" in done.stderr


# The console script forks the count first, before the diff's own modules are imported.
_FIRST = r"""
import os, sys
def at_fork():
    loaded = sorted(m for m in ("dataclasses", "jaxinspect.cli.commands.diff",
                                "jaxinspect.snapshot.compare", "jaxinspect.xla.hlocount")
                    if m in sys.modules)
    os.write(2, f"loaded at fork: {loaded}\n".encode())
os.register_at_fork(before=at_fork)
from jaxinspect.cli.entry import main
sys.argv = ["jaxinspect", *sys.argv[1:]]
main()
"""

# A count started first is handed over for the same paths only, and stopped otherwise.
_HANDOVER = r"""
import os, sys
from pathlib import Path
from jaxinspect.snapshot import loosefile

old, new = sys.argv[1:3]
def no_child() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False
loosefile.prestart_count(old, new)
first = loosefile._prestarted
assert first is not None and first.parts.in_child
assert loosefile.start_count(Path(old), Path(new)) is first and loosefile._prestarted is None
first.parts.close()
loosefile.prestart_count(old, new)
other = loosefile.start_count(Path(new), Path(old))  # other paths: a count of its own
assert other is not None and other.path == Path(new)
other.parts.close()
print("stopped other", no_child())
loosefile.prestart_count(old, new)
loosefile.drop_prestarted()
print("dropped", loosefile._prestarted is None and no_child())
"""


def _big_pair(hlo_texts: dict[str, str], tmp_path: Path) -> list[str]:
    lines = hlo_texts["normalized"].splitlines()
    big = "\n".join(lines + lines[1:] * (MIN_FORK_CHARS // len(hlo_texts["normalized"]) + 1))
    (tmp_path / "old.txt").write_text(big)
    (tmp_path / "new.txt").write_text(big.replace("f32", "bf16", 3))
    return [str(tmp_path / "old.txt"), str(tmp_path / "new.txt")]


def test_the_console_script_counts_a_large_old_file_before_importing_the_diff(
    hlo_texts: dict[str, str], tmp_path: Path
) -> None:
    paths = _big_pair(hlo_texts, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    argv = ["diff", "--color", "never", *paths]
    done = subprocess.run(
        [sys.executable, "-c", _FIRST, *argv], capture_output=True, text=True, env=env
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[0] == "loaded at fork: []"
    reference = subprocess.run(
        [sys.executable, "-m", "jaxinspect", *argv], capture_output=True, text=True, env=env
    )
    assert reference.returncode == 1 and done.stdout == reference.stdout
    assert "+++ " in done.stdout and "bf16" in done.stdout
    # Not a plain diff after all (a bad value): the typer path reports it as before.
    bad = subprocess.run(
        [sys.executable, "-c", _FIRST, "diff", "--format", "xml", *paths],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode == 2 and "xml" in bad.stderr


def test_a_count_started_first_is_handed_over_or_stopped(
    hlo_texts: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    done = subprocess.run(
        [sys.executable, "-c", _HANDOVER, *_big_pair(hlo_texts, tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["stopped other True", "dropped True"]


def test_the_forked_count_imports_no_dataclasses(hlo_texts: dict[str, str]) -> None:
    # The count child is forked before the diff's modules are imported: it must not import
    # them itself (dataclasses alone costs a tenth of the count).
    code = (
        "import sys\n"
        "from jaxinspect.snapshot.loosefile import count_parts\n"
        "ops, calls, names, starts, ends = count_parts(sys.stdin.read())\n"
        "assert ops and calls and len(starts) == len(ends) == len(names.split())\n"
        "print(sorted(m for m in ('dataclasses', 'difflib', 'jaxinspect.xla.hlocount')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=hlo_texts["normalized"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


# Ctrl-C while the console script reads the old file, before the command's own handling.
_CTRL_C_FIRST = r"""
import sys
from jaxinspect.snapshot import loosefile
def interrupted(path):
    raise KeyboardInterrupt
loosefile.read_text = interrupted
from jaxinspect.cli.entry import main
sys.argv = ["jaxinspect", *sys.argv[1:]]
main()
"""


def test_ctrl_c_while_the_old_file_is_read_first_exits_130_quietly(
    hlo_texts: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_FIRST, "diff", *_big_pair(hlo_texts, tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
