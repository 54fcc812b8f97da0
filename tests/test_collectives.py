"""Collectives found in real SPMD-partitioned programs on the test process's 8 CPU devices.

Counts, bytes, groups and mesh axes are checked against what each program must do, computed
in the test from its shapes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from conftest import SAMPLES
from jaxinspect import jaxapi
from jaxinspect.cost.collectives import MeshLayout, find_collectives

S = jax.ShapeDtypeStruct
LAYOUT = MeshLayout((("data", 4), ("model", 2)))


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return Mesh(np.array(jax.devices()[:8], dtype=object).reshape(4, 2), ("data", "model"))


def _summary(compiled: Any, layout: MeshLayout | None = LAYOUT) -> Any:
    module = jaxapi.optimized_hlo_module(compiled, "test")
    text = jaxapi.hlo_module_text(module, metadata=True, control_dependencies=False)
    return find_collectives(text, layout)


def _arg(mesh: Mesh, shape: tuple[int, ...], *spec: Any) -> Any:
    return S(shape, jnp.float32, sharding=NamedSharding(mesh, P(*spec)))


def test_split_contraction_is_one_all_reduce_over_model(mesh: Mesh) -> None:
    x = _arg(mesh, (256, 512), "data", "model")
    w = _arg(mesh, (512, 1024), "model", None)
    (item,) = _summary(jax.jit(jnp.matmul).lower(x, w).compile()).items
    assert (item.op, item.count, item.group_size, item.axes) == ("all-reduce", 1, 2, ("model",))
    assert item.bytes == 64 * 1024 * 4  # each device's 64x1024 f32 partial product
    assert item.groups == "{{0,1},{2,3},{4,5},{6,7}}"


def test_replicated_output_gathers_over_both_axes(mesh: Mesh) -> None:
    x = _arg(mesh, (256, 512), "data")
    w = _arg(mesh, (512, 1024), None, "model")
    out = NamedSharding(mesh, P())
    summary = _summary(jax.jit(jnp.matmul, out_shardings=out).lower(x, w).compile())
    gathers = {item.axes: item for item in summary.items}
    assert set(gathers) == {("data",), ("model",)}
    assert all(item.op == "all-gather" for item in summary.items)
    assert gathers[("data",)].group_size == 4 and gathers[("model",)].group_size == 2
    # The larger side of a gather is its result: the whole 256x1024 output at the end.
    assert max(item.bytes for item in summary.items) == 256 * 1024 * 4
    assert summary.total_bytes == sum(item.bytes for item in summary.items)


def test_loop_trip_counts_multiply_the_count(mesh: Mesh) -> None:
    rows = NamedSharding(mesh, P("data"))

    def shift(x: Any) -> Any:
        step = lambda i, a: jax.lax.with_sharding_constraint(jnp.roll(a, 1, axis=0), rows)  # noqa: E731
        return jax.lax.fori_loop(0, 5, step, x)

    compiled = jax.jit(shift).lower(_arg(mesh, (256, 512), "data")).compile()
    (item,) = _summary(compiled).items
    assert (item.op, item.count, item.axes) == ("collective-permute", 5, ("data",))
    assert item.bytes == 5 * 512 * 4  # one row of 512 f32 to the next device, five times


def test_shard_map_psum_and_psum_scatter(mesh: Mesh) -> None:
    def body(block: Any) -> Any:
        total = jax.lax.psum(block, "data")
        return jax.lax.psum_scatter(total, "model", scatter_dimension=1, tiled=True)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("data", None), out_specs=P(None, "model"))
    compiled = jax.jit(f).lower(S((64, 32), jnp.float32)).compile()
    by_op = {item.op: item for item in _summary(compiled).items}
    assert by_op["all-reduce"].axes == ("data",) and by_op["all-reduce"].group_size == 4
    assert by_op["reduce-scatter"].axes == ("model",) and by_op["reduce-scatter"].group_size == 2
    assert by_op["all-reduce"].bytes == 16 * 32 * 4  # each device's 16x32 block


def test_one_device_has_none() -> None:
    compiled = jax.jit(jnp.sin).lower(S((8,), jnp.float32)).compile()
    summary = _summary(compiled, None)
    assert summary.items == () and summary.total_bytes == 0


def test_stages_json_reports_them(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "stages",
        f"{SAMPLES / 'sharded.py'}:matmul",
        "-s",
        SAMPLES / "sharded_matmul.yaml",
        "--format",
        "json",
        "--no-execute",
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (item,) = doc["collectives"]
    assert item["op"] == "all-reduce" and item["axes"] == ["model"] and item["count"] == 1
    assert doc["communication_bytes"] == item["bytes"] == 64 * 1024 * 4
    single = run_cli(
        "stages",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        SAMPLES / "mlp.yaml",
        "--format",
        "json",
        "--no-execute",
    )
    assert json.loads(single.stdout)["collectives"] == []
