"""YAML within limits (issue #11 items 12, 13): alias bombs, depth, duplicate keys, int64 dims."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from jaxinspect.errors import SpecError, UsageError
from jaxinspect.inputs.cases import parse_spec_cases_text
from jaxinspect.inputs.leaves import INT64_MAX, parse_leaf
from jaxinspect.inputs.spec import parse_spec_text
from jaxinspect.inputs.yamlload import MAX_DEPTH_ENV, MAX_NODES_ENV, YamlLimits, load_yaml


def _bomb(levels: int, width: int = 10) -> str:
    """A "billion laughs" spec: ``width ** levels`` leaves from a few hundred bytes of text."""
    lines = ["l0: &l0 [" + ", ".join(["'f32[1]'"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    lines.append(f"args: [*l{levels - 1}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [6, 10])
def test_an_alias_bomb_fails_fast_with_little_memory(levels: int) -> None:
    tracemalloc.start()
    # CPU seconds of this thread, not wall time: other processes on a loaded machine (or other
    # pytest-xdist workers) do not count against it.
    start = time.thread_time()
    try:
        with pytest.raises(SpecError, match="more than 1,000,000 values once aliases are expanded"):
            parse_spec_text(_bomb(levels), source="bomb.yaml")
        elapsed = time.thread_time() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0  # the unbounded loader ran for minutes (issue: 150 s, 2.3 GB)
    assert peak < 20e6


def test_the_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_NODES_ENV, "10000000")
    doc = load_yaml(_bomb(6), source="bomb.yaml")
    assert isinstance(doc, dict) and len(doc["args"][0]) == 10  # shared nodes, not 10**6 copies
    monkeypatch.setenv(MAX_NODES_ENV, "50")
    with pytest.raises(SpecError, match="more than 50 values") as info:
        parse_spec_text("args: {x: [" + ", ".join(["'f32[1]'"] * 60) + "]}", source="s")
    assert info.value.hint is not None and MAX_NODES_ENV in info.value.hint
    monkeypatch.setenv(MAX_NODES_ENV, "lots")
    with pytest.raises(UsageError, match=f"{MAX_NODES_ENV}='lots': expected a positive integer"):
        parse_spec_text("args: {}", source="s")


def test_a_1000_layer_model_fits_the_default_limits() -> None:
    layer = "{wq: 'f32[64,64]', wk: 'f32[64,64]', wv: 'f32[64,64]', wo: 'f32[64,64]', " + (
        "mlp: {w1: 'f32[64,256]', b1: 'f32[256]', w2: 'f32[256,64]', b2: 'f32[64]'}, "
        "norm: {scale: 'f32[64]', bias: 'f32[64]'}}"
    )
    text = "args:\n  params:\n    layers:\n" + "".join(f"      - {layer}\n" for _ in range(1000))
    spec = parse_spec_text(text + "  x: 'f32[8,64]'\n", source="big.yaml")
    assert len(spec.leaves()) == 10 * 1000 + 1


def test_depth_is_bounded_while_composing(monkeypatch: pytest.MonkeyPatch) -> None:
    deep = "args:\n  x: " + "[" * 500 + "'f32[1]'" + "]" * 500 + "\n"
    with pytest.raises(SpecError, match=r"deep.yaml:2:\d+: nested deeper than 100 levels"):
        parse_spec_text(deep, source="deep.yaml")
    ok = "args:\n  x: " + "[" * 90 + "'f32[1]'" + "]" * 90 + "\n"
    assert len(parse_spec_text(ok, source="ok.yaml").leaves()) == 1
    monkeypatch.setenv(MAX_DEPTH_ENV, "20")
    with pytest.raises(SpecError, match="nested deeper than 20 levels"):
        parse_spec_text(ok, source="ok.yaml")


def test_aliases_count_toward_depth() -> None:
    text = "a: &a " + "[" * 60 + "1" + "]" * 60 + "\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n"
    with pytest.raises(SpecError, match="nested deeper than 100 levels once aliases are expanded"):
        load_yaml(text, source="s")


def test_recursive_aliases_are_refused() -> None:
    with pytest.raises(SpecError, match=r"s:1:8: alias \*a refers to a node that contains it"):
        load_yaml("a: &a [*a]\n", source="s")


def test_duplicate_keys_are_named_with_both_lines() -> None:
    text = "args:\n  x: f32[1]\n  y: f32[2]\n  x: f32[3]\n"
    with pytest.raises(SpecError, match=r"s.yaml:4:3: duplicate key 'x' \(first at line 2\)"):
        parse_spec_text(text, source="s.yaml")
    with pytest.raises(SpecError, match="duplicate key 'small'"):
        parse_spec_cases_text("cases:\n  small: {args: {}}\n  small: {args: {}}\n", source="c")


def test_merge_keys_may_still_be_overridden() -> None:
    doc = load_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n", source="s")
    assert doc == {"base": {"x": 1, "y": 2}, "other": {"x": 3, "y": 2}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 2001-02-30\n", "invalid YAML value: day is out of range"),
        ("a: " + "9" * 5000 + "\n", "invalid YAML value: Exceeds the limit"),
        ("\x1f", "unacceptable character"),
        ("a: *nope\n", "s:1:4: found undefined alias 'nope'"),
        ("a: !!python/name:os.system x\n", "YAML tag !!python/name:os.system is not allowed"),
    ],
)
def test_values_yaml_cannot_build_are_spec_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        load_yaml(text, source="s", syntax_hint="a hint for syntax errors only")
    assert info.value.hint is None


def test_explicit_limits_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_NODES_ENV, "1")
    assert load_yaml("[1, 2, 3]", source="s", limits=YamlLimits(max_nodes=4)) == [1, 2, 3]


@pytest.mark.parametrize(
    ("leaf", "message"),
    [
        (f"f32[{INT64_MAX + 1}]", "does not fit in int64"),
        ("f32[1e30]", "does not fit in int64"),
        ("f32[inf]", "is not a number of elements"),
        ("f32[4294967296,4294967296]", "more elements than int64 can count"),
    ],
)
def test_dims_must_fit_int64(leaf: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_leaf(leaf, where="x")
    assert parse_leaf(f"f32[{INT64_MAX}]", where="x").shape == (INT64_MAX,)


def test_long_form_dims_must_fit_int64_too() -> None:
    text = f"args:\n  x: {{shape: [{INT64_MAX + 1}], dtype: float32}}\n"
    with pytest.raises(SpecError, match=r"s: args.x.shape: dimension \d+ does not fit in int64"):
        parse_spec_text(text, source="s")
