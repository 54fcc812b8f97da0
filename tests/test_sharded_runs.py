"""Sharded programs on the test process's 8 CPU devices: shardings, cost and memory as JAX's own.

Each figure is compared with plain JAX compiling the same program in the test.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from conftest import SAMPLES
from jaxinspect.renderers.jsondoc import SCHEMAS_DIR

S = jax.ShapeDtypeStruct
SHARDED = SAMPLES / "sharded.py"


def _load_sample() -> Any:
    spec = importlib.util.spec_from_file_location("sharded_ref", SHARDED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sharded = _load_sample()


def _stages(run_cli: Callable[..., Any], *args: str) -> dict[str, Any]:
    result = run_cli("stages", *args, "--format", "json", "--runs", "2")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    # Sharded runs fill the fields a one-device run leaves empty: each is in the schema.
    schema = json.loads((SCHEMAS_DIR / "stages.schema.json").read_text())
    jsonschema.validate(doc, schema)
    return doc


def _mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> jax.sharding.Mesh:
    devices = np.array(jax.devices()[: int(np.prod(shape))], dtype=object).reshape(shape)
    return jax.sharding.Mesh(devices, names)


def _plain(compiled: Any) -> tuple[float, Any]:
    return compiled.cost_analysis()["flops"], compiled.memory_analysis()


def test_data_parallel_training_step(run_cli: Callable[..., Any]) -> None:
    doc = _stages(run_cli, f"{SHARDED}:train_step", "-s", SAMPLES / "sharded_dp.yaml")
    assert doc["devices"]["count"] == 8 and doc["devices"]["kind"] == "cpu"
    assert doc["mesh"] == {"data": 8}
    args = {a["path"]: a for a in doc["args"]}
    assert args["x"]["sharding"] == "P('data',)" or args["x"]["sharding"] == "P('data')"
    assert args["x"]["shard_shape"] == [16, 784]
    assert args["params['w1']"]["sharding"] == "P()"
    assert args["params['w1']"]["shard_shape"] == [784, 256]
    assert all(o["sharding"] is not None for o in doc["outputs"])
    # Plain JAX, the same program and placement.
    mesh = _mesh((8,), ("data",))
    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("data", None))
    params = {
        "w1": S((784, 256), jnp.float32, sharding=rep),
        "b1": S((256,), jnp.float32, sharding=rep),
        "w2": S((256, 10), jnp.float32, sharding=rep),
        "b2": S((10,), jnp.float32, sharding=rep),
    }
    x = S((128, 784), jnp.float32, sharding=rows)
    y = S((128, 10), jnp.float32, sharding=rows)
    flops, memory = _plain(jax.jit(sharded.train_step).lower(params, x, y).compile())
    assert doc["cost"]["flops"] == flops
    assert doc["memory"]["argument_bytes"] == memory.argument_size_in_bytes
    assert doc["memory"]["temp_bytes"] == memory.temp_size_in_bytes
    assert "all-reduce" in doc["stages"]["hlo"]["op_counts"]  # the gradients are summed
    assert doc["timings"]["cached_call"]["runs"] == 2  # it ran on the 8 devices


def test_two_dimensional_matmul_with_an_output_sharding(run_cli: Callable[..., Any]) -> None:
    doc = _stages(run_cli, f"{SHARDED}:matmul", "-s", SAMPLES / "sharded_matmul.yaml")
    assert doc["mesh"] == {"data": 4, "model": 2}
    args = {a["path"]: a for a in doc["args"]}
    assert args["x"]["sharding"] == "P('data', 'model')"
    assert args["x"]["shard_shape"] == [64, 256]
    assert args["w"]["shard_shape"] == [256, 1024]
    (out,) = doc["outputs"]
    assert out["sharding"] == "P('data',)" or out["sharding"] == "P('data')"
    assert out["shard_shape"] == [64, 1024]
    mesh = _mesh((4, 2), ("data", "model"))
    x = S((256, 512), jnp.float32, sharding=NamedSharding(mesh, P("data", "model")))
    w = S((512, 1024), jnp.float32, sharding=NamedSharding(mesh, P("model", None)))
    out_sharding = NamedSharding(mesh, P("data", None))
    plain = jax.jit(sharded.matmul, out_shardings=out_sharding).lower(x, w).compile()
    flops, memory = _plain(plain)
    # Each device multiplies its 64x256 by 256x1024 block, and the all-reduce adds the
    # partial 64x1024 results.
    assert doc["cost"]["flops"] == flops == 2 * 64 * 256 * 1024 + 64 * 1024
    assert doc["memory"]["argument_bytes"] == memory.argument_size_in_bytes
    assert doc["memory"]["output_bytes"] == memory.output_size_in_bytes
    assert "all-reduce" in doc["stages"]["hlo"]["op_counts"]  # the contraction is split


def test_shard_map_target_with_its_own_mesh(run_cli: Callable[..., Any]) -> None:
    doc = _stages(run_cli, f"{SHARDED}:column_sums", "-s", SAMPLES / "sharded_psum.yaml")
    assert doc["devices"]["count"] == 8
    assert doc["mesh"] is None
    assert doc["stages"]["hlo"]["op_counts"]["all-reduce"] == 1
    assert doc["outputs"][0]["shape"] == [128]
    assert doc["timings"]["cached_call"] is not None


def test_arg_and_mesh_options(run_cli: Callable[..., Any]) -> None:
    doc = _stages(
        run_cli,
        f"{SHARDED}:matmul",
        "--arg",
        "x=f32[64@data,32]",
        "--arg",
        "w=f32[32,16]",
        "--mesh",
        "data=4",
    )
    assert doc["devices"]["count"] == 4
    assert {a["path"]: a["shard_shape"] for a in doc["args"]} == {"x": [16, 32], "w": [32, 16]}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arg", "x=f32[64@data,32]", "--arg", "w=f32[32,16]"], "a sharding needs a mesh"),
        (
            ["--arg", "x=f32[64@data,32]", "--arg", "w=f32[32,16]", "--mesh", "data=16"],
            "already started in this process with 8 devices",
        ),
        (
            [
                "--arg",
                "x=f32[6,32]",
                "--arg",
                "w=f32[32,16]",
                "--devices",
                "2",
                "--topology",
                "v5e:2x2",
            ],
            "give either --devices N or --topology NAME",
        ),
    ],
)
def test_placement_mistakes_exit_2(
    run_cli: Callable[..., Any], args: list[str], message: str
) -> None:
    result = run_cli("stages", f"{SHARDED}:matmul", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_out_shardings_count_must_match_the_outputs(run_cli: Callable[..., Any], tmp_path) -> None:
    spec = tmp_path / "two.yaml"
    spec.write_text(
        "mesh: {data: 2}\nargs: {x: 'f32[8@data,4]', w: 'f32[4,4]'}\n"
        "out_shardings: [[data], null]\n"
    )
    result = run_cli("stages", f"{SHARDED}:matmul", "-s", spec)
    assert result.exit_code == 2
    assert "out_shardings has 2 entries; the function returns 1 array" in result.stderr


def test_recompile_names_the_sharding_that_changed(run_cli: Callable[..., Any], tmp_path) -> None:
    spec = tmp_path / "cases.yaml"
    spec.write_text(
        "cases:\n"
        "  rows: {mesh: {data: 4}, args: {x: 'f32[64@data,32]', w: 'f32[32,16]'}}\n"
        "  cols: {mesh: {data: 4}, args: {x: 'f32[64,32@data]', w: 'f32[32,16]'}}\n"
    )
    result = run_cli("recompile", f"{SHARDED}:matmul", "-s", spec, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    second = doc["cases"][1]
    assert second["compiled"] is True
    assert any("data" in json.dumps(change) for change in second["changes"])


def test_a_case_sweep_names_the_sharding_that_differs(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    spec = tmp_path / "cases.yaml"
    spec.write_text(
        "cases:\n"
        "  single: {args: {x: 'f32[64,32]', w: 'f32[32,16]'}}\n"
        "  rows4: {mesh: {data: 4}, args: {x: 'f32[64@data,32]', w: 'f32[32,16]'}}\n"
    )
    result = run_cli("stages", f"{SHARDED}:matmul", "-s", spec, "--runs", "2")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "x f32[64,32] P('data')" in out
    assert "cost and memory figures are per device" in out
    devices = next(line for line in out.splitlines() if line.startswith("│ devices"))
    assert [c.strip() for c in devices.split("│")[2:4]] == ["1", "4"]


def test_a_topology_without_libtpu_names_the_extra(
    run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import jaxinspect.topologies.gpu as gputarget
    import jaxinspect.topologies.tpu as topology

    monkeypatch.setattr(topology, "libtpu_installed", lambda: False)  # as on a bare install
    monkeypatch.setattr(gputarget, "missing_pieces", lambda: "no CUDA plugin")  # nor cuda
    result = run_cli(
        "stages",
        f"{SHARDED}:matmul",
        "--arg",
        "x=f32[8,4]",
        "--arg",
        "w=f32[4,2]",
        "--topology",
        "v5e:2x2",
    )
    assert result.exit_code == 2
    assert "--topology v5e:2x2: compiling for a TPU slice needs libtpu" in result.stderr
    assert 'pip install "jaxinspect[tpu]"' in result.stderr
    listing = run_cli("topologies")
    assert listing.exit_code == 2 and "jaxinspect[tpu]" in listing.stderr
    assert "jaxinspect[cuda]" in listing.stderr


def test_topologies_with_only_the_cuda_extra_lists_the_gpus(
    run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import jaxinspect.topologies.gpu as gputarget
    import jaxinspect.topologies.tpu as topology

    monkeypatch.setattr(topology, "libtpu_installed", lambda: False)
    monkeypatch.setattr(gputarget, "missing_pieces", lambda: None)  # the GPU list needs no JAX
    listing = run_cli("topologies", "--format", "json")
    assert listing.exit_code == 0, listing.stderr
    doc = json.loads(listing.stdout)
    assert doc["libtpu_version"] is None and doc["topologies"] == []
    assert [g["name"] for g in doc["gpus"]][:2] == ["h100", "h100-pcie"]
    assert doc["notes"] == [
        'TPU slices: pip install "jaxinspect[tpu]" (about 700 MB; no TPU needed)'
    ]
