"""``cost --measure``: the compiled program under JAX's profiler, op times joined to the HLO."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from jax import monitoring

from conftest import SAMPLES
from jaxinspect.cost.profiled import NoOpEvents, op_seconds
from jaxinspect.cost.rankcorr import ranks, spearman
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
    def event(op: str, dur: float, run: int, device: str = "0", module: str = "jit_f") -> dict:
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


@pytest.fixture(scope="module")
def measured(run_cli_module: Callable[..., Any]) -> dict[str, Any]:
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
    # Under the profiler the ops are the whole call (a shared 2-core machine: loose bounds;
    # `make bench` prints the figures on a quiet one).
    assert 0.6 < m["total_s"] / m["profiled_call_median_s"] < 1.4
    assert m["coverage"] == pytest.approx(m["total_s"] / m["call_median_s"])
    assert m["scale"] == pytest.approx(m["call_median_s"] / m["profiled_call_median_s"])
    assert m["scaled_coverage"] == pytest.approx(m["total_s"] / m["profiled_call_median_s"])
    op = next(op for op in measured["doc"]["cost"]["ops"] if op["measured_s"])
    assert op["measured_scaled_s"] == pytest.approx(op["measured_s"] * m["scale"])


def test_rank_agreement_and_schema(measured: dict[str, Any]) -> None:
    doc = measured["doc"]
    agreement = doc["cost"]["measured"]["rank_agreement"]
    assert set(agreement) == {"flops", "bytes", "roofline"}
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
