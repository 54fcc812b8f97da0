"""The spec grammar: leaves, pytrees, statics, and a clean SpecError for every malformed input."""

from __future__ import annotations

import contextlib

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxinspect.errors import ExitCode, SpecError
from jaxinspect.inputs.leaves import LeafSpec, parse_leaf
from jaxinspect.inputs.spec import (
    DictNode,
    ListNode,
    Spec,
    load_spec,
    parse_arg_options,
    parse_spec_text,
)


def parse(text: str) -> Spec:
    return parse_spec_text(text, source="spec.yaml")


@pytest.mark.parametrize(
    ("text", "dtype", "shape"),
    [
        ("f32[128,784]", "float32", (128, 784)),
        ("bf16[]", "bfloat16", ()),
        ("f16[ 2 , 3 ]", "float16", (2, 3)),
        ("i8[4]", "int8", (4,)),
        ("u32[1]", "uint32", (1,)),
        ("bool[3]", "bool", (3,)),
        ("c64[2]", "complex64", (2,)),
        ("float32[5]", "float32", (5,)),
        ("int4[8]", "int4", (8,)),
        ("key[]", "key", ()),
        ("key[4]", "key", (4,)),
        ("f32[0]", "float32", (0,)),
    ],
)
def test_leaf_grammar(text, dtype, shape):
    assert parse_leaf(text, where="x") == LeafSpec(dtype, shape)


def test_mapping_pytree_long_form_and_static():
    spec = parse(
        """
args:
  params:
    w: f32[784,256]
    b: {shape: [256], dtype: float32}
    layers: ['f32[2]', {k: 'i32[]'}]
  x: f32[128,784]
static:
  activation: relu
  dims: [1, 2]
"""
    )
    (pname, params), (xname, x) = spec.args
    assert (pname, xname) == ("params", "x")
    assert isinstance(params, DictNode)
    assert dict(params.items)["b"] == LeafSpec("float32", (256,))
    layers = dict(params.items)["layers"]
    assert isinstance(layers, ListNode)
    assert layers.items[1] == DictNode((("k", LeafSpec("int32", ())),))
    assert x == LeafSpec("float32", (128, 784))
    # Static lists become tuples: jit needs hashable static arguments.
    assert spec.static == (("activation", "relu"), ("dims", (1, 2)))
    assert not spec.positional
    assert spec.input_bytes == 4 * (784 * 256 + 256 + 2 + 1 + 128 * 784)


def test_list_form_is_positional():
    spec = parse("args: ['f32[3]', 'f32[3]']")
    assert spec.positional
    assert [name for name, _ in spec.args] == [None, None]


def test_yaml_numbers_are_weak_typed_scalars():
    spec = parse("args:\n  lr: 0.1\n  n: 3\n  flag: true")
    leaves = dict(spec.args)
    assert leaves["lr"] == LeafSpec("float32", (), weak_type=True)
    assert leaves["n"] == LeafSpec("int32", (), weak_type=True)
    assert leaves["flag"] == LeafSpec("bool", ())


def test_64bit_leaf_turns_on_x64_only_when_present():
    assert parse("args:\n  x: f64[2]").needs_x64
    assert parse("args: {x: {shape: [2], dtype: int64}}").needs_x64
    assert not parse("args:\n  x: f32[2]\n  k: key[2]").needs_x64


def test_arg_options():
    spec = parse_arg_options(["x=f32[8,4]", "k=key[]"])
    assert spec.args == (("x", LeafSpec("float32", (8, 4))), ("k", LeafSpec("key", ())))
    assert spec.source == "--arg"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("args:\n  x: f33[2]", "spec.yaml: args.x: unknown dtype 'f33' (did you mean f32"),
        ("args:\n  x: f32[-1]", "spec.yaml: args.x: dimension -1 is negative"),
        ("args:\n  x: f32[2.5]", "spec.yaml: args.x: dimension 2.5 is fractional"),
        ("args:\n  x: f32[a]", "spec.yaml: args.x: dimension 'a' is not an integer"),
        ("args:\n  x: f32", "spec.yaml: args.x: 'f32' is not a leaf; write DTYPE[DIMS]"),
        ("args:\n  p:\n    w: ['f32[2]', f64]", "spec.yaml: args.p.w[1]: 'f64' is not a leaf"),
        ("args: {x: {shape: [2]}}", "spec.yaml: args.x: a long-form leaf needs both"),
        ("args: {x: {shape: [2], dtype: f32, sharding: x}}", "expected one entry per dimension"),
        ("args: {x: {shape: 2, dtype: f32}}", "args.x.shape: expected a list of dims"),
        ("args: {x: {shape: [1.5], dtype: f32}}", "args.x.shape: dimension 1.5 is fractional"),
        ("args: {x: null}", "spec.yaml: args.x: expected a leaf like f32[8,4]"),
        ("arg:\n  x: f32[2]", "spec.yaml: unknown top-level key `arg` (did you mean args?)"),
        ("static: {a: 1}", "spec.yaml: missing top-level key `args`"),
        ("args: 3", "spec.yaml: args must be a mapping by parameter name or a list"),
        ("- f32[2]", "spec.yaml: the spec must be a mapping"),
        ("", "spec.yaml: the spec is empty"),
        ("args:\n  x: f32[2]\nstatic: {x: 1}", "`x` is given both under `args` and under `static`"),
        ("args:\n  x: f32[2]\nstatic: {m: {a: 1}}", "static.m: static values must be hashable"),
        ("args:\n  x: f32[2]\nstatic: [1]", "spec.yaml: static must be a mapping"),
        ("args:\n  1x: f32[2]", "args: '1x' is not a valid parameter name"),
        ("args:\n  x: f32[2]\nmesh: {data: 0}", "mesh.data: the size must be a positive integer"),
    ],
)
def test_malformed_specs_name_the_file_and_key(text, message):
    with pytest.raises(SpecError) as info:
        parse(text)
    assert message in info.value.message
    assert info.value.exit_code is ExitCode.USAGE_ERROR


def test_yaml_syntax_error_names_line_and_column():
    with pytest.raises(SpecError, match=r"^spec.yaml:2:\d+: YAML syntax error") as info:
        parse("args:\n  x: [f32[2], f32[3]]\n")
    assert "quote leaves" in (info.value.hint or "")


def test_load_spec_missing_file(tmp_path):
    with pytest.raises(SpecError, match="nope.yaml: spec file not found"):
        load_spec(tmp_path / "nope.yaml")


def test_yaml_is_loaded_safely(tmp_path):
    # A python/object tag would run code under yaml.load; safe_load must refuse it.
    path = tmp_path / "evil.yaml"
    path.write_text("args: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(SpecError, match="evil.yaml:1:7: YAML tag !!python/object/apply"):
        load_spec(path)


def test_bad_arg_options():
    with pytest.raises(SpecError, match="expected NAME=DTYPE"):
        parse_arg_options(["x"])
    with pytest.raises(SpecError, match="`x` is given twice"):
        parse_arg_options(["x=f32[1]", "x=f32[2]"])
    with pytest.raises(SpecError, match="--arg x: unknown dtype"):
        parse_arg_options(["x=q9[1]"])


# Property tests: whatever YAML or leaf string comes in, the loader returns a Spec or raises
# SpecError, never another exception.
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_leafish = st.from_regex(r"[a-z0-9_]{0,6}\[[-0-9., a-z]{0,10}\]", fullmatch=True)
_yaml_values = st.recursive(
    _scalars | _leafish,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)
    ),
    max_leaves=12,
)
_documents = (
    st.dictionaries(
        st.sampled_from(["args", "static", "cases", "arg", "x"]) | st.text(max_size=5),
        _yaml_values,
        max_size=3,
    )
    | _yaml_values
)


@settings(max_examples=300, deadline=None)
@given(_documents)
def test_any_yaml_document_gives_spec_or_spec_error(document):
    text = yaml.safe_dump(document)
    try:
        spec = parse(text)
    except SpecError as exc:
        assert exc.message.startswith("spec.yaml")
    else:
        assert isinstance(spec, Spec)
        for leaf in spec.leaves():
            assert all(isinstance(d, int) and d >= 0 for d in leaf.shape)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30) | _leafish)
def test_any_leaf_string_gives_leaf_or_spec_error(text):
    try:
        leaf = parse_leaf(text, where="x")
    except SpecError as exc:
        assert exc.message.startswith("x: ")
    else:
        assert all(d >= 0 for d in leaf.shape)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_gives_spec_or_spec_error(text):
    with contextlib.suppress(SpecError):
        parse(text)
