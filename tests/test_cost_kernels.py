"""GPU kernel events joined to their instructions (cost/kernels.py), on real compiled HLO.

Three stacked layers compiled here give three fusions that are the same computation up to
names, as a 96-block model gives 96; the kernel events are shaped as a GPU's CUDA graph
writes them (see tests/golden/h200_cuda_graph_trace.json for a real one).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

from jaxinspect import jaxapi
from jaxinspect.cost.kernels import kernel_name, module_kernel_names
from jaxinspect.cost.optimes import op_seconds
from jaxinspect.xla.hlotext import instruction_names, parse_module


@pytest.fixture(scope="module")
def stacked() -> str:
    def f(x: jax.Array, w: jax.Array) -> jax.Array:
        for _ in range(3):
            x = jnp.tanh(x @ w + 1.0)
        return x

    s = jax.ShapeDtypeStruct
    args = (s((8, 16), jnp.float32), s((16, 16), jnp.float32))
    compiled = jax.jit(f).trace(*args).lower().compile()
    return jaxapi.compiled_module_text(compiled, "this test")


def _launches(kernels: list[str], durations: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "ph": "X",
            "name": kernel,
            "ts": float(i),
            "dur": dur,
            "args": {"hlo_module": "jit_f", "hlo_op": "command_buffer_1"},
        }
        for i, (kernel, dur) in enumerate(zip(kernels, durations, strict=True))
    ]


def _layer_fusions(text: str) -> list[str]:
    """The three add+tanh fusions, in schedule order (the entry's printed order)."""
    entry = text[text.index("\nENTRY ") :]
    return [
        line.split(" = ")[0].strip().removeprefix("ROOT ").lstrip("%")
        for line in entry.splitlines()
        if "add_tanh_fusion" in line.split(" = ")[0]
    ]


def test_copies_of_one_computation_are_one_class(stacked: str) -> None:
    names = module_kernel_names(stacked)
    layers = _layer_fusions(stacked)
    assert len(layers) == 3
    for name in layers:
        assert names.named[kernel_name(name)] == name
        assert names.copies[kernel_name(name)] == tuple(layers)
    assert kernel_name("gemm_fusion_dot.13") == "gemm_fusion_dot_13"


def test_a_shared_kernel_s_launches_go_to_the_copies_in_schedule_order(stacked: str) -> None:
    # XLA compiled one kernel for the three layers and named it after the first: it runs
    # three times a program run, and the n-th launch is the n-th layer's.
    first, second, third = _layer_fusions(stacked)
    shared = kernel_name(first)
    events = _launches([shared] * 6, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0])  # two program runs
    seconds, runs, _ = op_seconds(events, "jit_f", calls=2, module_text=stacked)
    assert runs == 2
    assert seconds == pytest.approx({first: 1e-6, second: 2e-6, third: 3e-6})


def test_a_copy_with_its_own_kernel_keeps_it(stacked: str) -> None:
    first, second, third = _layer_fusions(stacked)
    kernels = [kernel_name(first), kernel_name(second), kernel_name(first)]
    # The third layer shares the first's kernel; the second has its own.
    seconds, _, _ = op_seconds(_launches(kernels, [1.0, 2.0, 3.0]), "jit_f", module_text=stacked)
    assert seconds == pytest.approx({first: 1e-6, second: 2e-6, third: 3e-6})


def test_a_kernel_no_instruction_explains_stays_with_the_graph(stacked: str) -> None:
    events = _launches(["sm90_xmma_gemm_f32f32"], [5.0])  # a library kernel (cuBLAS)
    seconds, _, _ = op_seconds(events, "jit_f", module_text=stacked)
    assert seconds == pytest.approx({"command_buffer_1": 5e-6})


def test_a_cpu_trace_names_its_instructions_and_is_read_as_it_is(stacked: str) -> None:
    first = _layer_fusions(stacked)[0]
    events = _launches([first], [4.0])
    events[0]["args"]["hlo_op"] = first
    seconds, _, _ = op_seconds(events, "jit_f", module_text=stacked)
    assert seconds == pytest.approx({first: 4e-6})


def test_the_instruction_names_are_those_the_parse_gives(stacked: str) -> None:
    parsed = {i.name for c in parse_module(stacked).computations for i in c.instructions}
    assert instruction_names(stacked) == parsed
    assert module_kernel_names(stacked).instructions == parsed
