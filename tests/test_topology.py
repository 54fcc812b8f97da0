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
from jaxinspect.process.nativelog import quiet_native_stderr
from jaxinspect.topologies.tpu import chip_count, device_capacity, topology_devices
from jaxinspect.xla.profiles import profile_for_kind

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None,
    reason="libtpu is not installed (pip install 'jaxinspect[tpu]'); CI installs it",
)

S = jax.ShapeDtypeStruct
P = jax.sharding.PartitionSpec


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
    assert by_name["v4:2x2x1"] | {"hbm_source": "-"} == {
        "name": "v4:2x2x1",
        "devices": 8,  # one per TensorCore: a v4 chip shows as two devices here
        "chips": 4,
        "kind": "TPU v4",
        "hbm_bytes_per_chip": 32 * 1024**3,
        "profile": "tpu-v4",
        "hbm_source": "-",  # checked below, for every slice
    }
    result = run_cli("topologies")
    assert "v5e:16x16" in result.stdout
    # Every chip this libtpu describes has its HBM in the table, with the page it is from.
    for item in doc["topologies"]:
        profile = profile_for_kind(item["kind"])
        assert profile is not None and profile.name == item["profile"], item
        assert item["hbm_bytes_per_chip"] == profile.memory_bytes
        assert (
            f"https://cloud.google.com/tpu/docs/{item['name'].split(':')[0]}"
            in (item["hbm_source"])
        )


def test_topology_devices_describes_the_slice() -> None:
    devices = topology_devices("v5e:2x2")
    assert len(devices) == 4
    assert {d.device_kind for d in devices} == {"TPU v5 lite"}
    assert {d.platform for d in devices} == {"tpu"}
    assert topology_devices("v5e:2x2") is devices  # described once per process
    v4 = topology_devices("v4:2x2x1")  # a v4 chip is two devices, sharing its 32 GiB
    assert (len(v4), chip_count(v4)) == (8, 4)
    assert device_capacity(v4)[0] == device_capacity(v4[:1])[0] == 16 * 1024**3
    v5p = topology_devices("v5p:2x2x1")  # one device per chip, spanning its two cores
    assert (len(v5p), chip_count(v5p), device_capacity(v5p[:1])[0]) == (4, 4, 95 * 10**9)


def test_a_sharded_function_compiles_for_the_slice() -> None:
    grid = jax.sharding.Mesh(np.array(topology_devices("v5e:2x2")).reshape(2, 2), ("d", "m"))
    rows = jax.sharding.NamedSharding(grid, jax.sharding.PartitionSpec("d", "m"))
    x = S((256, 512), jnp.bfloat16, sharding=rows)
    w = S((512, 128), jnp.bfloat16, sharding=jax.sharding.NamedSharding(grid, P("m", None)))
    with quiet_native_stderr():
        compiled = jax.jit(lambda x, w: x @ w).lower(x, w).compile()
    assert compiled.input_shardings[0][0].spec == P("d", "m")
    per_chip = (256 * 512 // 4 + 512 * 128 // 2) * 2  # x split four ways, w two (over `m`)
    assert compiled.memory_analysis().argument_size_in_bytes == per_chip
    text = compiled.as_text()
    assert "all-reduce" in text  # the contraction over `m` is split: partial sums are summed
    assert "T(8,128)" in text  # TPU tiled layouts: the TPU compiler made this


def test_a_name_libtpu_refuses_lists_what_it_accepts(run_cli: Callable[..., Any]) -> None:
    mlp = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml", "--topology")
    shape = run_cli("stages", *mlp, "v6e:3x3")
    assert shape.exit_code == 2
    assert "--topology v6e:3x3: libtpu refuses it (Topology layout" in shape.stderr
    assert "v6e slices it accepts include v6e:2x2, v6e:2x4, v6e:4x4" in shape.stderr
    generation = run_cli("stages", *mlp, "v9:2x2")
    assert generation.exit_code == 2
    assert "generations it accepts: v3, v4, v5e, v5p, v6e" in generation.stderr
    cloud = run_cli("stages", *mlp, "v5litepod-16")  # Cloud's accelerator type, not a slice
    assert cloud.exit_code == 2
    assert "v5litepod-16 is a Cloud TPU accelerator type; as a slice: v5e:4x4" in cloud.stderr
    assert "a slice name is GENERATION:SHAPE" in run_cli("stages", *mlp, "v4-8").stderr
    assert "as a slice: v4:2x2x1" in run_cli("stages", *mlp, "v4-8").stderr  # 8 cores


#: (sample, function, spec, the argument split over `data`, its dimension); the transformer's
#: sequence is split, so attention needs collectives; the MLP's batch, so it needs none.
SAMPLE_RUNS = [
    ("mlp.py", "predict", "mlp.yaml", "x", 0),
    ("transformer.py", "block", "transformer.yaml", "x", 1),
]


def _load(file: str) -> Any:
    module_spec = importlib.util.spec_from_file_location(f"topo_{file[:-3]}", SAMPLES / file)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _plain_args(spec_path: Any, grid: Any, split: str, dim: int) -> tuple[dict[str, Any], dict]:
    """The spec's arguments as ShapeDtypeStructs on ``grid``, ``split`` split on ``dim``."""
    import yaml

    from jaxinspect.inputs.spec import load_spec

    spec = load_spec(spec_path)
    rep = jax.sharding.NamedSharding(grid, jax.sharding.PartitionSpec())
    entries: list[Any] = [None] * (dim + 1)
    entries[dim] = "data"
    rows = jax.sharding.NamedSharding(grid, jax.sharding.PartitionSpec(*entries))

    def tree(node: Any, name: str) -> Any:
        if hasattr(node, "items") and not hasattr(node, "shape"):
            return {k: tree(v, k) for k, v in node.items}
        sharding = rows if name == split else rep
        return S(node.shape, jnp.dtype(node.dtype), sharding=sharding)

    args = {name: tree(node, name) for name, node in spec.args}
    static = dict(yaml.safe_load(spec_path.read_text()).get("static") or {})
    return args, static


@pytest.mark.parametrize(("topology", "chips"), [("v5e:2x2", 4), ("v6e:8x8", 64)])
@pytest.mark.parametrize(("file", "name", "spec", "split", "dim"), SAMPLE_RUNS)
def test_samples_on_a_slice_equal_plain_jax(
    run_cli: Callable[..., Any],
    topology: str,
    chips: int,
    file: str,
    name: str,
    spec: str,
    split: str,
    dim: int,
) -> None:
    doc = _json(
        run_cli,
        "stages",
        f"{SAMPLES / file}:{name}",
        "-s",
        _split_spec(spec, split, dim),
        "--topology",
        topology,
        "--mesh",
        f"data={chips}",
        "--no-execute",
    )
    devices = _plain_devices(topology)
    assert doc["devices"]["count"] == chips == len(devices)
    assert doc["devices"]["kind"] == devices[0].device_kind
    assert doc["devices"]["topology"] == topology
    assert doc["timings"]["first_call_s"] is None
    grid = jax.sharding.Mesh(np.array(devices, dtype=object), ("data",))
    args, static = _plain_args(SAMPLES / spec, grid, split, dim)
    module = _load(file)
    with quiet_native_stderr():
        compiled = (
            jax.jit(getattr(module, name), static_argnames=tuple(static))
            .lower(**args, **static)
            .compile()
        )
    cost, memory = compiled.cost_analysis(), compiled.memory_analysis()
    assert doc["cost"]["flops"] == cost["flops"]
    assert doc["cost"]["optimal_seconds"] == pytest.approx(cost["optimal_seconds"])
    assert doc["memory"]["argument_bytes"] == memory.argument_size_in_bytes
    assert doc["memory"]["temp_bytes"] == memory.temp_size_in_bytes
    assert doc["memory"]["generated_code_bytes"] == memory.generated_code_size_in_bytes
    assert doc["memory"]["fits"] is True and doc["memory"]["capacity_bytes"] > 10**10
    # The collectives found are the collective instructions of plain JAX's optimized HLO.
    text = compiled.as_text()
    plain = sum(
        text.count(f" {op}(") + text.count(f" {op}-start(")
        for op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
    )
    found = sum(len(c["instructions"]) for c in doc["collectives"])
    assert found == plain
    if file == "transformer.py":
        assert found > 0  # attention over a split sequence communicates


def _split_spec(spec: str, split: str, dim: int) -> Any:
    """The sample's spec with ``split`` sharded over `data` on ``dim`` (a copy in the test)."""
    import tempfile
    from pathlib import Path

    text = (SAMPLES / spec).read_text()
    lines = []
    for line in text.splitlines():
        key, sep, leaf = line.partition(": ")
        if sep and key.strip() == split and "[" in leaf:
            dims = leaf[leaf.index("[") + 1 : leaf.index("]")].split(",")
            dims[dim] = f"{dims[dim]}@data"
            line = f"{key}: {leaf[: leaf.index('[')]}[{','.join(dims)}]"
        lines.append(line)
    folder = Path(tempfile.mkdtemp(prefix="jaxinspect-topo-"))
    out = folder / spec
    out.write_text("\n".join(lines) + "\n")
    return out


#: The sample's data-parallel step on the four chips of a v5e:2x2, the batch over `data`.
DP_ON_V5E = (
    f"{SAMPLES / 'sharded.py'}:train_step",
    "-s",
    SAMPLES / "sharded_dp.yaml",
    "--topology",
    "v5e:2x2",
    "--mesh",
    "data=4",
)


def test_data_parallel_step_on_v5e_has_an_all_reduce(run_cli: Callable[..., Any]) -> None:
    doc = _json(run_cli, "stages", *DP_ON_V5E)
    args = {a["path"]: a for a in doc["args"]}
    assert args["x"]["shard_shape"] == [32, 784]
    assert "all-reduce" in json.dumps(doc["stages"]["hlo"]["op_counts"])
    assert "T(8,128)" in doc["stages"]["hlo"]["text"]  # TPU tiled layouts


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


def test_a_target_starting_jax_at_import_stays_quiet(tmp_path) -> None:
    # The user's module starts JAX's backends itself, before jaxinspect asks for a device.
    (tmp_path / "early.py").write_text(
        "import jax\nDEVICES = jax.devices()\ndef f(x):\n    return x * 2\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "JAX_PLATFORMS"}
    args = [sys.executable, "-m", "jaxinspect", "jaxpr", "early.py:f", "--arg", "x=f32[8]"]
    run = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 0 and run.stderr == ""
    assert "mul" in run.stdout


START = """
import sys
from jaxinspect.process.nativelog import quiet_cuda_import
quiet_cuda_import()  # as the CLI does: JAX's CUDA plugin, where installed, logs at import
from jax._src.lib import xla_client
from jaxinspect.process.nativelog import start_libtpu_quietly
start_libtpu_quietly()
print("loaded", xla_client.pjrt_plugin_loaded("tpu"))
import jax
jax.config.update("jax_num_cpu_devices", 3)  # no backend started: still allowed
print("cpu", len(jax.devices("cpu")))
"""


@pytest.mark.parametrize(("platforms", "loaded"), [(None, True), ("cpu", False)])
def test_libtpu_starts_quietly_only_where_jax_would_start_it(
    platforms: str | None, loaded: bool
) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if k != "JAX_PLATFORMS"}
    if platforms:
        env["JAX_PLATFORMS"] = platforms
    run = subprocess.run(
        [sys.executable, "-c", START], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["loaded", str(loaded), "cpu", "3"]
    assert run.stderr == ""


def test_ci_gate_no_new_all_gather_on_v5e(
    run_cli: Callable[..., Any], tmp_path, monkeypatch
) -> None:
    failed = gate_gathers(run_cli, tmp_path, monkeypatch, "v5e:2x2", "{data: 2, model: 2}")
    assert "new-op:all-gather: all-gather in hlo: 0 -> 1" in failed.stdout


def gate_gathers(
    run_cli: Callable[..., Any], tmp_path: Any, monkeypatch: Any, topology: str, mesh: str
) -> Any:
    """``check`` with ``fail_on: new-op:all-gather`` on ``topology``: passes, then fails (the
    result returned) once the weights' split makes the partitioner gather."""
    import shutil

    shutil.copy(SAMPLES / "sharded.py", tmp_path / "sharded.py")
    manifest = tmp_path / "jaxinspect.yaml"
    target = (
        'snapshot_dir: snaps\nfail_on: "new-op:all-gather"\ntargets:\n'
        f"  - target: sharded.py:matmul\n    name: mm\n    topology: {topology}\n"
        f"    mesh: {mesh}\n"
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
    return failed


def test_per_op_cost_on_a_slice_adds_up_to_xla_s_own(run_cli: Callable[..., Any]) -> None:
    doc = _json(run_cli, "cost", *DP_ON_V5E)
    assert doc["devices"]["kind"] == "TPU v5 lite"
    assert doc["cost"]["loop_aware"]["flops"] == doc["cost"]["flops"]  # the TPU compiler's
    assert sum(op["flops"] or 0 for op in doc["cost"]["ops"]) == pytest.approx(doc["cost"]["flops"])
    assert [c["op"] for c in doc["collectives"]] == ["all-reduce"]
