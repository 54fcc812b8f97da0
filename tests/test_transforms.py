"""--transform: each chain gives the jaxpr of the same composition written by hand in Python."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import jax
import pytest
from typer.testing import Result

from conftest import ROOT, sample
from jaxinspect.errors import UsageError
from jaxinspect.inputs.arrays import abstract_tree, build_call
from jaxinspect.inputs.binding import bind_spec
from jaxinspect.inputs.spec import parse_spec_text
from jaxinspect.inputs.target import load_target
from jaxinspect.inputs.transforms import parse_transform, parse_transforms
from jaxinspect.pipeline.placement import Placement
from jaxinspect.stages.runner import InspectOptions, run_inspection

LOSS = sample("linreg.py") + ":loss_fn"
SCHEMA = json.loads((ROOT / "jaxinspect/schemas/stages.schema.json").read_text())

BATCH = "args:\n  params: {w: 'f32[4]', b: 'f32[]'}\n  x: f32[8,4]\n  y: f32[8]\n"
PER_EXAMPLE = "args:\n  params: {w: 'f32[4]', b: 'f32[]'}\n  x: f32[8,4]\n  y: f32[8]\n"
PRIMALS = "[{w: 'f32[4]', b: 'f32[]'}, 'f32[8,4]', 'f32[8]']"
JVP = f"args:\n  primals: {PRIMALS}\n  tangents: {PRIMALS}\n"
VJP = f"args:\n  primals: {PRIMALS}\n  cotangent: f32[]\n"


def _loss(params: Any, x: Any, y: Any) -> Any:
    return load_target(LOSS).function(params, x, y)


def _jvp(primals: Any, tangents: Any) -> Any:
    return jax.jvp(_loss, tuple(primals), tuple(tangents))


def _vjp(primals: Any, cotangent: Any) -> Any:
    out, pullback = jax.vjp(_loss, *primals)
    return out, pullback(cotangent)


def _abstract_call(function: Callable[..., Any], spec: Any) -> tuple[list[Any], dict[str, Any]]:
    plan = bind_spec(function, spec, target="by hand")
    placement = Placement((jax.devices("cpu")[0],))
    return build_call(plan, lambda node: abstract_tree(node, placement))


policies = jax.checkpoint_policies

#: (--transform values, spec, the same composition by hand, the header it shows)
CHAINS: list[tuple[list[str], str, Callable[..., Any], str]] = [
    (["grad"], BATCH, jax.grad(_loss), "grad(loss_fn, argnums=0)"),
    (
        ["value_and_grad(argnums=(0, 1))"],
        BATCH,
        jax.value_and_grad(_loss, argnums=(0, 1)),
        "value_and_grad(loss_fn, argnums=(0, 1))",
    ),
    (
        ["grad", "vmap(in_axes=(None, 0, 0))"],
        PER_EXAMPLE,
        jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0)),
        "vmap(grad(loss_fn, argnums=0), in_axes=(None, 0, 0))",
    ),
    (
        ["vmap(in_axes=[None, 0, 0], out_axes=0, axis_size=8)"],
        PER_EXAMPLE,
        jax.vmap(_loss, in_axes=(None, 0, 0), out_axes=0, axis_size=8),
        "vmap(loss_fn, in_axes=(None, 0, 0), out_axes=0, axis_size=8)",
    ),
    (["jacfwd(argnums=1)"], BATCH, jax.jacfwd(_loss, argnums=1), "jacfwd(loss_fn, argnums=1)"),
    (["jacrev"], BATCH, jax.jacrev(_loss), "jacrev(loss_fn, argnums=0)"),
    (["hessian"], BATCH, jax.hessian(_loss), "hessian(loss_fn, argnums=0)"),
    (["jvp"], JVP, _jvp, "jvp(loss_fn)"),
    (["vjp"], VJP, _vjp, "vjp(loss_fn)"),
    (
        ["checkpoint(policy='dots_saveable')", "grad"],
        BATCH,
        jax.grad(jax.checkpoint(_loss, policy=policies.dots_saveable)),
        "grad(checkpoint(loss_fn, policy='dots_saveable'), argnums=0)",
    ),
    (
        ["checkpoint(prevent_cse=false)"],
        BATCH,
        jax.checkpoint(_loss, prevent_cse=False),
        "checkpoint(loss_fn, prevent_cse=False)",
    ),
]


# Ids from the --transform values alone: a function's repr holds its address, which differs
# between processes, and pytest-xdist needs every worker to collect the same ids.
@pytest.mark.parametrize(
    ("texts", "spec_text", "by_hand", "shown"), CHAINS, ids=[" ".join(c[0]) for c in CHAINS]
)
def test_chain_gives_the_hand_written_jaxpr(
    texts: list[str], spec_text: str, by_hand: Callable[..., Any], shown: str
) -> None:
    spec = parse_spec_text(spec_text, source="s.yaml")
    options = InspectOptions(sections=("jaxpr",), execute=False, transforms=parse_transforms(texts))
    report, artifacts = run_inspection(load_target(LOSS), spec, options)
    args, kwargs = _abstract_call(by_hand, spec)
    hand = jax.jit(by_hand).trace(*args, **kwargs)
    assert report.composition == f"jit({shown})"
    jaxpr = report.stage("jaxpr")
    assert jaxpr is not None
    assert jaxpr.text == str(hand.jaxpr)


def test_named_checkpoint_policy_is_built_with_its_names() -> None:
    spec = parse_spec_text(BATCH, source="s.yaml")
    text = "checkpoint(policy='save_only_these_names', names=('hidden',))"
    options = InspectOptions(
        sections=("jaxpr",), execute=False, transforms=parse_transforms([text])
    )
    report, _ = run_inspection(load_target(LOSS), spec, options)
    assert report.composition == (
        "jit(checkpoint(loss_fn, policy='save_only_these_names', names=('hidden',)))"
    )
    jaxpr = report.stage("jaxpr")
    assert jaxpr is not None
    assert "policy=SaveOnlyTheseNames(saveable_names=frozenset({'hidden'}))" in jaxpr.text


def test_options_parse_to_literals_without_eval() -> None:
    transform = parse_transform("value_and_grad(argnums=0, has_aux=true)")
    assert transform.options == (("argnums", 0), ("has_aux", True))
    assert parse_transform(" vmap(in_axes={'a': 0, 'b': None}) ").option("in_axes") == {
        "a": 0,
        "b": None,
    }
    assert parse_transform("vmap(in_axes=[None, [0, 1]])").option("in_axes") == (None, (0, 1))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gard", "--transform 'gard': unknown transform `gard` (did you mean grad?)"),
        ("grad(argnum=0)", "--transform 'grad(argnum=0)': grad has no option `argnum` (did you"),
        ("vmap(in_axis=0)", "vmap has no option `in_axis`"),
        ("grad(argnums=-1)", "grad: option `argnums`=-1: expected a non-negative integer"),
        ("grad(has_aux=1)", "grad: option `has_aux`=1: expected true or false"),
        ("vmap(in_axes='x')", "vmap: option `in_axes`='x': expected an integer axis"),
        ("vmap(axis_size=0)", "vmap: option `axis_size`=0: expected a positive integer"),
        ("grad(argnums=__import__('os'))", "grad: option `argnums` must be a literal"),
        ("grad(0)", "grad takes keyword options only"),
        ("grad(argnums=0, argnums=1)", "grad: option `argnums` is given twice"),
        ("grad(", "not valid syntax"),
        ("jax.grad", "expected NAME or NAME(key=value, ...)"),
        ("checkpoint(names=('a',))", "checkpoint: option `names` only goes with policy="),
        (
            "checkpoint(policy='save_only_these_names')",
            "checkpoint: option `names` is required by policy='save_only_these_names'",
        ),
    ],
)
def test_bad_transform_is_a_usage_error_naming_transform_and_option(
    text: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_transform(text)


def test_unknown_checkpoint_policy_is_a_usage_error() -> None:
    spec = parse_spec_text(BATCH, source="s.yaml")
    transforms = parse_transforms(["checkpoint(policy='dots_savable')"])
    options = InspectOptions(sections=("jaxpr",), execute=False, transforms=transforms)
    with pytest.raises(UsageError, match=r"unknown policy 'dots_savable' \(did you mean"):
        run_inspection(load_target(LOSS), spec, options)


def test_cli_header_and_json_show_the_composition(run_cli: Callable[..., Result]) -> None:
    args = ["--shapes", sample("linreg.yaml"), "-t", "grad", "-t", "vmap(in_axes=(None, 0, 0))"]
    # The spec describes the vmapped function: one leading batch axis on x and y.
    result = run_cli("stages", LOSS, *args, "--stage", "jaxpr", "-f", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    import jsonschema

    jsonschema.validate(document, SCHEMA)
    assert document["composition"] == "jit(vmap(grad(loss_fn, argnums=0), in_axes=(None, 0, 0)))"
    table = run_cli("stages", LOSS, *args, "--stage", "jaxpr")
    assert table.exit_code == 0, table.stderr
    assert "jit(vmap(grad(loss_fn, argnums=0), in_axes=(None, 0, 0)))" in table.stdout
    jaxpr = run_cli("jaxpr", LOSS, "--shapes", sample("linreg.yaml"), "--transform", "grad")
    assert jaxpr.exit_code == 0, jaxpr.stderr
    assert "dot_general" in jaxpr.stdout


def test_cli_bad_option_exits_2_without_traceback(run_cli: Callable[..., Result]) -> None:
    result = run_cli("stages", LOSS, "--shapes", sample("linreg.yaml"), "-t", "grad(argnum=1)")
    assert result.exit_code == 2
    assert "Error: --transform 'grad(argnum=1)': grad has no option `argnum`" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_function_failure_under_a_transform_exits_3(run_cli: Callable[..., Result]) -> None:
    # grad of a function with a vector output is the user's mistake, found while tracing.
    result = run_cli(
        "stages", sample("simple.py") + ":scale_shift", "--arg", "x=f32[4]", "-t", "grad"
    )
    assert result.exit_code == 3, result.stderr
    assert "scalar" in result.stderr
