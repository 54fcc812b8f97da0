"""Binding specs to signatures: positional where possible, statics, defaults, clear errors."""

from __future__ import annotations

import functools

import jax
import pytest

from jaxinspect.errors import SpecError
from jaxinspect.inputs.binding import bind_spec
from jaxinspect.inputs.spec import parse_spec_text


def spec(text):
    return parse_spec_text(text, source="s.yaml")


def f(params, x, activation="relu", *, scale=1.0):
    return x


def test_mapping_binds_positionally_in_signature_order():
    plan = bind_spec(f, spec("args:\n  x: f32[2]\n  params: f32[3]"), target="t")
    assert [(a.name, a.keyword) for a in plan.args] == [("params", False), ("x", False)]
    assert plan.static_argnums == ()


def test_statics_positional_and_keyword_only():
    plan = bind_spec(
        f,
        spec("args:\n  params: f32[3]\n  x: f32[2]\nstatic:\n  activation: tanh\n  scale: 2.0"),
        target="t",
    )
    assert plan.static_argnums == (2,)
    assert plan.static_argnames == ("scale",)
    assert [a.name for a in plan.dynamic] == ["params", "x"]


def test_skipped_default_makes_later_parameters_keywords():
    def g(x, y=1, z=2):
        return x

    plan = bind_spec(g, spec("args:\n  x: f32[2]\n  z: f32[2]"), target="t")
    assert [(a.name, a.keyword) for a in plan.args] == [("x", False), ("z", True)]


def test_grad_object_and_partial_have_signatures():
    def loss(w, x):
        return (w * x).sum()

    plan = bind_spec(jax.grad(loss), spec("args:\n  x: f32[2]\n  w: f32[2]"), target="t")
    assert [(a.name, a.keyword) for a in plan.args] == [("w", False), ("x", False)]
    part = functools.partial(loss, x=1.0)
    assert [a.name for a in bind_spec(part, spec("args:\n  w: f32[2]"), target="t").args] == ["w"]


def test_kwargs_accept_extra_names():
    def h(x, **options):
        return x

    plan = bind_spec(h, spec("args:\n  x: f32[2]\n  extra: f32[2]"), target="t")
    assert [(a.name, a.keyword) for a in plan.args] == [("x", False), ("extra", True)]


def test_missing_parameter():
    with pytest.raises(SpecError, match=r"s.yaml: missing parameter `x` of t\(params, x,") as info:
        bind_spec(f, spec("args:\n  params: f32[3]"), target="t")
    assert "Add `x:`" in (info.value.hint or "")


def test_unknown_parameter_suggests_close_names():
    with pytest.raises(
        SpecError,
        match=r"s.yaml: args.prams: t\(.*\) has no parameter `prams` "
        r"\(did you mean params\?\)",
    ):
        bind_spec(f, spec("args:\n  prams: f32[3]\n  x: f32[2]"), target="t")
    with pytest.raises(SpecError, match="static.activatio: .*did you mean activation"):
        bind_spec(
            f, spec("args:\n  params: f32[3]\n  x: f32[2]\nstatic:\n  activatio: 1"), target="t"
        )


def test_too_many_positional():
    def one(x):
        return x

    with pytest.raises(SpecError, match="args lists 2 arguments but t\\(x\\) takes 1"):
        bind_spec(one, spec("args: ['f32[1]', 'f32[1]']"), target="t")
