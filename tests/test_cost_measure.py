"""``cost --measure``: the compiled program under JAX's profiler, op times joined to the HLO."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jsonschema
import pytest
from jax import monitoring

from conftest import ROOT, SAMPLES
from jaxinspect.cost.optimes import NoOpEvents, measure_op_times, op_seconds
from jaxinspect.cost.rankcorr import ranks, spearman
from jaxinspect.pipeline.timing.calls import CallInputs
from jaxinspect.renderers.jsondoc import SCHEMAS_DIR

TRANSFORMER = (f"{SAMPLES / 'transformer.py'}:block", "-s", SAMPLES / "transformer.yaml")

_compiles: list[str] = []


def _on_duration(name: str, _secs: float, **kwargs: object) -> None:
    if name == "/jax/core/compile/backend_compile_duration":
        _compiles.append(str(kwargs.get("fun_name")))


monitoring.register_event_duration_secs_listener(_on_duration)


def test_ranks_share_ties_and_spearman_matches_a_hand_computed_case() -> None:
    assert ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Ranks x = 1,2,3,4 and y = 1,3,2,4: 1 - 6*sum(d^2)/(n(n^2-1)) = 1 - 6*2/60 = 0.8.
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    # With ties, Pearson of the average ranks: x ranks 1,2.5,2.5,4 against 1,2,3,4.
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)
    assert spearman([1, 2], [2, 1]) is None  # too few to order
    assert spearman([5, 5, 5], [1, 2, 3]) is None  # one value: no order


def test_op_seconds_reads_one_module_on_one_device() -> None:
    def event(
        op: str, dur: float, run: int, device: str = "0", module: str = "jit_f"
    ) -> dict[str, Any]:
        args = {"hlo_module": module, "hlo_op": op, "run_id": str(run), "device_ordinal": device}
        return {"ph": "X", "name": op, "dur": dur, "args": args}

    events = [
        event("fusion.1", 300.0, 1),
        event("fusion.1", 100.0, 2),
        event("dot.2", 50.0, 1),
        event("dot.2", 50.0, 2),
        event("fusion.1", 999.0, 1, device="1"),  # another device: not mixed in
        event("other", 999.0, 1, module="jit_g"),  # another module
        {"ph": "X", "name": "PjitFunction(jit(f))", "dur": 5000.0},
    ]
    seconds, runs, device = op_seconds(events, "jit_f")
    assert (runs, device) == (2, "0")
    assert seconds == pytest.approx({"fusion.1": 200e-6, "dot.2": 50e-6})
    with pytest.raises(NoOpEvents, match="no per-op events of jit_h"):
        op_seconds(events, "jit_h")


def test_op_seconds_joins_a_gpu_cuda_graph_s_kernels_to_their_instructions() -> None:
    # A real H200 trace (tests/golden/h200_cuda_graph_trace.json says how it was made): XLA
    # ran the kernels in a CUDA graph, so every kernel event's hlo_op is the graph's thunk
    # and only its name (gemm_fusion_dot_13) says which instruction launched it.
    trace = json.loads(
        (Path(__file__).parent / "golden" / "h200_cuda_graph_trace.json").read_text()
    )
    events, module, calls = trace["events"], trace["module_name"], trace["calls"]
    assert {e["args"]["hlo_op"] for e in events} == {"command_buffer_1"}
    fusions = set(re.findall(r"^\s*(?:ROOT )?%([\w.\-]+) = \S+ fusion\(", trace["hlo"], re.M))
    seconds, runs, device = op_seconds(events, module, calls=calls, module_text=trace["hlo"])
    assert (runs, device) == (calls, "0")
    assert set(seconds) == fusions and len(fusions) == 15  # one kernel per fusion, all joined
    total = sum(float(e["dur"]) for e in events) * 1e-6 / calls
    assert sum(seconds.values()) == pytest.approx(total)
    # Without the module's names, the graph's thunk is all there is.
    assert set(op_seconds(events, module, calls=calls)[0]) == {"command_buffer_1"}


@pytest.fixture(scope="module")
def measured(run_cli_module: Callable[..., Any]) -> dict[str, Any]:
    jax.clear_caches()  # an earlier test's in-process cache would answer without compiling
    _compiles.clear()
    result = run_cli_module(
        "cost", *TRANSFORMER, "--measure", "--device", "epyc-9654", "-f", "json"
    )
    assert result.exit_code == 0, result.stderr
    return {"doc": json.loads(result.stdout), "compiles": list(_compiles)}


@pytest.fixture(scope="module")
def run_cli_module() -> Callable[..., Any]:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    def invoke(*args: Any) -> Any:
        env = {"COLUMNS": "100", "NO_COLOR": "1"}
        return CliRunner().invoke(app, [str(a) for a in args], env=env)

    return invoke


def test_measured_ops_are_instructions_of_the_optimized_hlo(measured: dict[str, Any]) -> None:
    doc = measured["doc"]
    ops = {op["name"]: op for op in doc["cost"]["ops"]}
    timed = [op for op in ops.values() if op["measured_s"]]
    assert len(timed) >= 10
    # Every measured name is an instruction of the optimized HLO the report read.
    hlo = doc["cost"]["ops"]
    assert {op["name"] for op in timed} <= {op["name"] for op in hlo}
    # The two big matmul fusions of the MLP block are measured, with achieved FLOP/s.
    big = [op for op in timed if op["flops"] == 2 * 128 * 128 * 512]
    assert big and all(op["achieved_flops_per_s"] > 0 for op in big)
    assert sum(op["measured_share"] for op in timed) == pytest.approx(1.0)


def test_op_times_add_up_to_a_call(measured: dict[str, Any]) -> None:
    m = measured["doc"]["cost"]["measured"]
    assert m["program_runs"] >= 20
    assert m["total_s"] == pytest.approx(
        sum(op["measured_s"] or 0 for op in measured["doc"]["cost"]["ops"])
    )
    # Under the profiler the ops are the whole call: `make bench` prints that ratio on a quiet
    # machine (tests/benchmarks/bench_cost_measure.py). Wall time, which load or another
    # pytest-xdist worker moves severalfold; only a unit slip is off by more than these bounds.
    assert 0.01 < m["total_s"] / m["profiled_call_median_s"] < 100
    assert m["coverage"] == pytest.approx(m["total_s"] / m["call_median_s"])
    assert m["scale"] == pytest.approx(m["call_median_s"] / m["profiled_call_median_s"])
    assert m["scaled_coverage"] == pytest.approx(m["total_s"] / m["profiled_call_median_s"])
    op = next(op for op in measured["doc"]["cost"]["ops"] if op["measured_s"])
    assert op["measured_scaled_s"] == pytest.approx(op["measured_s"] * m["scale"])


def test_rank_agreement_and_schema(measured: dict[str, Any]) -> None:
    doc = measured["doc"]
    agreement = doc["cost"]["measured"]["rank_agreement"]
    assert set(agreement) == {"flops", "bytes", "roofline"}
    assert doc["cost"]["measured"]["roofline_profile"] == "epyc-9654"
    assert all(-1.0 <= v <= 1.0 for v in agreement.values())
    jsonschema.validate(doc, json.loads((SCHEMAS_DIR / "cost.schema.json").read_text()))


def test_one_compilation(measured: dict[str, Any]) -> None:
    assert measured["compiles"] == ["jit(block)"]  # measuring runs the one executable


def test_without_measure_the_fields_are_null_with_a_reason(run_cli: Callable[..., Any]) -> None:
    result = run_cli("cost", *TRANSFORMER, "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["cost"]["measured"] is None
    assert doc["unavailable"]["cost.measured"] == "--measure not given"
    assert all(op["measured_s"] is None for op in doc["cost"]["ops"])


def test_sort_measured_needs_measure(run_cli: Callable[..., Any]) -> None:
    result = run_cli("cost", *TRANSFORMER, "--sort", "measured")
    assert result.exit_code == 2
    assert "--sort measured needs --measure" in result.stderr


def test_table_ranks_by_measured_time_at_80_columns(run_cli_module: Callable[..., Any]) -> None:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    result = CliRunner().invoke(
        app,
        ["cost", *map(str, TRANSFORMER), "--measure", "--sort", "measured", "--measure-runs", "5"],
        env={"COLUMNS": "80", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert any(line.startswith("ops by measured") for line in lines)
    assert any("rank agreement: FLOPs" in line for line in lines)


def test_sort_measured_json_follows_the_schema(run_cli: Callable[..., Any]) -> None:
    result = run_cli(
        "cost", *MLP, "--measure", "--sort", "measured", "--measure-runs", "3", "-f", "json"
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["cost"]["sort"] == "measured"
    jsonschema.validate(doc, json.loads((SCHEMAS_DIR / "cost.schema.json").read_text()))
    # Measured ops first, slowest first; the ones the trace does not name after them.
    times = [op["measured_s"] for op in doc["cost"]["ops"]]
    known = [t for t in times if t is not None]
    assert known == sorted(known, reverse=True) and times[: len(known)] == known


def test_a_topology_is_not_measured(run_cli: Callable[..., Any]) -> None:
    pytest.importorskip("libtpu")
    result = run_cli(
        "cost",
        f"{SAMPLES / 'mlp.py'}:predict",
        "-s",
        SAMPLES / "mlp.yaml",
        "--topology",
        "v5e:2x2",
        "--measure",
        "-f",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["cost"]["measured"] is None
    assert "nothing runs here" in doc["unavailable"]["cost.measured"]


MLP = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")


def _mlp_compiled() -> tuple[Any, CallInputs]:
    import jax.numpy as jnp

    from jaxinspect.inputs.target import load_target

    predict = load_target(f"{SAMPLES / 'mlp.py'}:predict").function
    params = {
        "w1": jnp.full((784, 256), 0.01),
        "b1": jnp.zeros(256),
        "w2": jnp.full((256, 10), 0.01),
        "b2": jnp.zeros(10),
    }
    x = jnp.ones((128, 784))
    compiled = jax.jit(predict).lower(params, x).compile()
    return compiled, CallInputs((params, x), {}, frozenset(), frozenset())


def _entry_fusions(hlo: str) -> set[str]:
    entry = hlo[hlo.index("\nENTRY ") :]
    return set(re.findall(r"^\s+(?:ROOT )?%(\S+) = \S+ fusion\(", entry, re.MULTILINE))


def test_an_executable_in_hand_is_measured_op_by_op_and_the_trace_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled, inputs = _mlp_compiled()
    fusions = _entry_fusions(compiled.as_text())
    assert len(fusions) == 4  # two matmuls, bias+relu, bias
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _compiles.clear()
    times = measure_op_times(compiled, inputs, runs=5, target="mlp.py:predict")
    assert _compiles == []  # the executable in hand runs; nothing compiles
    assert list(tmp_path.iterdir()) == []  # the profiler's folder is gone
    # The trace names exactly the ENTRY's fusion instructions, each with a positive time.
    assert set(times.seconds) == fusions
    assert all(s > 0 for s in times.seconds.values())
    assert times.program_runs == 6  # the first call and 5 cached ones, all traced
    assert times.device == "0"
    assert times.total_s == pytest.approx(sum(times.seconds.values()))


def test_mlp_json_joins_the_trace_to_the_optimized_hlo(run_cli: Callable[..., Any]) -> None:
    jax.clear_caches()
    _compiles.clear()
    result = run_cli("cost", *MLP, "--measure", "--measure-runs", "10", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert _compiles == ["jit(predict)"]
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS_DIR / "cost.schema.json").read_text()))
    compiled, _ = _mlp_compiled()
    ops = doc["cost"]["ops"]
    timed = {op["name"] for op in ops if op["measured_s"] is not None}
    assert timed == _entry_fusions(compiled.as_text())
    # Ops the trace does not name stay null, never 0.
    assert all(op["measured_s"] != 0 for op in ops)
    m = doc["cost"]["measured"]
    assert m["program_runs"] == 11
    assert m["rank_agreement"]["roofline"] is None  # no --device: no roofline to rank by
    assert m["roofline_profile"] is None
    # Within 20 % of the cached call on a quiet machine (`make bench` prints the figure). Wall
    # time, which a loaded machine or another pytest-xdist worker moves severalfold (0.24 seen):
    # only a unit slip (ms or µs for s) is off by more than these bounds.
    assert 0.01 < m["coverage"] < 100
    big = next(op for op in ops if op["flops"] == 2 * 128 * 784 * 256)
    assert big["achieved_flops_per_s"] == pytest.approx(big["flops"] / big["measured_s"])
    assert big["achieved_bytes_per_s"] == pytest.approx(big["bytes_accessed"] / big["measured_s"])


def test_op_seconds_without_run_ids_divides_by_the_calls_made() -> None:
    args = {"hlo_module": "jit_f", "hlo_op": "fusion", "device_ordinal": "0"}
    events = [{"ph": "X", "name": "fusion", "dur": 30.0, "args": args}] * 3
    seconds, runs, _ = op_seconds(events, "jit_f", calls=3)
    assert runs == 3
    assert seconds == pytest.approx({"fusion": 30e-6})


def test_spearman_with_ties_on_both_sides_by_hand() -> None:
    # x ranks 1.5,1.5,3,4,5; y ranks 1,2,4,4,4 (y ties 3 ways on 30).
    # Means 3 and 3; dx = -1.5,-1.5,0,1,2 and dy = -2,-1,1,1,1: sum dx*dy = 7.5,
    # sum dx^2 = 9.5, sum dy^2 = 8; rho = 7.5 / sqrt(9.5 * 8) = 0.86031...
    assert ranks([30, 30, 30, 20, 10]) == [4.0, 4.0, 4.0, 2.0, 1.0]
    rho = spearman([1, 1, 2, 3, 4], [10, 20, 30, 30, 30])
    assert rho == pytest.approx(7.5 / 76**0.5)


def test_wide_table_shows_achieved_rates_and_names_the_roofline_profile() -> None:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    args = ["cost", *map(str, MLP), "--measure", "--measure-runs", "3", "--device", "h100"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "220", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("op ") and "B/s" in line)
    assert header.split()[:11] == [
        "op",
        "kind",
        "shape",
        "runs",
        "flops",
        "%",
        "bytes",
        "measured",
        "t%",
        "FLOP/s",
        "B/s",
    ]
    row = next(line for line in lines if line.lstrip().startswith("ynn_fusion.1 "))
    assert "GFLOP/s" in row and re.search(r"\d [kMGT]?B/s", row)
    agreement = next(line for line in lines if "rank agreement: roofline" in line)
    assert agreement.rstrip().endswith("on h100")


def test_by_line_carries_the_measured_time_of_its_ops(measured: dict[str, Any]) -> None:
    cost = measured["doc"]["cost"]
    lines = cost["by_line"]
    assert sum(g["measured_s"] or 0 for g in lines) == pytest.approx(cost["measured"]["total_s"])
    mlp = next(g for g in lines if g["line"] == 34)  # the MLP half of the block
    assert mlp["measured_s"] > 0 and mlp["function"] == "block"


def test_the_by_line_table_has_relative_paths_functions_and_time(
    run_cli_module: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    args = ("cost", "sample_programs/mlp.py:predict", "-s", "sample_programs/mlp.yaml")
    args += ("--measure", "--measure-runs", "5", "--by", "line")
    result = run_cli_module(*args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    line = json.loads(result.stdout)["cost"]["by_line"][0]
    assert line["key"].startswith("sample_programs/mlp.py:") and line["function"] == "predict"
    assert line["measured_s"] > 0
    table = run_cli_module(*args).stdout
    row = next(r for r in table.splitlines() if r.lstrip().startswith(line["key"]))
    assert f"{line['key']} predict" in row and "measured" in table
