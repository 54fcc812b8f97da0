"""TPU slices compiled from this CPU host through libtpu (the `tpu` extra, installed in CI).

Each figure is compared with plain ``jax.experimental.topologies`` compiling the same program.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import SAMPLES
from jaxinspect.pipeline.nativelog import quiet_native_stderr

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None,
    reason="libtpu is not installed (pip install 'jaxinspect[tpu]'); CI installs it",
)

S = jax.ShapeDtypeStruct


def _plain_devices(name: str) -> list[Any]:
    from jax.experimental import topologies

    with quiet_native_stderr():
        return list(topologies.get_topology_desc(topology_name=name, platform="tpu").devices)


def _json(run_cli: Callable[..., Any], *args: Any) -> dict[str, Any]:
    result = run_cli(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_topologies_lists_the_slices(run_cli: Callable[..., Any]) -> None:
    doc = _json(run_cli, "topologies")
    by_name = {t["name"]: t for t in doc["topologies"]}
    assert by_name["v5e:2x2"]["devices"] == 4 and by_name["v5e:2x2"]["kind"] == "TPU v5 lite"
    assert by_name["v6e:8x8"]["devices"] == 64 and by_name["v6e:8x8"]["kind"] == "TPU v6 lite"
    assert by_name["v4:2x2x1"] == {
        "name": "v4:2x2x1",
        "devices": 8,  # one per TensorCore: a v4 chip shows as two devices here
        "chips": 4,
        "kind": "TPU v4",
        "hbm_bytes_per_chip": 32 * 1024**3,
        "profile": "tpu-v4",
    }
    result = run_cli("topologies")
    assert "v5e:16x16" in result.stdout


@pytest.mark.parametrize(("topology", "mesh"), [("v5e:2x2", 4), ("v6e:8x8", 64)])
def test_sharded_mlp_on_a_slice_equals_plain_jax(
    run_cli: Callable[..., Any], topology: str, mesh: int
) -> None:
    spec = SAMPLES / "mlp.yaml"
    doc = _json(
        run_cli,
        "stages",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        spec,
        "--topology",
        topology,
        "--mesh",
        f"data={mesh}",
    )
    devices = _plain_devices(topology)
    assert doc["devices"]["count"] == mesh == len(devices)
    assert doc["devices"]["kind"] == devices[0].device_kind
    assert doc["devices"]["topology"] == topology
    assert doc["timings"]["first_call_s"] is None
    assert "nothing runs here" in doc["unavailable"]["timings.first_call_s"]
    # Plain JAX: the same program, replicated over the same mesh of the slice.
    import importlib.util as iu

    module_spec = iu.spec_from_file_location("mlp_topo", SAMPLES / "mlp.py")
    assert module_spec is not None and module_spec.loader is not None
    module = iu.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    grid = jax.sharding.Mesh(np.array(devices, dtype=object), ("data",))
    rep = jax.sharding.NamedSharding(grid, jax.sharding.PartitionSpec())
    params = {
        "w1": S((784, 256), jnp.float32, sharding=rep),
        "b1": S((256,), jnp.float32, sharding=rep),
        "w2": S((256, 10), jnp.float32, sharding=rep),
        "b2": S((10,), jnp.float32, sharding=rep),
    }
    x = S((128, 784), jnp.float32, sharding=rep)
    with quiet_native_stderr():
        compiled = jax.jit(module.predict).lower(params, x).compile()
    cost = compiled.cost_analysis()
    memory = compiled.memory_analysis()
    assert doc["cost"]["flops"] == cost["flops"]
    assert doc["cost"]["optimal_seconds"] == pytest.approx(cost["optimal_seconds"])
    assert doc["memory"]["argument_bytes"] == memory.argument_size_in_bytes
    assert doc["memory"]["generated_code_bytes"] == memory.generated_code_size_in_bytes
    assert doc["memory"]["fits"] is True
    assert doc["memory"]["capacity_bytes"] > 10**10


def test_data_parallel_step_on_v5e_has_an_all_reduce(run_cli: Callable[..., Any]) -> None:
    doc = _json(
        run_cli,
        "stages",
        f"{SAMPLES / 'sharded.py'}:train_step",
        "-s",
        SAMPLES / "sharded_dp.yaml",
        "--topology",
        "v5e:2x2",
        "--mesh",
        "data=4",
    )
    args = {a["path"]: a for a in doc["args"]}
    assert args["x"]["shard_shape"] == [32, 784]
    assert "all-reduce" in json.dumps(doc["stages"]["hlo"]["op_counts"])
    assert "T(8,128)" in doc["stages"]["hlo"]["text"]  # TPU tiled layouts


def test_a_refused_topology_is_exit_2(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "stages",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        SAMPLES / "mlp.yaml",
        "--topology",
        "v5e:3x3",
    )
    assert result.exit_code == 2
    assert "--topology v5e:3x3: libtpu refuses it" in result.stderr
    assert "jaxinspect topologies" in result.stderr


def test_bench_refuses_a_topology(run_cli: Callable[..., Any], tmp_path) -> None:
    spec = tmp_path / "t.yaml"
    spec.write_text("topology: v5e:2x2\nargs: {x: 'f32[8]'}\n")
    result = run_cli("bench", f"{SAMPLES / 'simple.py'}:scale_shift", "-s", spec)
    assert result.exit_code == 2
    assert "cannot run here" in result.stderr


def test_libtpu_noise_stays_off_stderr() -> None:
    # A fresh process without JAX_PLATFORMS: JAX starts every backend, libtpu's included.
    env = {k: v for k, v in __import__("os").environ.items() if k != "JAX_PLATFORMS"}
    args = [
        sys.executable,
        "-m",
        "jaxinspect",
        "stages",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        str(SAMPLES / "mlp.yaml"),
        "--stage",
        "cost",
        "--topology",
        "v5e:2x2",
    ]
    quiet = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert "TPU_ACCELERATOR_TYPE" not in quiet.stderr and "Source Location" not in quiet.stderr
    local = subprocess.run(args[:-2], capture_output=True, text=True, env=env, timeout=300)
    assert local.returncode == 0 and "TPU_" not in local.stderr
    debug = subprocess.run([*args, "--debug"], capture_output=True, text=True, env=env, timeout=300)
    assert debug.returncode == 0
    assert "TPU_ACCELERATOR_TYPE" in debug.stderr


def test_ci_gate_no_new_all_gather_on_v5e(
    run_cli: Callable[..., Any], tmp_path, monkeypatch
) -> None:
    import shutil

    shutil.copy(SAMPLES / "sharded.py", tmp_path / "sharded.py")
    manifest = tmp_path / "jaxinspect.yaml"
    target = (
        'snapshot_dir: snaps\nfail_on: "new-op:all-gather"\ntargets:\n'
        "  - target: sharded.py:matmul\n    name: mm\n    topology: v5e:2x2\n"
        "    mesh: {data: 2, model: 2}\n"
        '    args: ["x=f32[256@data,512@model]", "w=f32[512@model,1024]"]\n'
    )
    manifest.write_text(target)
    monkeypatch.chdir(tmp_path)
    assert run_cli("check", "--update").exit_code == 0
    assert run_cli("check").exit_code == 0
    # Split w's columns instead of its rows: the partitioner now gathers.
    manifest.write_text(target.replace("w=f32[512@model,1024]", "w=f32[512,1024@model]"))
    failed = run_cli("check")
    assert failed.exit_code == 1
    assert "new-op:all-gather: all-gather in hlo: 0 -> 1" in failed.stdout


def test_per_op_cost_on_a_slice_adds_up_to_xla_s_own(run_cli: Callable[..., Any]) -> None:
    doc = _json(
        run_cli,
        "cost",
        f"{SAMPLES / 'sharded.py'}:train_step",
        "-s",
        SAMPLES / "sharded_dp.yaml",
        "--topology",
        "v5e:2x2",
        "--mesh",
        "data=4",
    )
    assert doc["devices"]["kind"] == "TPU v5 lite"
    assert doc["cost"]["loop_aware"]["flops"] == doc["cost"]["flops"]  # the TPU compiler's
    assert sum(op["flops"] or 0 for op in doc["cost"]["ops"]) == pytest.approx(doc["cost"]["flops"])
    assert [c["op"] for c in doc["collectives"]] == ["all-reduce"]
