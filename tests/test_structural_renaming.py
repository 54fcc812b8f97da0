"""The structural diff never shows a program that never existed (issue #26, finding 6).

Whatever the pairing of values finds, the old side a structural diff shows must be the old
text under a bijective renaming: every line reads the same once names are blanked, and one
old name always becomes one shown name and no two old names become the same one. The names
are read here with patterns of this file's own, not the diff's parser. Checked on every
sample program's stored texts (edited at random, renamed, and against each other) and on
200 random programs (compositions of jax.numpy operations) each diffed with a random edit
of itself, in all three stages.
"""

from __future__ import annotations

import importlib.util
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from test_structural_diff import RENAMERS

from conftest import SAMPLES
from jaxinspect.snapshot.normalize import normalize_hlo, normalize_jaxpr, normalize_stablehlo
from jaxinspect.textdiff.linediff import diff_lines
from jaxinspect.textdiff.structural import structural_diff

STAGES = ("jaxpr", "stablehlo", "hlo")

#: Names as each stage prints them (HLO parameters in a computation's header are bare).
_NAME = {
    "hlo": re.compile(r"%[\w.\-]+"),
    "stablehlo": re.compile(r"[%@][\w.\-$]+"),
    # Any word but a primitive (after ``= ``) and a parameter's key (``integer_pow[y=3]``):
    # other words (``float32``, ``relu`` in ``name=relu``) map to themselves, so a variable
    # renamed to one of them breaks the bijection.
    "jaxpr": re.compile(r"(?<![\w.])(?<!= )[a-z_][a-z_0-9]*(?![\w=])"),
}
_HLO_HEADER = re.compile(r"^(?:ENTRY )?%[\w.\-]+ \(.*\{$")
_HLO_PARAM = re.compile(r"(?<=[(,] )[\w.\-]+(?=: )|(?<=\()[\w.\-]+(?=: )")


def _names(stage: str, line: str) -> list[tuple[int, int, str]]:
    found = [(m.start(), m.end(), m.group()) for m in _NAME[stage].finditer(line)]
    if stage == "hlo" and _HLO_HEADER.match(line):
        found += [(m.start(), m.end(), m.group()) for m in _HLO_PARAM.finditer(line)]
    return sorted(found)


def _blanked(line: str, names: list[tuple[int, int, str]]) -> str:
    out, at = [], 0
    for start, end, _ in names:
        out += [line[at:start], "\0"]
        at = end
    return "".join(out) + line[at:]


def renaming_problems(stage: str, original: str, shown: str) -> list[str]:
    """Why ``shown`` is not ``original`` under a bijective renaming (empty: it is)."""
    a, b = original.split("\n"), shown.split("\n")
    if len(a) != len(b):
        return [f"{len(a)} lines became {len(b)}"]
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    problems = []
    for number, (x, y) in enumerate(zip(a, b, strict=True), 1):
        nx, ny = _names(stage, x), _names(stage, y)
        if _blanked(x, nx) != _blanked(y, ny):
            problems.append(f"line {number} reads otherwise: {x!r} -> {y!r}")
            continue
        for (*_, p), (*_, q) in zip(nx, ny, strict=True):
            if forward.setdefault(p, q) != q:
                problems.append(f"line {number}: {p} shown as {forward[p]} and as {q}")
            if backward.setdefault(q, p) != p:
                problems.append(f"line {number}: {backward[q]} and {p} both shown as {q}")
    return problems


def assert_old_side_is_old_program(stage: str, old: str, new: str) -> None:
    result = structural_diff(stage, diff_lines(old, new))
    problems = renaming_problems(stage, diff_lines(old, new).a, result.lines.a)
    assert not problems, "\n".join(problems[:5])
    assert result.lines.b == diff_lines(old, new).b  # the new side is shown as it is


def test_the_check_rejects_a_program_that_never_existed() -> None:
    """The case of the finding: ``add c e`` shown as ``add e e``."""
    old = "\n".join(
        (
            "{ lambda ; a:f32[]. let",
            "    c:f32[] = sin a",
            "    e:f32[] = cos a",
            "    f:f32[] = add c e",
            "  in (f,) }",
        )
    )
    assert renaming_problems("jaxpr", old, old.replace("add c e", "add e e"))
    assert renaming_problems("jaxpr", old, old.replace("c:f32[] = sin", "e:f32[] = sin"))
    assert not renaming_problems("jaxpr", old, re.sub(r"\bc\b", "q", old))


# --- sample programs ------------------------------------------------------------------------

_SAMPLE_TARGETS = [
    ("simple.py:scale_shift", "simple.yaml", None),
    ("linreg.py:update_params", "linreg.yaml", None),
    ("linreg.py:hessian", "linreg_hessian.yaml", None),
    ("mlp.py:predict", "mlp.yaml", None),
    ("cholesky.py:factor", "cholesky.yaml", None),
    ("rnn.py:run", "rnn.yaml", None),
    ("transformer.py:block", "transformer.yaml", None),
    ("transformer_stack.py:stack", "transformer_stack.yaml", None),
    ("sharded.py:train_step", "sharded_dp.yaml", None),
    ("train_equinox.py:train_step", "train_equinox.yaml", "equinox"),
    ("train_flax.py:train_step", "train_flax.yaml", "flax"),
    ("train_nnx.py:train_step", "train_nnx.yaml", "flax"),
]


@pytest.fixture(scope="module")
def sample_texts() -> dict[str, dict[str, str]]:
    """Each available sample target's stored stage texts, as a snapshot holds them."""
    from jaxinspect.inputs.spec import load_spec
    from jaxinspect.inputs.target import load_target
    from jaxinspect.snapshot.capture import capture_snapshot

    out = {}
    for target, spec, needs in _SAMPLE_TARGETS:
        if needs is not None and importlib.util.find_spec(needs) is None:
            continue
        snap = capture_snapshot(load_target(f"{SAMPLES}/{target}"), load_spec(SAMPLES / spec))
        out[target] = {stage: snap.text(stage) or "" for stage in STAGES}
    return out


def _edited_text(text: str, rng: random.Random) -> str:
    """Lines deleted, repeated, swapped and their numbers changed: what a recompile shows."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.25:
            del lines[i]
        elif roll < 0.5:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif roll < 0.75:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), lines[i], count=1)
    return "\n".join(lines)


@pytest.mark.parametrize("stage", STAGES)
def test_sample_texts_old_side_is_the_old_program(
    sample_texts: dict[str, dict[str, str]], stage: str
) -> None:
    rng = random.Random(26)
    texts = [texts[stage] for texts in sample_texts.values()]
    assert len(texts) >= 9
    for k, text in enumerate(texts):
        assert_old_side_is_old_program(stage, text, RENAMERS[stage](text))
        assert_old_side_is_old_program(stage, text, _edited_text(RENAMERS[stage](text), rng))
        for _ in range(3):
            assert_old_side_is_old_program(stage, text, _edited_text(text, rng))
        assert_old_side_is_old_program(stage, text, texts[(k + 1) % len(texts)])


# --- random programs ------------------------------------------------------------------------

_UNARY = ("sin", "cos", "tanh", "exp", "abs", "relu", "gelu", "square", "neg")
_BINARY = ("add", "mul", "sub", "max", "matmul")


def _random_program(rng: random.Random) -> list[tuple[Any, ...]]:
    """Steps ``(op, operand indices..., constant)`` over values 0 (x) and 1 (w) and earlier."""
    steps: list[tuple[Any, ...]] = []
    for k in range(rng.randint(3, 12)):
        values = k + 2
        roll = rng.random()
        if roll < 0.45:
            steps.append((rng.choice(_UNARY), rng.randrange(values)))
        elif roll < 0.8:
            steps.append((rng.choice(_BINARY), rng.randrange(values), rng.randrange(values)))
        elif roll < 0.9:
            steps.append(("scale", rng.randrange(values), rng.choice((0.5, 2.0, 3.0))))
        else:
            steps.append(("rmsnorm", rng.randrange(values)))
    return steps


def _random_edit(steps: list[tuple[Any, ...]], rng: random.Random) -> list[tuple[Any, ...]]:
    """One edit: an operation replaced, a constant changed, a step added, or two neighbouring
    steps that do not depend on each other swapped (a reordering)."""
    out = list(steps)
    i = rng.randrange(len(out))
    op, *rest = out[i]
    roll = rng.random()
    if roll < 0.3:
        kinds = _UNARY if op in _UNARY else _BINARY if op in _BINARY else ()
        if kinds:
            out[i] = (rng.choice([k for k in kinds if k != op]), *rest)
        else:
            out[i] = ("tanh", rest[0])
    elif roll < 0.45:
        out[i] = ("scale", rest[0], rng.choice((0.25, 4.0)))
    elif roll < 0.7:  # a new step before step i: later steps' operands shift by one
        later = [_shifted(s, lambda v: v + 1 if v >= i + 2 else v) for s in out[i:]]
        out[i:] = [(rng.choice(_UNARY), rng.randrange(i + 2)), *later]
    elif i + 1 < len(out) and i + 2 not in _operands(out[i + 1]):
        swap = {i + 2: i + 3, i + 3: i + 2}
        out[i], out[i + 1] = out[i + 1], out[i]
        out[i + 2 :] = [_shifted(s, lambda v: swap.get(v, v)) for s in out[i + 2 :]]
    else:
        out.append(("sin", len(out) + 1))
    return out


def _operands(step: tuple[Any, ...]) -> list[int]:
    return [v for v in step[1:3] if type(v) is int]


def _shifted(step: tuple[Any, ...], move: Callable[[int], int]) -> tuple[Any, ...]:
    return (step[0], *(move(v) if type(v) is int else v for v in step[1:]))


def _valid(steps: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Operand indices clamped to values defined before each step."""
    out = []
    for k, (op, *rest) in enumerate(steps):
        clamped = [min(v, k + 1) if isinstance(v, int) else v for v in rest]
        out.append((op, *clamped))
    return out


def _function(steps: list[tuple[Any, ...]]) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    unary: dict[str, Callable[..., Any]] = {
        "sin": jnp.sin,
        "cos": jnp.cos,
        "tanh": jnp.tanh,
        "exp": jnp.exp,
        "abs": jnp.abs,
        "relu": jax.nn.relu,
        "gelu": jax.nn.gelu,
        "square": jnp.square,
        "neg": jnp.negative,
    }
    binary: dict[str, Callable[..., Any]] = {
        "add": jnp.add,
        "mul": jnp.multiply,
        "sub": jnp.subtract,
        "max": jnp.maximum,
        "matmul": jnp.matmul,
    }

    def f(x: Any, w: Any) -> Any:
        values = [x, w]
        for op, *rest in steps:
            if op in unary:
                values.append(unary[op](values[rest[0]]))
            elif op in binary:
                values.append(binary[op](values[rest[0]], values[rest[1]]))
            elif op == "scale":
                values.append(values[rest[0]] * rest[1])
            else:
                v = values[rest[0]]
                values.append(v / jnp.sqrt(jnp.mean(v**2) + 1e-6))
        return values[-1] + jnp.sum(values[2:][0])

    return f


def _stage_texts(steps: list[tuple[Any, ...]]) -> dict[str, str]:
    import jax
    import jax.numpy as jnp

    shape = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    traced = jax.jit(_function(steps)).trace(shape, shape)
    lowered = traced.lower()
    return {
        "jaxpr": normalize_jaxpr(str(traced.jaxpr)),
        "stablehlo": normalize_stablehlo(lowered.as_text()),
        "hlo": normalize_hlo(lowered.compile().as_text()),
    }


def test_random_programs_old_side_is_the_old_program() -> None:
    rng = random.Random(2026)
    checked = 0
    for _ in range(200):
        steps = _valid(_random_program(rng))
        old, new = _stage_texts(steps), _stage_texts(_random_edit(steps, rng))
        for stage in STAGES:
            assert_old_side_is_old_program(stage, old[stage], new[stage])
            checked += old[stage] != new[stage]
    assert checked > 300  # the edits change most texts
