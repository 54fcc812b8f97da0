"""Collectives found in real SPMD-partitioned programs on the test process's 8 CPU devices.

Counts, bytes, groups and mesh axes are checked against what each program must do, computed
in the test from its shapes. The async forms CPU never makes are read from GPU-style module
text that XLA itself parses, and from a TPU slice compiled through libtpu where it is installed.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from rich.console import Console

from conftest import SAMPLES
from jaxinspect import jaxapi
from jaxinspect.renderers.collectives import collectives_table, collectives_to_list
from jaxinspect.renderers.jsondoc import SCHEMAS_DIR
from jaxinspect.xla.collectivemodel import CollectiveSummary
from jaxinspect.xla.collectives import MeshLayout, compiled_collectives, find_collectives

S = jax.ShapeDtypeStruct
AXES = (("data", 4), ("model", 2))
LAYOUT = MeshLayout(AXES)
F32 = 4


def _line(marker: str) -> int:
    """The line of this file holding ``marker`` (where a collective is made)."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(marker))


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    return Mesh(np.array(jax.devices()[:8], dtype=object).reshape(4, 2), ("data", "model"))


def _summary(compiled: Any, layout: MeshLayout | None = LAYOUT) -> CollectiveSummary:
    module = jaxapi.optimized_hlo_module(compiled, "test")
    text = jaxapi.hlo_module_text(module, metadata=True, control_dependencies=False)
    return find_collectives(text, layout)


def _arg(mesh: Mesh, shape: tuple[int, ...], *spec: Any) -> Any:
    return S(shape, jnp.float32, sharding=NamedSharding(mesh, P(*spec)))


def _loss(params: Any, x: Any, y: Any) -> Any:
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


def _train_step(params: Any, x: Any, y: Any) -> Any:
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


def test_data_parallel_step_all_reduces_the_gradients_once() -> None:
    mesh = Mesh(np.array(jax.devices()[:8], dtype=object), ("data",))
    shapes = {"w1": (16, 32), "b1": (32,), "w2": (32, 4), "b2": (4,)}
    params = {k: _arg(mesh, s) for k, s in shapes.items()}  # replicated
    batch = (_arg(mesh, (64, 16), "data"), _arg(mesh, (64, 4), "data"))
    compiled = jax.jit(_train_step).lower(params, *batch).compile()
    ids = tuple(d.id for d in mesh.devices.flat)
    (item,) = compiled_collectives(compiled, (("data", 8),), ids).items
    assert (item.op, item.count, item.group_size, item.axes) == ("all-reduce", 1, 8, ("data",))
    assert item.groups == "mesh['axis_0'=8,'axis_1'=1] {'axis_0'}"
    # Every gradient and the loss, combined by XLA into one tuple all-reduce.
    assert item.bytes == sum(math.prod(s) for s in shapes.values()) * F32 + F32
    assert not item.is_async and not item.trip_count_unknown


def test_split_contraction_is_one_all_reduce_over_model(mesh: Mesh) -> None:
    x = _arg(mesh, (256, 512), "data", "model")
    w = _arg(mesh, (512, 1024), "model", None)
    (item,) = _summary(jax.jit(jnp.matmul).lower(x, w).compile()).items
    assert (item.op, item.count, item.group_size, item.axes) == ("all-reduce", 1, 2, ("model",))
    assert item.bytes == 64 * 1024 * F32  # each device's 64x1024 f32 partial product
    assert item.groups == "{{0,1},{2,3},{4,5},{6,7}}"


def test_replicated_output_gathers_over_both_axes(mesh: Mesh) -> None:
    x = _arg(mesh, (256, 512), "data")
    w = _arg(mesh, (512, 1024), None, "model")
    out = NamedSharding(mesh, P())
    summary = _summary(jax.jit(jnp.matmul, out_shardings=out).lower(x, w).compile())
    rows = [(c.op, c.count, c.bytes, c.groups, c.group_size, c.axes) for c in summary.items]
    # The larger side of a gather is its result: the whole 256x1024 output over data, after
    # the 64x1024 block of each data row is gathered over model.
    assert rows == [
        ("all-gather", 1, 256 * 1024 * F32, "mesh['axis_0'=4,'axis_1'=2] {'axis_0'}", 4, ("data",)),
        ("all-gather", 1, 64 * 1024 * F32, "mesh['axis_0'=4,'axis_1'=2] {'axis_1'}", 2, ("model",)),
    ]
    assert summary.total_bytes == (256 + 64) * 1024 * F32 and summary.total_count == 2


def test_a_sharded_program_without_communication_has_an_empty_summary(mesh: Mesh) -> None:
    x = _arg(mesh, (256, 512), "data")
    w = _arg(mesh, (512, 1024))  # replicated: each device multiplies its rows alone
    summary = _summary(jax.jit(jnp.matmul).lower(x, w).compile())
    assert summary == CollectiveSummary(())
    assert (summary.total_bytes, summary.total_count, summary.lower_bound) == (0, 0, False)
    assert collectives_to_list(summary) == []


def test_one_device_has_none() -> None:
    compiled = jax.jit(jnp.sin).lower(S((8,), jnp.float32)).compile()
    assert _summary(compiled, None).items == ()
    assert compiled_collectives(compiled).items == ()


def _three_collectives(block: Any) -> Any:
    total = jax.lax.psum(block, ("data", "model"))  # psum-line
    scattered = jax.lax.psum_scatter(total, "model", scatter_dimension=1, tiled=True)
    ring = [(0, 1), (1, 2), (2, 3), (3, 0)]
    return scattered, jax.lax.ppermute(total, "data", ring)


@pytest.fixture(scope="module")
def shard_mapped(mesh: Mesh) -> CollectiveSummary:
    specs = (P(None, "model"), P("data", "model"))
    f = jax.shard_map(_three_collectives, mesh=mesh, in_specs=P("data", "model"), out_specs=specs)
    return _summary(jax.jit(f).lower(S((64, 32), jnp.float32)).compile())


def test_shard_map_psum_psum_scatter_and_ppermute(shard_mapped: CollectiveSummary) -> None:
    block = (64 // 4) * (32 // 2) * F32  # each device's block of the 64x32 input
    by_op = {c.op: c for c in shard_mapped.items}
    assert set(by_op) == {"all-reduce", "reduce-scatter", "collective-permute"}
    psum, scatter = by_op["all-reduce"], by_op["reduce-scatter"]
    permute = by_op["collective-permute"]
    assert (psum.groups, psum.group_size, psum.axes) == (
        "{{0,1,2,3,4,5,6,7}}",
        8,
        ("data", "model"),
    )
    assert (scatter.groups, scatter.axes) == ("{{0,1},{2,3},{4,5},{6,7}}", ("model",))
    # Along data: device (i, m) sends to (i+1 mod 4, m); pairs of logical ids 2 apart.
    assert permute.groups == "{{0,2},{2,4},{4,6},{6,0},{1,3},{3,5},{5,7},{7,1}}"
    assert (permute.group_size, permute.axes) == (2, ("data",))
    # The reduce-scatter's larger side is its operand, the whole summed block.
    assert [c.bytes for c in (psum, scatter, permute)] == [block, block, block]
    assert all(c.count == 1 and not c.is_async for c in shard_mapped.items)
    assert shard_mapped.total_bytes == 3 * block


def test_rows_name_the_source_line(shard_mapped: CollectiveSummary) -> None:
    psum = next(c for c in shard_mapped.items if c.op == "all-reduce")
    assert psum.source is not None
    assert (psum.source.file, psum.source.line) == (__file__, _line("# psum-line"))
    assert psum.source.function == "_three_collectives"
    assert psum.op_name is not None and psum.op_name.endswith("psum_invariant")


def test_loop_trip_counts_multiply_the_count(mesh: Mesh) -> None:
    rows = NamedSharding(mesh, P("data"))

    def shift(x: Any) -> Any:
        step = lambda i, a: jax.lax.with_sharding_constraint(jnp.roll(a, 1, axis=0), rows)  # noqa: E731
        return jax.lax.fori_loop(0, 5, step, x)

    compiled = jax.jit(shift).lower(_arg(mesh, (256, 512), "data")).compile()
    (item,) = _summary(compiled).items
    assert (item.op, item.count, item.axes) == ("collective-permute", 5, ("data",))
    assert item.bytes == 5 * 512 * F32  # one row of 512 f32 to the next device, five times


def test_psum_in_a_fori_loop_counts_each_trip(mesh: Mesh) -> None:
    def body(block: Any) -> Any:
        return jax.lax.fori_loop(0, 3, lambda i, a: a + jax.lax.psum(a, "data"), block)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model"))
    (item,) = _summary(jax.jit(f).lower(S((8, 8), jnp.float32)).compile()).items
    assert (item.op, item.count, item.axes, item.groups) == (
        "all-reduce",
        3,
        ("data",),
        "{{0,2,4,6},{1,3,5,7}}",
    )
    assert item.bytes == 3 * (8 // 4) * (8 // 2) * F32 and not item.trip_count_unknown


def test_an_unknown_trip_count_is_flagged_not_guessed(mesh: Mesh) -> None:
    def body(block: Any) -> Any:
        grow = lambda a: a + jax.lax.psum(a, "model")  # noqa: E731
        return jax.lax.while_loop(lambda a: jnp.sum(a) < 100.0, grow, block)

    f = jax.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data", "model"))
    summary = _summary(jax.jit(f).lower(S((8, 8), jnp.float32)).compile())
    (item,) = summary.items
    assert (item.op, item.count, item.trip_count_unknown) == ("all-reduce", 1, True)
    assert item.bytes == (8 // 4) * (8 // 2) * F32  # one execution: a lower bound
    assert summary.lower_bound
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(collectives_table(summary))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "  1+  " in text and "(a lower bound)" in text


def test_mesh_device_order_places_logical_ids() -> None:
    # Logical ids 3 and 1 (a group as XLA prints it) on a 4x2 mesh: by position they differ
    # along data; if the program's devices 0..7 sit in the mesh as devices 3,1,7,5,0,2,6,4,
    # ids 3 and 1 are mesh positions 0 and 1, which differ along model.
    group = ((3, 1),)
    assert MeshLayout(AXES).axes_spanned(group) == ("data",)
    ordered = MeshLayout.of(AXES, (3, 1, 7, 5, 0, 2, 6, 4), tuple(range(8)))
    assert ordered.positions == (4, 1, 5, 0, 7, 3, 6, 2)
    assert ordered.axes_spanned(group) == ("model",)
    assert ordered.axes_spanned(((0, 9),)) is None  # no logical id 9
    outside = MeshLayout.of(AXES, tuple(range(8)), (0, 1, 2, 3, 4, 5, 6, 12))
    assert outside.axes_spanned(((6, 7),)) is None  # device 12 is not in the mesh
    with pytest.raises(ValueError, match="4 device ids for a mesh"):
        MeshLayout.of(AXES, (0, 1, 2, 3), tuple(range(8)))


def test_a_mesh_of_reordered_devices_names_the_same_axes() -> None:
    devices = [jax.devices()[i] for i in (3, 1, 7, 5, 0, 2, 6, 4)]
    mesh = Mesh(np.array(devices, dtype=object).reshape(4, 2), ("data", "model"))
    x, w = _arg(mesh, (256, 512), "data", "model"), _arg(mesh, (512, 1024), "model")
    compiled = jax.jit(jnp.matmul).lower(x, w).compile()
    ids = tuple(d.id for d in mesh.devices.flat)
    (item,) = compiled_collectives(compiled, AXES, ids).items
    assert item.axes == ("model",) and item.groups == "{{0,1},{2,3},{4,5},{6,7}}"


#: A module as XLA for GPU prints one: an async all-gather, a reduce-scatter wrapped in an
#: async computation (``calls=`` on both its start and its done), one all-reduce's groups
#: spelled two ways, ``{}`` (every device), and mesh form over devices in another order
#: (ids 0,2,1,3 on a 1x2x2 mesh: along axis_2, groups {0,2} and {1,3}).
GPU_LIKE = """\
HloModule gpu_like, entry_computation_layout={(f32[8]{0})->f32[4]{0}}, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}

%wrapped_reduce_scatter (p: f32[8]) -> f32[4] {
  %p = f32[8]{0} parameter(0)
  ROOT %reduce-scatter.1 = f32[4]{0} reduce-scatter(f32[8]{0} %p), channel_id=2, \
replica_groups={{0,1},{2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[8]) -> f32[4] {
  %x = f32[8]{0} parameter(0)
  %all-gather-start = (f32[8]{0}, f32[16]{0}) all-gather-start(f32[8]{0} %x), channel_id=1, \
replica_groups=[2,2]<=[4], dimensions={0}, use_global_device_ids=true
  %all-gather-done = f32[16]{0} all-gather-done((f32[8]{0}, f32[16]{0}) %all-gather-start)
  %all-reduce = f32[8]{0} all-reduce(f32[8]{0} %x), channel_id=3, \
replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %all-reduce.1 = f32[8]{0} all-reduce(f32[8]{0} %all-reduce), channel_id=4, \
replica_groups=[2,2]<=[4], use_global_device_ids=true, to_apply=%add
  %all-reduce.2 = f32[8]{0} all-reduce(f32[8]{0} %all-reduce.1), channel_id=5, \
replica_groups={}, use_global_device_ids=true, to_apply=%add
  %all-reduce.3 = f32[8]{0} all-reduce(f32[8]{0} %all-reduce.2), channel_id=6, \
replica_groups=mesh['axis_0'=1,'axis_1'=2,'axis_2'=2], device_ids=([2,2]T(1,0)) {'axis_2'}, \
use_global_device_ids=true, to_apply=%add
  %reduce-scatter-start = ((f32[8]{0}), f32[4]{0}) async-start(f32[8]{0} %all-reduce.3), \
calls=%wrapped_reduce_scatter
  ROOT %reduce-scatter-done = f32[4]{0} async-done(((f32[8]{0}), f32[4]{0}) \
%reduce-scatter-start), calls=%wrapped_reduce_scatter
}
"""


def _rows(summary: CollectiveSummary) -> list[tuple[Any, ...]]:
    return [
        (c.op, c.count, c.bytes, c.group_size, c.axes, c.is_async, len(c.instructions))
        for c in summary.items
    ]


def test_async_pairs_count_once_and_spellings_of_one_group_merge() -> None:
    layout = MeshLayout((("a", 2), ("b", 2)))
    expected = [
        ("all-gather", 1, 16 * F32, 2, ("b",), True, 1),  # the gathered f32[16]
        ("all-reduce", 2, 2 * 8 * F32, 2, ("b",), False, 2),  # {{0,1},{2,3}} = [2,2]<=[4]
        ("all-reduce", 1, 8 * F32, 2, ("a",), False, 1),  # mesh form: {{0,2},{1,3}}
        ("all-reduce", 1, 8 * F32, 4, ("a", "b"), False, 1),  # {}: every device
        ("reduce-scatter", 1, 8 * F32, 2, ("b",), True, 1),  # the wrapped one, not twice
    ]
    assert _rows(find_collectives(GPU_LIKE, layout)) == expected
    # XLA reads the text and prints the wrapped reduce-scatter as reduce-scatter-start/-done.
    reprinted = jaxapi.parse_hlo_module(GPU_LIKE).to_string()
    assert "reduce-scatter-start(" in reprinted
    assert _rows(find_collectives(reprinted, layout)) == expected


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None, reason="libtpu is not installed")
def test_a_tpu_slice_has_async_permutes_and_mesh_form_groups() -> None:
    from jaxinspect.process.nativelog import quiet_native_stderr
    from jaxinspect.topologies.tpu import topology_devices

    devices = topology_devices("v5e:2x2")  # shares libtpu with other processes
    mesh = Mesh(np.array(devices, dtype=object).reshape(2, 2), ("data", "model"))

    def f(x: Any, w: Any) -> Any:
        gathered = jax.lax.with_sharding_constraint(x @ w, NamedSharding(mesh, P()))
        return gathered, jnp.roll(x, 1, axis=0)

    x, w = _arg(mesh, (256, 512), "data"), _arg(mesh, (512, 1024), None, "model")
    with quiet_native_stderr():
        compiled = jax.jit(f).lower(x, w).compile()
    ids = tuple(d.id for d in mesh.devices.flat)
    summary = compiled_collectives(compiled, (("data", 2), ("model", 2)), ids)
    by_op: dict[str, list[Any]] = {}
    for c in summary.items:
        by_op.setdefault(c.op, []).append(c)
    (permute,) = by_op["collective-permute"]
    assert permute.is_async and permute.count == 1 and permute.axes == ("data",)
    assert permute.bytes == 512 * F32  # the one f32 row each device passes on
    gathers = {c.axes: c for c in by_op["all-gather"]}
    assert set(gathers) == {("data",), ("model",)}
    # libtpu spells the gather over model with the devices' order: ..., device_ids=(...) {...}
    assert ", device_ids=([2,2]T(1,0)) {" in gathers[("model",)].groups
    assert gathers[("model",)].group_size == 2


def test_the_table_fits_80_columns_without_splitting_a_token(
    shard_mapped: CollectiveSummary,
) -> None:
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(collectives_table(shard_mapped))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line) for line in text.splitlines()) <= 80
    for token in ("all-reduce", "reduce-scatter", "collective-permute", "data,model", "1 KiB"):
        assert token in text
    assert "3 collectives per run, 3 KiB per device in all" in text
    wide = Console(width=160, file=io.StringIO(), color_system=None)
    wide.print(collectives_table(shard_mapped))
    assert f"test_collectives.py:{_line('# psum-line')}" in wide.file.getvalue()  # type: ignore[attr-defined]


def test_json_list_follows_the_schema(shard_mapped: CollectiveSummary) -> None:
    defs = json.loads((SCHEMAS_DIR / "collectives.defs.json").read_text())
    schema = {**defs, "$ref": "#/$defs/collectives"}
    listed = collectives_to_list(shard_mapped)
    jsonschema.validate(listed, schema)
    assert listed is not None
    psum = next(c for c in listed if c["op"] == "all-reduce")
    assert {k: psum[k] for k in ("op", "count", "bytes", "groups", "axes", "async")} == {
        "op": "all-reduce",
        "count": 1,
        "bytes": 1024,
        "groups": "{{0,1,2,3,4,5,6,7}}",
        "axes": ["data", "model"],
        "async": False,
    }
    assert psum["source"]["line"] == _line("# psum-line")
    assert collectives_to_list(None) is None


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
    assert doc["communication_bytes"] == item["bytes"] == 64 * 1024 * F32
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
