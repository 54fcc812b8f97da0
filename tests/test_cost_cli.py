"""``jaxinspect cost`` end to end: tables, JSON against its schema, options and errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from conftest import ROOT, sample

COST_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/cost.schema.json").read_text())
STAGES_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/stages.schema.json").read_text())


def rnn(*extra: str) -> tuple[str, ...]:
    return ("cost", sample("rnn.py") + ":run", "--shapes", sample("rnn.yaml"), *extra)


def cost_json(run_cli, *args: str) -> dict:
    result = run_cli(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, COST_SCHEMA)
    return doc


def test_rnn_table_shows_raw_and_loop_aware_figures(run_cli):
    result = run_cli(*rnn())
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "XLA cost_analysis()" in out and "loop-aware (jaxinspect)" in out
    assert "99.3 k" in out and "9.93 M" in out  # raw once, loop-aware x100
    assert "while loops" in out and "100" in out
    assert "rnn.py:" in out and "step" in out
    assert "fusions (" in out and "kCustom" in out
    assert "memory (buffer assignment, memory_analysis)" in out
    assert "roofline" not in out  # no device given


def test_rnn_json_validates_and_keeps_jax_figures_beside_loop_aware(run_cli):
    doc = cost_json(run_cli, *rnn("--device", "h100"))
    cost = doc["cost"]
    assert cost["flops"] == cost["counted_once"]["flops"] == 99330
    assert cost["loop_aware"]["flops"] == pytest.approx(100 * 99330, rel=0.01)
    assert cost["loops"][0]["trip_count"] == 100
    assert sum(op["flops"] for op in cost["ops"]) == cost["loop_aware"]["flops"]
    assert [op["flops"] for op in cost["ops"]] == sorted(
        (op["flops"] for op in cost["ops"]), reverse=True
    )
    roofline = cost["roofline"]
    assert roofline["device"]["name"] == "h100" and "not a measurement" in roofline["note"]
    assert roofline["program"]["bound"] in ("compute", "memory")
    assert doc["memory"]["fit"]["fits"] is True
    estimate = doc["memory"]["peak_estimate"]
    assert (estimate["source"], estimate["bytes"]) == ("jaxinspect", doc["memory"]["peak"]["bytes"])
    assert doc["unavailable"]["memory.host_temp_bytes"].startswith("not reported")


def test_custom_call_sample_is_flagged_in_table_and_json(run_cli):
    args = ("cost", sample("cholesky.py") + ":factor", "--shapes", sample("cholesky.yaml"))
    result = run_cli(*args)
    assert result.exit_code == 0, result.stderr
    assert "not counted / lower bound" in result.stdout
    assert "lapack_spotrf" in result.stdout and "LOWER BOUND" in result.stdout
    doc = cost_json(run_cli, *args)
    assert doc["cost"]["loop_aware"]["lower_bound"] is True
    (flag,) = doc["cost"]["not_counted"]
    assert flag["kind"] == "custom-call"
    assert doc["cost"]["custom_calls"][0]["target"].startswith("lapack_spotrf")
    assert doc["unavailable"]["cost.roofline"].startswith("no --device")


#: A custom call XLA does not count (LAPACK's potrf on CPU) beside an op with transcendentals.
UNCOUNTED_AND_TRANSCENDENTAL = """
import jax.numpy as jnp


def factor_exp(x):
    return jnp.exp(jnp.linalg.cholesky(x @ x.T))
"""


@pytest.mark.parametrize("width", ["80", "250"])
def test_an_uncounted_op_beside_transcendentals_renders(run_cli, tmp_path, monkeypatch, width):
    # Regression: the "not counted" row got its transcendentals cell twice
    # ("10 cells for 9 columns"), which crashed lm_step's table on a TPU slice.
    (tmp_path / "prog.py").write_text(UNCOUNTED_AND_TRANSCENDENTAL)
    monkeypatch.setenv("COLUMNS", width)
    result = run_cli("cost", str(tmp_path / "prog.py") + ":factor_exp", "--arg", "x=f32[64,64]")
    assert result.exit_code == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert any(row[:1] == ["cholesky.0"] and "counted" in row for row in rows)
    assert "transc." in result.stdout  # the column exists (or is named as not shown)


def test_by_line_attributes_the_mlp_matmul_to_its_line(run_cli):
    lines = Path(sample("mlp.py")).read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(lines) if 'x @ params["w1"]' in text)
    result = run_cli(
        "cost",
        sample("mlp.py") + ":predict",
        "--shapes",
        sample("mlp.yaml"),
        "--by",
        "line",
        "--top",
        "2",
    )
    assert result.exit_code == 0, result.stderr
    table = result.stdout.split("cost by line")[1]
    first_row = next(r for r in table.splitlines() if "mlp.py:" in r)
    assert f"mlp.py:{line}" in first_row and "51.4 M" in first_row
    assert "more rows; --top 0 shows all" in table


def test_peak_options_make_a_custom_profile_and_sort_by_time(run_cli):
    doc = cost_json(
        run_cli, *rnn("--peak-flops", "1e12", "--peak-bandwidth", "1e11", "--sort", "time")
    )
    roofline = doc["cost"]["roofline"]
    assert roofline["device"]["name"] == "custom"
    assert roofline["device"]["peak_flops"] == {"f32": 1e12}
    times = [op["roofline"]["time_lower_bound_s"] for op in doc["cost"]["ops"]]
    assert times == sorted(times, reverse=True)
    point = roofline["program"]
    loop_aware = doc["cost"]["loop_aware"]
    expected = max(loop_aware["flops"] / 1e12, loop_aware["bytes_accessed"] / 1e11)
    assert point["time_lower_bound_s"] == pytest.approx(expected)
    assert roofline["sum_of_op_lower_bounds_s"] >= point["time_lower_bound_s"] * (1 - 1e-9)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--device", "h10"), "unknown device profile 'h10' (did you mean h100"),
        (("--sort", "time"), "--sort time needs --device"),
        (("--peak-flops", "1e12"), "give both --peak-flops and --peak-bandwidth"),
    ],
)
def test_option_mistakes_exit_2_with_a_message(run_cli, extra, message):
    result = run_cli(*rnn(*extra))
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_stages_shows_the_same_loop_aware_figures(run_cli):
    args = ("stages", sample("rnn.py") + ":run", "--shapes", sample("rnn.yaml"))
    result = run_cli(*args, "--stage", "cost", "--format", "json")
    assert result.exit_code == 0, result.stderr
    stages = json.loads(result.stdout)
    jsonschema.validate(stages, STAGES_SCHEMA)
    cost = cost_json(run_cli, *rnn())["cost"]
    assert stages["cost"]["flops"] == cost["flops"]
    assert stages["cost"]["loop_aware"] == cost["loop_aware"]
    table = run_cli(*args, "--stage", "cost")
    assert "loop-aware flops (jaxinspect)" in table.stdout and "9.93 M" in table.stdout
    assert "9,933,001" not in table.stdout  # exact integers are in the JSON only


def test_render_cost_with_a_fixed_console(run_cli):
    from jaxinspect.cli.commands.cost import _analyse
    from jaxinspect.cost.console import render_cost
    from jaxinspect.inputs.spec import load_spec
    from jaxinspect.xla.profiles import find_profile

    report = _analyse(
        sample("rnn.py") + ":run",
        load_spec(sample("rnn.yaml")),
        None,
        "flops",
        find_profile("tpu-v5e"),
    )
    console = Console(width=100, file=io.StringIO(), color_system=None)
    console.print(render_cost(report, by="function", top=3))
    out = console.file.getvalue()
    assert "cost by function" in out and "run.<locals>.step" in out
    assert "roofline model: Google Cloud TPU v5e" in out
    assert "A model, not a measurement" in out
    assert "fit on tpu-v5e" in out and "fits" in out
