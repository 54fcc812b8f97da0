"""Per-op costs reused across identical layers equal XLA's figures for each instruction alone."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

from jaxinspect import jaxapi
from jaxinspect.xla.breakdown import analyse_module
from jaxinspect.xla.hlotext import HloText, parse_module
from jaxinspect.xla.opcache import OpCostCache, canonical_names
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.xlacost import UncostedError, XlaCost, module_cost, wrap_instruction

LAYERS = 4


def _layer(w: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    h = jnp.tanh(x @ w + b)
    return x + h * jax.nn.softmax(h, axis=-1)


def _stack(params: list[tuple[jax.Array, jax.Array]], x: jax.Array) -> jax.Array:
    for w, b in params:  # unrolled: one copy of the layer per entry
        x = _layer(w, b, x)
    return jnp.sum(x, axis=0)


@functools.cache
def _module() -> tuple[str, object]:
    """The optimized module text of four identical layers and its backend client."""
    params = [(jnp.ones((32, 32)), jnp.ones((32,))) for _ in range(LAYERS)]
    compiled = jax.jit(_stack).trace(params, jnp.ones((8, 32))).lower().compile()
    module = jaxapi.optimized_hlo_module(compiled, "the test")
    text = jaxapi.hlo_module_text(
        module, large_constants=True, metadata=True, control_dependencies=False
    )
    return text, jaxapi.executable_client(compiled)


def _fresh(hlo: HloText, client: object, comp_name: str, name: str) -> XlaCost | None:
    """XLA's figure for one instruction wrapped and parsed on its own (no reuse)."""
    comp = hlo.computation(comp_name)
    try:
        return module_cost(client, wrap_instruction(hlo, comp, comp.instruction(name)))
    except UncostedError:
        return None


def test_every_op_figure_equals_a_fresh_per_instruction_analysis():
    text, client = _module()
    program, _ = analyse_module(text, client, UserCode(()))
    hlo = parse_module(text)
    assert len(program.ops) > 4 * LAYERS
    for op in program.ops:
        assert op.per_run == _fresh(hlo, client, op.computation, op.name), op.name


def test_every_fusion_share_equals_a_fresh_per_instruction_split():
    text, client = _module()
    program, _ = analyse_module(text, client, UserCode(()))
    hlo = parse_module(text)
    split = [op for op in program.ops if op.shares]
    assert len(split) >= LAYERS
    for op in split:
        fused = hlo.computation(
            str(hlo.computation(op.computation).instruction(op.name).callee("calls"))
        )
        fresh = {s.instruction: _fresh(hlo, client, fused.name, s.instruction) for s in op.shares}
        flops = sum(c.flops for c in fresh.values() if c is not None)
        for share in op.shares:
            cost = fresh[share.instruction]
            assert cost is not None
            assert share.flops_fraction == (cost.flops / flops if flops else 0.0)


def test_identical_layers_are_costed_once():
    text, client = _module()
    hlo = parse_module(text)
    cache = OpCostCache(hlo, client)
    entry = [i for i in hlo.entry.instructions if i.opcode != "parameter"]
    for instr in entry:
        cache.cost(hlo.entry, instr)
    assert cache.costed + cache.reused == len(entry)
    # The layers' instructions differ only in names: XLA costs one layer, plus the constant
    # and the final sum outside the layers; every other layer reuses those figures.
    assert cache.costed <= len(entry) // LAYERS + 2


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("%add.1 = f32[2] add(%p.0, %p.0)", "%add.9 = f32[2] add(%q.3, %q.3)", True),
        ("%add.1 = f32[2] add(%p.0, %p.1)", "%add.9 = f32[2] add(%q.3, %q.3)", False),
        ("%add.1 = f32[2] add(%p.0, %p.1)", "%add.1 = f32[3] add(%p.0, %p.1)", False),
        ("%r = f32[] reduce(%x), to_apply=%sum.1", "%s = f32[] reduce(%y), to_apply=%sum.7", True),
    ],
)
def test_canonical_names_equal_exactly_for_renamings(a, b, same):
    assert (canonical_names(a) == canonical_names(b)) is same
