"""Structural diffs on real compiler output: a renaming is no change, one edit is a few lines."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import fork_free_python, sample
from jaxinspect.inputs.spec import load_spec, parse_spec_text
from jaxinspect.inputs.target import load_target
from jaxinspect.snapshot.capture import capture_snapshot
from jaxinspect.snapshot.compare import diff_snapshots
from jaxinspect.snapshot.model import Snapshot
from jaxinspect.snapshot.store import write_snapshot
from jaxinspect.textdiff.linediff import diff_lines
from jaxinspect.textdiff.structural import structural_diff

STAGES = ("jaxpr", "stablehlo", "hlo")


def changed_lines(stage: str, a: str, b: str, *, structural: bool = True) -> int:
    plain = diff_lines(a, b)
    lines = structural_diff(stage, plain).lines if structural else plain
    return sum(len(c.added) + len(c.removed) for c in lines.changes)


@pytest.fixture(scope="module")
def transformer_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Snapshot, Snapshot]:
    """The sample transformer block, and the same with its output times 0.5 (issue #14)."""
    root = tmp_path_factory.mktemp("edit")
    source = Path(sample("transformer.py")).read_text()
    edited = source.replace(
        '    return x + hidden @ params["w2"]', '    return 0.5 * (x + hidden @ params["w2"])'
    )
    assert edited != source
    (root / "old.py").write_text(source)
    (root / "new.py").write_text(edited)
    spec = load_spec(sample("transformer.yaml"))
    return (
        capture_snapshot(load_target(f"{root}/old.py:block"), spec),
        capture_snapshot(load_target(f"{root}/new.py:block"), spec),
    )


@pytest.mark.parametrize("stage", STAGES)
def test_one_edit_is_at_most_ten_changed_lines(
    transformer_pair: tuple[Snapshot, Snapshot], stage: str
) -> None:
    old, new = (s.text(stage) or "" for s in transformer_pair)
    assert changed_lines(stage, old, new) <= 10
    if stage == "hlo":  # the renumbering a line diff shows
        assert changed_lines(stage, old, new, structural=False) > 100


def test_the_changed_hlo_lines_are_the_multiply_and_its_fusion(
    transformer_pair: tuple[Snapshot, Snapshot],
) -> None:
    diff = diff_snapshots(*transformer_pair, "old", "new")
    hlo = next(t for t in diff.texts if t.stage == "hlo")
    lines = [line for h in hlo.hunks for mark, line in h.lines if mark in "+-"]
    assert any("constant(0.5)" in line for line in lines)
    assert any("multiply(" in line for line in lines)
    assert hlo.renamed > 20
    multiply = next(line for line in lines if "multiply(" in line)
    assert re.match(r"\s*(?:ROOT )?%([\w.\-]+)", multiply)[1] in hlo.added_names  # type: ignore[index]
    plain = diff_snapshots(*transformer_pair, "old", "new", structural=False)
    assert next(t for t in plain.texts if t.stage == "hlo").renamed == 0


def rename_hlo(text: str) -> str:
    """Every instruction, computation and parameter name changed (``%x.3`` -> ``%x.3_r``)."""
    names = set(re.findall(r"%([\w.\-]+)", text))
    text = re.sub(r"%([\w.\-]+)", lambda m: f"%{m.group(1)}_r", text)
    return re.sub(
        r"(?<=[(,] )([\w.\-]+)(?=: )|(?<=\()([\w.\-]+)(?=: )",
        lambda m: m.group(0) + "_r" if m.group(0) in names else m.group(0),
        text,
    )


def rename_stablehlo(text: str) -> str:
    return re.sub(r"%([\w.\-$]+)", lambda m: f"%r{m.group(1)}", text)


def rename_jaxpr(text: str) -> str:
    """Every variable gets another name; primitives (after ``=``) and keywords stay."""
    names = set(re.findall(r"(?<![\w.])([a-z]+):[a-z]", text)) - {"lambda", "let", "in"}

    def rename_line(line: str) -> str:
        primitive = re.search(r" = ([a-z_]\w*)", line)
        skip = primitive.start(1) if primitive else -1
        return re.sub(
            r"(?<![\w.\[=:])([a-z]+)(?![\w\[=(])",
            lambda m: (
                f"q{m.group(1)}" if m.group(1) in names and m.start(1) != skip else m.group(1)
            ),
            line,
        )

    return "\n".join(rename_line(line) for line in text.split("\n"))


RENAMERS: dict[str, Callable[[str], str]] = {
    "hlo": rename_hlo,
    "stablehlo": rename_stablehlo,
    "jaxpr": rename_jaxpr,
}


@pytest.mark.parametrize("stage", STAGES)
def test_texts_that_differ_only_in_names_have_no_changed_line(
    transformer_pair: tuple[Snapshot, Snapshot], stage: str
) -> None:
    text = transformer_pair[0].text(stage) or ""
    renamed = RENAMERS[stage](text)
    assert changed_lines(stage, text, renamed, structural=False) > 50
    assert changed_lines(stage, text, renamed) == 0


def test_programs_differing_in_dead_code_compile_to_no_hlo_change(
    tmp_path: Path, run_cli: Callable[..., object]
) -> None:
    body = """
    import jax.numpy as jnp


    def f(x):
        DEAD
        y = jnp.sin(x) * 2.0
        return jnp.tanh(y) + x
    """
    snaps = []
    for name, dead in (("a", "pass"), ("b", "unused = jnp.cos(x) * 3.0 + jnp.exp(x)")):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body).replace("DEAD", dead))
        spec = parse_spec_text("args:\n  x: f32[8,16]\n", source="spec")
        folder = tmp_path / f"snap_{name}"
        write_snapshot(folder, capture_snapshot(load_target(f"{tmp_path}/{name}.py:f"), spec))
        snaps.append(folder)
    result = run_cli("diff", *snaps, "--format", "json")
    import json

    texts = {t["stage"]: t for t in json.loads(result.stdout)["texts"]}
    assert set(texts) == {"jaxpr"}  # XLA removed the dead code; the jaxpr still has it
    assert texts["jaxpr"]["removed"] == 0 and texts["jaxpr"]["added"] == 4
    assert texts["jaxpr"]["renamed"] > 0
    lines = run_cli("diff", *snaps, "--text-diff", "lines", "--format", "json")
    plain = {t["stage"]: t for t in json.loads(lines.stdout)["texts"]}
    assert plain["jaxpr"]["removed"] > 0 and plain["jaxpr"]["renamed"] == 0


def test_the_structural_diff_is_what_check_and_the_summary_show(
    transformer_pair: tuple[Snapshot, Snapshot],
) -> None:
    from jaxinspect.snapshot.text import text_change_line

    diff = diff_snapshots(*transformer_pair, "old", "new")
    line = text_change_line(next(t for t in diff.texts if t.stage == "hlo"))
    assert re.match(r"hlo: \+\d -\d lines \(\d+ renamings not shown\); added: ", line)


def _snapshots(tmp_path: Path, source: str, edit: tuple[str, str], spec: str) -> list[Snapshot]:
    """Snapshots of ``source``'s ``f`` and of ``source`` with ``edit`` made (issue #26)."""
    out = []
    for name, text in (("a", source), ("b", source.replace(*edit))):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
        target = load_target(f"{tmp_path}/{name}.py:f")
        out.append(capture_snapshot(target, parse_spec_text(spec, source="spec")))
    assert out[0].text("jaxpr") != out[1].text("jaxpr")
    return out


def test_gelu_to_relu_old_side_is_the_old_program(tmp_path: Path) -> None:
    """Finding 6: the old side read ``f = add e e`` where the old program computed ``add c e``,
    with ``d`` renamed to the new text's weight parameter."""
    from test_structural_renaming import renaming_problems

    source = """
    import jax
    import jax.numpy as jnp


    def f(x, w):
        for _ in range(3):
            x = jax.nn.gelu(x @ w)
            x = x / jnp.sqrt(jnp.mean(x**2) + 1e-6)
        return x
    """
    spec = "args:\n  x: f32[8,16]\n  w: f32[16,16]\n"
    old, new = _snapshots(tmp_path, source, ("jax.nn.gelu", "jax.nn.relu"), spec)
    for stage in STAGES:
        a, b = old.text(stage) or "", new.text(stage) or ""
        shown = structural_diff(stage, diff_lines(a, b)).lines.a
        assert not renaming_problems(stage, diff_lines(a, b).a, shown)
        assert changed_lines(stage, a, b) <= changed_lines(stage, a, b, structural=False)
    jaxpr = structural_diff("jaxpr", diff_lines(old.text("jaxpr") or "", new.text("jaxpr") or ""))
    removed = [line for c in jaxpr.lines.changes for line in c.removed]
    assert not any(re.search(r"= add (\w+) \1$", line) for line in removed)


def test_a_constant_changed_in_one_of_similar_fusions_is_its_lines(tmp_path: Path) -> None:
    """A NUTS step size: the same sign-times-step computation fused twice, with the step and
    half of it; a new step makes the new half equal the old whole, and pairing by content
    alone took the other fusion (blackjax's NUTS step: +24 -24 lines where a line diff shows
    the two constants). Only the constants' lines change."""
    source = """
    import jax.numpy as jnp

    STEP = 0.1


    def f(x, y):
        a = jnp.where(jnp.sin(x) < 0.5, 1.0, -1.0) * STEP
        b = jnp.where(jnp.cos(y) < 0.5, 1.0, -1.0) * (STEP / 2)
        return jnp.exp(a) + b, jnp.log(b + 2.0)
    """
    spec = "args:\n  x: f32[]\n  y: f32[]\n"
    old, new = _snapshots(tmp_path, source, ("STEP = 0.1", "STEP = 0.2"), spec)
    a, b = old.text("hlo") or "", new.text("hlo") or ""
    assert changed_lines("hlo", a, b) <= changed_lines("hlo", a, b, structural=False)
    changed = structural_diff("hlo", diff_lines(a, b)).lines.changes
    assert all("constant(" in line for c in changed for line in (*c.removed, *c.added))


# The whole old text's names are read in a forked child while the matching runs (diff's CLI
# passes snapshot.background.in_background); the result is the one computed inline.
_ASIDE = r"""
import os, sys
from jaxinspect.snapshot.background import in_background
from jaxinspect.textdiff.linediff import diff_lines
from jaxinspect.textdiff.structural import structural_diff

a, b = (open(path).read() for path in sys.argv[1:3])
plain = diff_lines(a, b)
forks = []
os.register_at_fork(before=lambda: forks.append(1))
aside = structural_diff("hlo", plain, in_background)
assert forks, "no child forked"
inline = structural_diff("hlo", plain)
assert aside == inline and aside.renamed > 0 and aside.lines.changes
try:
    os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    print("same, no child left")
"""


def test_the_old_text_s_names_read_aside_give_the_same_diff(
    transformer_pair: tuple[Snapshot, Snapshot], tmp_path: Path
) -> None:
    from jaxinspect.snapshot.background import MIN_FORK_CHARS

    module = transformer_pair[0].text("hlo") or ""
    head, *body = module.splitlines()
    name = re.compile(r"%([\w.\-]+)")
    copies = MIN_FORK_CHARS // len(module) + 2
    old = [head] + [
        name.sub(lambda m, c=copy: f"%{m.group(1)}_L{c}", line)
        for copy in range(copies)
        for line in body
    ]
    new = [line.replace("_L1", "_M1") for line in old]  # one copy renamed throughout
    new[len(body) // 2] = new[len(body) // 2].replace("f32", "bf16", 1)  # one real edit
    (tmp_path / "old.txt").write_text("\n".join(old) + "\n")
    (tmp_path / "new.txt").write_text("\n".join(new) + "\n")
    done = fork_free_python(_ASIDE, tmp_path / "old.txt", tmp_path / "new.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "same, no child left\n"


_MANY_ARGUMENTS = """
def plain(xs):
    acc = xs[0]
    for x in xs[1:]:
        acc = acc + x
    return acc


def scaled(xs):
    acc = xs[0] * 2.0
    for x in xs[1:]:
        acc = acc + x
    return acc
"""


def test_a_function_of_many_arguments_is_matched_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # StableHLO's @main header defines every argument, and names @empty_mesh once for each
    # (its sharding): each argument's signature read that line's whole list of names, so
    # the work grew with the square of the arguments (a 96-layer model has 769).
    from jaxinspect.textdiff import structural

    (tmp_path / "many.py").write_text(_MANY_ARGUMENTS)
    calls = [0]
    signature = structural._Side.signature

    def counted(side: object, name: str, depth: int = 0) -> int:
        calls[0] += 1
        return signature(side, name, depth)  # type: ignore[arg-type]

    work = {}
    for n in (50, 200):
        spec = parse_spec_text(
            "args:\n  xs: [" + ", ".join(["'f32[4]'"] * n) + "]\n", source="many.yaml"
        )
        old = capture_snapshot(load_target(f"{tmp_path / 'many.py'}:plain"), spec)
        new = capture_snapshot(load_target(f"{tmp_path / 'many.py'}:scaled"), spec)
        assert "@empty_mesh" in (old.text("stablehlo") or "")  # named once per argument
        for stage in ("jaxpr", "stablehlo", "hlo"):
            a, b = old.text(stage) or "", new.text(stage) or ""
            monkeypatch.setattr(structural._Side, "signature", counted)
            calls[0] = 0
            found = structural_diff(stage, diff_lines(a, b))
            monkeypatch.undo()
            work[stage, n] = calls[0]
            assert found.lines.changes  # the added multiply, whatever else
    for stage in ("jaxpr", "stablehlo", "hlo"):
        assert work[stage, 200] <= 5 * work[stage, 50], (stage, work)  # 4x the arguments
