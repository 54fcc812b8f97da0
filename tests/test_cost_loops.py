"""Loops: cost per trip, ``--assume-trips``, and the report's loop-aware headline (#26, 4 and 8)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from test_render import make_report

from conftest import ROOT, SAMPLES
from jaxinspect.cost.costbuild import build_cost_report
from jaxinspect.cost.loopcost import parse_assumption
from jaxinspect.errors import UsageError
from jaxinspect.xla.breakdown import OpCost, ProgramCost
from jaxinspect.xla.profiles import find_profile
from jaxinspect.xla.xlacost import XlaCost

COST_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/cost.schema.json").read_text())

#: The finding's shape: a setup line outside a loop of unknown trip count (diffrax's solve).
SOLVE = """\
import jax
import jax.numpy as jnp


def setup(x):
    return jnp.tanh(x @ x.T)


def step(y):
    return jnp.sin(y) @ y


def solve(x, n):
    y = setup(x)
    y = jax.lax.fori_loop(0, n, lambda i, y: step(y), y)
    return jnp.sum(y)
"""
MATMUL = 2 * 64**3  # each of setup's and step's 64x64 products


@pytest.fixture
def solve(tmp_path: Path) -> tuple[str, ...]:
    (tmp_path / "solve.py").write_text(SOLVE)
    return (f"{tmp_path}/solve.py:solve", "--arg", "x=f32[64,64]", "--arg", "n=i32[]")


def _cost(run_cli: Callable[..., Any], *args: Any) -> dict[str, Any]:
    result = run_cli("cost", *args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(doc, COST_SCHEMA)
    return doc


def _line_share(doc: dict[str, Any], line: str) -> float:
    group = next(g for g in doc["cost"]["by_line"] if g["key"].endswith(line))
    flops: float = group["flops"] / doc["cost"]["loop_aware"]["flops"]
    return flops


def test_a_loop_of_unknown_trip_count_shows_its_cost_per_trip(run_cli, solve) -> None:
    doc = _cost(run_cli, *solve)
    (loop,) = doc["cost"]["loops"]
    assert loop["trip_count"] is None and loop["assumed_trips"] is None
    # One trip: step's product, the counter's add and the loop's compare.
    assert loop["per_trip"]["flops"] == MATMUL + 2
    assert loop["per_trip"]["transcendentals"] == 64 * 64  # sin
    assert doc["cost"]["loop_aware"]["lower_bound"] and not doc["cost"]["assumed_trips"]
    # Counted once, the setup line seems as heavy as the step that runs every trip.
    assert _line_share(doc, "solve.py:6") == pytest.approx(_line_share(doc, "solve.py:10"), 1e-5)
    table = run_cli("cost", *solve, "--by", "line")
    assert table.exit_code == 0
    assert "flops/trip" in table.stdout and "524 k" in table.stdout
    assert "shares of a LOWER BOUND" in table.stdout and "--assume-trips" in table.stdout


@pytest.mark.parametrize("loop", ["while", "solve.py:15"])
def test_assumed_trips_make_an_estimate_with_shares_of_it(run_cli, solve, loop) -> None:
    proved = _cost(run_cli, *solve)
    name = proved["cost"]["loops"][0]["instruction"]
    chosen = name if loop == "while" else loop
    doc = _cost(run_cli, *solve, "--assume-trips", f"{chosen}=40")
    aware, (assumed_loop,) = doc["cost"]["loop_aware"], doc["cost"]["loops"]
    assert doc["cost"]["assumed_trips"] == [
        {"loop": name, "trips": 40, "assumption": f"{chosen}=40"}
    ]
    assert doc["cost"]["proved"]["flops"] == proved["cost"]["loop_aware"]["flops"]
    # 39 more trips of body and condition, and the last test (1 FLOP): 41 tests against 1.
    per_trip = assumed_loop["per_trip"]["flops"]
    assert aware["flops"] == proved["cost"]["loop_aware"]["flops"] + 39 * per_trip + 1
    assert assumed_loop["assumed_trips"] == 40 and per_trip == MATMUL + 2
    # No longer a lower bound: flagged as assumed.
    assert not aware["lower_bound"]
    assert [f["kind"] for f in doc["cost"]["not_counted"]] == ["assumed-trip-count"]
    # Shares are of the assumed total: the step now outweighs the setup 40 to 1.
    assert _line_share(doc, "solve.py:10") > 0.97 > 0.03 > _line_share(doc, "solve.py:6")
    body_ops = [op for op in doc["cost"]["ops"] if op["computation"] == assumed_loop["body"]]
    assert body_ops and all(op["runs"] == 40 for op in body_ops)
    table = run_cli("cost", *solve, "--assume-trips", f"{chosen}=40")
    assert table.exit_code == 0
    assert "ASSUMED" in table.stdout and "ASSUMED trips" in table.stdout


def test_a_sample_loop_shows_its_cost_per_trip(run_cli) -> None:
    doc = _cost(run_cli, f"{SAMPLES / 'rnn.py'}:run", "-s", SAMPLES / "rnn.yaml")
    (loop,) = doc["cost"]["loops"]
    # 99,328 per step + the counter's add + one test: 100 trips + the last test = 9,933,001.
    assert loop["trip_count"] == 100 and loop["per_trip"]["flops"] == 99_330
    assert 100 * loop["per_trip"]["flops"] + 1 == doc["cost"]["loop_aware"]["flops"]


def test_assumption_mistakes_are_usage_errors(run_cli, solve) -> None:
    rnn = (f"{SAMPLES / 'rnn.py'}:run", "-s", SAMPLES / "rnn.yaml")
    for bad in ("while.5", "while.5=0", "=3"):
        with pytest.raises(UsageError, match="expected LOOP=N"):
            parse_assumption(bad)
    result = run_cli("cost", *solve, "--assume-trips", "nowhere=3", catch_exceptions=True)
    assert result.exit_code == 2 and "no while loop is called 'nowhere'" in result.stderr
    assert re.search(r"loops: while[.\d]* at solve\.py:15", result.stderr)
    # XLA counted the scan's 100 trips: nothing to assume.
    counted = run_cli("cost", *rnn, "--assume-trips", "rnn.py:19=5", catch_exceptions=True)
    assert counted.exit_code == 2 and "XLA proved the trip count" in counted.stderr
    early = run_cli("report", *solve, "-o", "x.html", "--assume-trips", "x", catch_exceptions=True)
    assert early.exit_code == 2 and "expected LOOP=N" in early.stderr


def _cards(html: str) -> dict[str, str]:
    pairs = re.findall(r'<div class="v">([^<]*)</div><div class="k">([^<]*)</div>', html)
    return {k: v for v, k in pairs}


def test_the_report_headline_is_loop_aware_and_says_so(run_cli, tmp_path, solve) -> None:
    rnn = (f"{SAMPLES / 'rnn.py'}:run", "-s", SAMPLES / "rnn.yaml")
    out = tmp_path / "rnn.html"
    assert run_cli("report", *rnn, "-o", out).exit_code == 0
    html = out.read_text()
    cards = _cards(html)
    # 100 trips of the scan (XLA's cost_analysis() says 99.3 k: the body once).
    assert cards["FLOPs (loop-aware)"] == "9.93 M"
    assert "bytes accessed (loop-aware)" in cards
    assert "counts each loop body once: 99.3 k FLOPs" in html
    assert "While loops" in html and "99.3 k" in html  # the loop table's FLOPs per trip
    assumed = tmp_path / "solve.html"
    result = run_cli("report", *solve, "-o", assumed, "--assume-trips", "solve.py:15=40")
    assert result.exit_code == 0, result.stderr
    text = assumed.read_text()
    assert _cards(text)["FLOPs (assumed trips)"] == "21.5 M"
    assert "Trip counts ASSUMED with --assume-trips" in text and "40 (ASSUMED)" in text


def _op(name: str, dtype: str, flops: float, bytes_accessed: float) -> OpCost:
    return OpCost(
        name=name,
        computation="main",
        opcode="dot",
        shape=f"{dtype}[1024,1024]",
        dtype=dtype,
        fusion_kind=None,
        fused_ops=(),
        custom_call_target=None,
        runs=1,
        per_run=XlaCost(flops, 0.0, bytes_accessed),
        input_bytes=0,
        output_bytes=0,
        op_name=None,
        source=None,
    )


def test_the_sum_of_per_op_bounds_never_falls_below_the_program_s() -> None:
    # Issue #26, finding 12: an f32 op does most of the FLOPs (the program's ceiling is f32's)
    # beside a compute-bound bf16 op nearly as large; with the f32 peak for all the FLOPs the
    # program's bound came out above the sum of the ops' own bounds.
    ops = (_op("f32_dot", "f32", 6e10, 1e6), _op("bf16_dot", "bf16", 5e10, 1e6))
    report = build_cost_report(
        make_report(), ProgramCost(ops, (), ()), "flops", find_profile("h100")
    )
    program = report.program_roofline
    assert program is not None and program.peak_dtype == "f32"
    assert report.roofline_sum_s is not None and report.roofline_sum_s >= program.time_s
    peak = dict(find_profile("h100").peak_flops)
    assert program.time_s == pytest.approx(6e10 / peak["f32"] + 5e10 / peak["bf16"])


def test_a_custom_call_s_sentinel_is_reconciled_on_cpu(run_cli) -> None:
    cholesky = (f"{SAMPLES / 'cholesky.py'}:factor", "-s", SAMPLES / "cholesky.yaml")
    found = _cost(run_cli, *cholesky)["cost"]["reconciliation"]
    # XLA adds LAPACK's -1 "unknown" into cost_analysis(); the per-op sum leaves the call out.
    assert found["backend_model"] == {"flops": 0, "transcendentals": 0, "bytes_accessed": 0}
    assert found["one_by_one"]["flops"] == -1 and found["not_counted"] == 1
    mlp = (f"{SAMPLES / 'mlp.py'}:predict", "-s", SAMPLES / "mlp.yaml")
    assert _cost(run_cli, *mlp)["cost"]["reconciliation"] is None  # they agree
