"""NVIDIA GPUs compiled for from this CPU host through JAX's CUDA plugin (the `cuda` extra).

Names, configs and errors are checked everywhere; the compiles need the plugin and skip
without it, as the TPU tests skip without libtpu. Each figure is compared with a plain
deviceless compile through ``jax.experimental.topologies`` done in the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_topology import _load, _split_spec, gate_gathers

from conftest import SAMPLES
from jaxinspect.errors import UsageError
from jaxinspect.inputs.spec import load_spec
from jaxinspect.topologies import gpu as gputarget

MISSING = gputarget.missing_pieces()
needs_plugin = pytest.mark.skipif(
    MISSING is not None, reason=f"{MISSING} (CI installs the cuda extra)"
)

S = jax.ShapeDtypeStruct
P = jax.sharding.PartitionSpec
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


def _json(run_cli: Callable[..., Any], *args: Any) -> dict[str, Any]:
    result = run_cli(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# --- names and configs: no plugin needed ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "plugin", "kind"),
    [
        ("h100:8", "1x1x8", "NVIDIA H100 80GB HBM3"),
        ("h100:1", "1x1x1", "NVIDIA H100 80GB HBM3"),
        ("a100-80gb:2x8", "1x2x8", "NVIDIA A100-SXM4-80GB"),
        ("a100:8", "1x1x8", "NVIDIA A100-SXM4-80GB"),  # a100 alone is the 80 GB SXM
        ("A100-40GB:4", "1x1x4", "NVIDIA A100-SXM4-40GB"),
        ("l4:2", "1x1x2", "NVIDIA L4"),
    ],
)
def test_a_target_name_gives_the_plugin_topology_and_config(
    name: str, plugin: str, kind: str
) -> None:
    target = gputarget.parse_target(name)
    assert target.plugin_topology == plugin
    assert target.config.description == kind
    assert gputarget.looks_like_gpu(name)


def test_tpu_names_are_not_gpu_targets() -> None:
    assert not any(map(gputarget.looks_like_gpu, ("v5e:2x2", "v4:2x2x1", "v5litepod-16")))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("h100", "a GPU target is MODEL:GPUS or MODEL:HOSTSxGPUS"),
        ("h100:2x2x2", "a GPU target is MODEL:GPUS or MODEL:HOSTSxGPUS"),
        ("h100:0", "hosts and GPUs per host must be at least 1"),
        ("h10:8", "unknown GPU model 'h10'; known: h100, h100-pcie"),
    ],
)
def test_a_bad_name_is_refused_with_the_grammar(name: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        gputarget.parse_target(name)
    assert message in info.value.message


def test_every_shipped_config_parses_and_cites_its_source() -> None:
    infos = {g.name: g for g in gputarget.model_infos()}
    # The figures of XLA's spec files (xla/backends/gpu/target_config/specs).
    assert infos["h100"].hbm_bytes == 84942979072 and infos["h100"].compute_capability == "9.0"
    assert infos["a100-80gb"].hbm_bytes == 85100068864
    assert infos["a100-40gb"].hbm_bytes == 42331013120
    assert infos["h200"].hbm_bytes == 151397597184
    assert infos["b200"].compute_capability == "10.0"
    assert infos["l4"].compute_capability == "8.9"
    for info in infos.values():
        assert "https://" in info.source and info.bandwidth_bytes_per_s, info
    assert "openxla/xla" in infos["h100"].source and "nvidia.com" in infos["l4"].source


@pytest.mark.parametrize(
    ("drop", "named"),
    [
        ("threads_per_warp", "threads_per_warp"),  # XLA divides by it: SIGFPE without it
        ("block_dim_limit_x", "block_dim_limit_x"),
        ("shared_memory_per_block_optin", "shared_memory_per_block_optin"),
        ("major", "cuda_compute_capability.major"),
    ],
)
def test_a_config_missing_a_required_field_is_refused_before_the_plugin(
    run_cli: Callable[..., Any], tmp_path: Path, drop: str, named: str
) -> None:
    text = gputarget.shipped_config("h100_sxm").text
    config = tmp_path / "mine.txtpb"
    config.write_text("\n".join(ln for ln in text.splitlines() if f"{drop}:" not in ln))
    mlp = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")
    result = run_cli("stages", *mlp, "--topology", f"{config}:1")
    assert result.exit_code == 2  # the process lives: no SIGFPE
    assert f"GPU target config {config}: missing or zero: {named}" in result.stderr
    via_option = run_cli("stages", *mlp, "--topology", "h100:1", "--gpu-config", config)
    assert via_option.exit_code == 2 and named in via_option.stderr


def test_an_unreadable_config_is_a_usage_error(run_cli: Callable[..., Any]) -> None:
    mlp = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")
    result = run_cli("stages", *mlp, "--topology", "/nonexistent/gpu.txtpb:1")
    assert result.exit_code == 2 and "cannot read it" in result.stderr


def test_gpu_config_needs_a_gpu_topology(run_cli: Callable[..., Any]) -> None:
    mlp = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")
    result = run_cli("stages", *mlp, "--gpu-config", "x.txtpb")
    assert result.exit_code == 2 and "--gpu-config needs --topology" in result.stderr


@pytest.mark.skipif(MISSING is None, reason="the CUDA plugin is installed here")
def test_without_the_plugin_a_gpu_target_names_the_extra(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "stages",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        SAMPLES / "mlp.yaml",
        "--topology",
        "h100:8",
    )
    assert result.exit_code == 2
    assert result.stderr.count("\n") <= 2  # one line of error, no traceback
    assert 'pip install "jaxinspect[cuda]"' in result.stderr


# --- compiles: the plugin needed ---------------------------------------------------------


def _plain_devices(name: str) -> list[Any]:
    from jax.experimental import topologies

    target = gputarget.parse_target(name)
    description = topologies.get_topology_desc(
        platform="cuda", topology=target.plugin_topology, target_config=target.config.text
    )
    return list(description.devices)


def _plain_args(spec_path: Path, grid: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The spec's arguments as ShapeDtypeStructs on ``grid``, split as the spec says."""
    spec = load_spec(spec_path)

    def tree(node: Any) -> Any:
        if hasattr(node, "items") and not hasattr(node, "shape"):
            return {k: tree(v) for k, v in node.items}
        entries = [axes[0] if axes else None for axes in (node.sharding or ())]
        sharding = jax.sharding.NamedSharding(grid, P(*entries))
        return S(node.shape, jnp.dtype(node.dtype), sharding=sharding)

    return {name: tree(node) for name, node in spec.args}, dict(spec.static or {})


def _cpu_flops(compiled: Any) -> float:
    """FLOPs of the optimized GPU module by the CPU client's HLO cost analysis, as plain JAX
    can count them (the GPU executable's own ``cost_analysis()`` returns None)."""
    from jax._src.lib import xla_client

    module = compiled.runtime_executable().hlo_modules()[0]
    cpu = jax.devices("cpu")[0].client
    return float(xla_client._xla.hlo_module_cost_analysis(cpu, module)["flops"])


#: (sample, function, spec, the leaf split over `data` and its dimension, or None: as written)
RUNS = [
    ("mlp.py", "predict", "mlp.yaml", ("x", 0)),
    ("transformer.py", "block", "transformer.yaml", ("x", 1)),
    ("sharded.py", "train_step", "sharded_dp.yaml", None),
]


@needs_plugin
@pytest.mark.parametrize(("topology", "gpus"), [("h100:1", 1), ("h100:8", 8), ("a100:8", 8)])
@pytest.mark.parametrize(("file", "name", "spec", "split"), RUNS)
def test_samples_on_gpus_equal_a_plain_deviceless_compile(
    run_cli: Callable[..., Any],
    topology: str,
    gpus: int,
    file: str,
    name: str,
    spec: str,
    split: tuple[str, int] | None,
) -> None:
    spec_path = SAMPLES / spec if split is None else _split_spec(spec, *split)
    doc = _json(
        run_cli,
        "cost",
        f"{SAMPLES / file}:{name}",
        "-s",
        spec_path,
        "--topology",
        topology,
        "--mesh",
        f"data={gpus}",
    )
    devices = _plain_devices(topology)
    assert doc["devices"]["count"] == gpus == len(devices)
    assert doc["devices"]["kind"] == devices[0].device_kind
    assert doc["devices"]["topology"] == topology
    assert doc["devices"]["caveat"] == gputarget.CAVEAT
    grid = jax.sharding.Mesh(np.array(devices, dtype=object), ("data",))
    args, static = _plain_args(spec_path, grid)
    module = _load(file)
    compiled = (
        jax.jit(getattr(module, name), static_argnames=tuple(static))
        .lower(**args, **static)
        .compile()
    )
    memory = compiled.memory_analysis()
    flops = _cpu_flops(compiled)
    assert doc["cost"]["flops"] == flops > 0  # the whole module, as plain JAX counts it
    # The per-op costs add up to it (each op is analysed alone: float rounding only).
    assert doc["cost"]["counted_once"]["flops"] == pytest.approx(flops, rel=1e-6)
    assert doc["memory"]["argument_bytes"] == memory.argument_size_in_bytes
    assert doc["memory"]["output_bytes"] == memory.output_size_in_bytes
    assert doc["memory"]["temp_bytes"] == memory.temp_size_in_bytes
    text = compiled.as_text()
    plain = {
        op: text.count(f" {op}(") + text.count(f" {op}-start(")
        for op in COLLECTIVES
        if f" {op}(" in text or f" {op}-start(" in text
    }
    found: dict[str, int] = {}
    for c in doc["collectives"]:
        found[c["op"]] = found.get(c["op"], 0) + len(c["instructions"])
    assert found == plain
    if gpus > 1 and file != "mlp.py":
        assert found  # attention over a split sequence, gradients over a split batch
    assert "__triton_gemm" in text or "kind=kCustom" in text  # Triton GEMM fusions


@needs_plugin
def test_stages_show_triton_fusions_and_the_caveat_once(run_cli: Callable[..., Any]) -> None:
    step = (f"{SAMPLES / 'sharded.py'}:train_step", "-s", SAMPLES / "sharded_dp.yaml")
    result = run_cli("stages", *step, "--topology", "h100:8")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("XLA did not autotune") == 1
    assert "8 × NVIDIA H100 80GB HBM3 (topology h100:8" in result.stdout
    doc = _json(run_cli, "stages", *step, "--topology", "h100:8")
    assert doc["stages"]["hlo"]["text"].count("gemm_fusion_dot") >= 2  # Triton GEMM fusions
    assert doc["timings"]["first_call_s"] is None
    assert "GPU target h100:8" in doc["unavailable"]["timings.first_call_s"]


@needs_plugin
def test_memory_fits_against_the_gpu_s_hbm(run_cli: Callable[..., Any]) -> None:
    doc = _json(
        run_cli,
        "memory",
        f"{SAMPLES / 'sharded.py'}:train_step",
        "-s",
        SAMPLES / "sharded_dp.yaml",
        "--topology",
        "a100-40gb:8",
    )
    fit = doc["memory"]["fit"]
    assert fit["capacity_bytes"] == 42331013120 and fit["fits"] is True
    assert doc["memory"]["peak"]["bytes"] == fit["peak_bytes"] > 0


@needs_plugin
def test_a_user_config_file_compiles(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    config = tmp_path / "half_h100.txtpb"
    text = gputarget.shipped_config("h100_sxm").text
    config.write_text(
        text.replace("device_memory_size: 84942979072", "device_memory_size: 1000000")
    )
    args = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")
    doc = _json(run_cli, "stages", *args, "--topology", "h100:1", "--gpu-config", config)
    assert doc["memory"]["capacity_bytes"] == 1000000 and doc["memory"]["fits"] is False


@needs_plugin
def test_bench_and_measure_refuse_a_gpu_target(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    spec = tmp_path / "t.yaml"
    spec.write_text("topology: h100:1\nargs: {x: 'f32[8]'}\n")
    bench = run_cli("bench", f"{SAMPLES / 'simple.py'}:scale_shift", "-s", spec)
    assert bench.exit_code == 2
    assert "the GPU target h100:1 compiled from this host cannot run here" in bench.stderr
    doc = _json(run_cli, "cost", f"{SAMPLES / 'simple.py'}:scale_shift", "-s", spec, "--measure")
    assert doc["cost"]["measured"] is None
    assert "GPU target h100:1; nothing runs here" in doc["unavailable"]["cost.measured"]


@needs_plugin
def test_topologies_lists_gpus_beside_tpu_slices(run_cli: Callable[..., Any]) -> None:
    doc = _json(run_cli, "topologies")
    gpus = {g["name"]: g for g in doc["gpus"]}
    assert set(gpus) == set(gputarget.LISTED)
    assert gpus["h100"]["kind"] == _plain_devices("h100:1")[0].device_kind
    assert gpus["h100"]["hbm_bytes_per_gpu"] == 84942979072
    table = run_cli("topologies").stdout
    assert "a100-80gb" in table and "XLA h100_sxm.txtpb" in table


@needs_plugin
def test_ci_gate_no_new_all_gather_on_8_h100(
    run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = gate_gathers(run_cli, tmp_path, monkeypatch, "h100:8", "{data: 2, model: 4}")
    # On a GPU the gather is async (all-gather-start/-done): the collectives count it.
    assert "fails new-op:all-gather: all-gather in collectives: 0 -> 1" in failed.stdout


@needs_plugin
def test_the_plugin_stays_out_of_a_cpu_run_and_a_tpu_slice_in_one_process() -> None:
    # A fresh process without JAX_PLATFORMS: jaxinspect keeps CUDA out before JAX starts,
    # so the plugin never calls cuInit, and the CPU backend and libtpu's topology still work.
    code = (
        "import jax\n"
        "from jaxinspect.topologies.tpu import topology_devices\n"
        "gpus = topology_devices('h100:2')\n"
        "print(len(gpus), gpus[0].platform, jax.config.jax_platforms)\n"
        "print(float(jax.numpy.ones(3).sum()), jax.devices()[0].platform)\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('libtpu'):\n"
        "    print(len(topology_devices('v5e:2x2')))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "JAX_PLATFORMS"}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split("\n")
    assert lines[0] == "2 gpu cpu" and lines[1] == "3.0 cpu"
    assert "cuInit" not in run.stderr and "Traceback" not in run.stderr


@needs_plugin
def test_the_plugin_s_import_lines_stay_off_stderr(tmp_path: Path) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if k != "JAX_PLATFORMS"}
    # The plugin's libraries log at `import jax` on a host without a driver...
    plain = subprocess.run(
        [sys.executable, "-c", "import jax"], capture_output=True, text=True, env=env, timeout=120
    )
    driverless = "Could not find cuda drivers" in plain.stderr
    # ... and no jaxinspect command shows it, a CPU run or a GPU target.
    # (passes dumps the compilation: XLA's INFO lines about the dump stay off too.)
    mlp = [f"{SAMPLES / 'mlp.py'}:predict", "-s", str(SAMPLES / "mlp.yaml")]
    for extra in (["jaxpr"], ["jaxpr", "--topology", "h100:2"], ["passes"]):
        run = subprocess.run(
            [sys.executable, "-m", "jaxinspect", extra[0], *mlp, *extra[1:]],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert run.returncode == 0 and run.stderr == "", run.stderr
    assert driverless or plain.stderr == ""  # on a GPU host there is nothing to catch


@needs_plugin
def test_passes_report_and_recompile_on_8_h100(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    step = (f"{SAMPLES / 'sharded.py'}:train_step", "-s", SAMPLES / "sharded_dp.yaml")
    passes = run_cli("passes", *step, "--topology", "h100:8")
    assert passes.exit_code == 0, passes.stderr
    assert "triton-gemm-rewriter" in passes.stdout  # the GPU compiler's own pipeline
    assert passes.stdout.count("XLA did not autotune") == 1
    out = tmp_path / "step.html"
    report = run_cli("report", *step, "--topology", "h100:8", "-o", out)
    assert report.exit_code == 0, report.stderr
    html = out.read_text()
    assert "gemm_fusion_dot.3" in html and "gemm_fusion_dot.7" in html  # Triton GEMM fusions
    assert "8 × NVIDIA H100 80GB HBM3" in html and "h100:8 (compiled here, not run)" in html
    assert html.count("XLA did not autotune") == 1  # the caveat, under the devices
    # Two batch sizes through one jitted function on the eight GPUs: two compilations.
    spec = tmp_path / "batches.yaml"
    params = "{w1: 'f32[784,256]', b1: 'f32[256]', w2: 'f32[256,10]', b2: 'f32[10]'}"
    spec.write_text(
        "cases:\n"
        + "".join(
            f"  b{n}:\n    mesh: {{data: 8}}\n"
            f"    args: {{params: {params}, x: 'f32[{n}@data,784]'}}\n"
            for n in (128, 64)
        )
    )
    doc = _json(
        run_cli, "recompile", f"{SAMPLES / 'mlp.py'}:predict", "-s", spec, "--topology", "h100:8"
    )
    assert [c["name"] for c in doc["cases"]] == ["b128", "b64"]
    assert [c["compiled"] for c in doc["cases"]] == [True, True]
    assert doc["total_compiles"] == 2 and doc["backend"] == "gpu"


@needs_plugin
def test_cublas_calls_are_flagged_not_counted_in_cost(tmp_path: Path) -> None:
    # Triton GEMMs off (XLA_FLAGS: the CLI has no compiler options), XLA calls cuBLAS for
    # the MLP's matmuls. The CPU client's HLO cost analysis has no model of a custom call:
    # each is a row with null FLOPs and a reason, and the totals say they are a lower bound.
    # (The command docs/gpu.md shows: its XLA_FLAGS= prefix keeps test_docs_commands off it.)
    env = {**__import__("os").environ, "XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false"}
    mlp = [f"{SAMPLES / 'mlp.py'}:predict", "-s", str(SAMPLES / "mlp.yaml")]
    run = subprocess.run(
        [sys.executable, "-m", "jaxinspect", "cost", *mlp, "--topology", "h100:1", "-f", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    cost = doc["cost"]
    calls = [op for op in cost["ops"] if op["custom_call_target"] == "__cublas$lt$matmul"]
    assert len(calls) == 2  # one per layer, bias and relu in cuBLASLt's epilogue
    assert all(op["flops"] is None and op["counted"] is False for op in calls)
    flagged = {row["instruction"]: row["reason"] for row in cost["not_counted"]}
    assert {op["name"] for op in calls} <= set(flagged)
    assert all("'__cublas$lt$matmul': XLA has no cost model" in r for r in flagged.values())
    assert cost["loop_aware"]["lower_bound"] is True
    assert cost["flops"] is None and "sentinel" in doc["unavailable"]["cost.flops"]


def _real_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


needs_gpu = pytest.mark.skipif(not _real_gpu(), reason="needs a GPU (run on one: --backend gpu)")
TRANSFORMER_ON_GPU = (
    f"{SAMPLES / 'transformer.py'}:block",
    "-s",
    SAMPLES / "transformer.yaml",
    "--backend",
    "gpu",
)


@needs_gpu
def test_per_op_cost_on_a_real_gpu_counts_every_op(run_cli: Callable[..., Any]) -> None:
    # The GPU client (a PJRT C API plugin) has no per-module cost analysis ("UNIMPLEMENTED:
    # PJRT C API does not support GetHloCostAnalysis"): every op was "not counted" on a real
    # H200 until the per-op breakdown asked the CPU client, as a --topology compile does.
    doc = _json(run_cli, "cost", *TRANSFORMER_ON_GPU)
    cost = doc["cost"]
    assert doc["backend"] == "gpu" and cost["not_counted"] == []
    assert sum(op["flops"] for op in cost["ops"]) == pytest.approx(cost["flops"])
    assert cost["reconciliation"] is None  # the per-op sum is JAX's own figure


@needs_gpu
def test_measured_op_times_on_a_real_gpu_name_the_kernels_ops(run_cli: Callable[..., Any]) -> None:
    # XLA runs the kernels in a CUDA graph: each kernel event's hlo_op is the graph's thunk
    # (command_buffer_1); its name (gemm_fusion_dot_13) names the instruction.
    doc = _json(run_cli, "cost", *TRANSFORMER_ON_GPU, "--measure")
    # Every fusion launches a kernel and is timed (the bitcasts launch none); the kernels
    # are a fraction of so small a program's call, the rest is launching it.
    ops = doc["cost"]["ops"]
    fusions = {op["name"] for op in ops if op["opcode"] == "fusion"}
    timed = {op["name"] for op in ops if op["measured_s"]}
    assert fusions and timed == fusions
    assert doc["cost"]["measured"]["total_s"] > 0


@needs_gpu
@pytest.mark.parametrize(
    "command",
    [
        ["stages"],
        ["cost", "--by", "line"],
        ["memory"],
        ["passes"],
        ["bench", "--time-budget", "1"],
        ["recompile"],
    ],
)
def test_every_command_runs_on_a_real_gpu(run_cli: Callable[..., Any], command: list[str]) -> None:
    # What the H200 check ran by hand: each command on the GPU, at the console's width.
    result = run_cli(command[0], *TRANSFORMER_ON_GPU, *command[1:])
    assert result.exit_code == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


@needs_gpu
def test_the_report_runs_on_a_real_gpu(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = run_cli("report", *TRANSFORMER_ON_GPU, "--measure", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "gemm_fusion_dot" in out.read_text()
