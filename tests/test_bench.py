"""``jaxinspect bench`` on real JAX: cold processes, persistent cache, steady state, output."""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import jsonschema
import numpy as np
import pytest

from conftest import ROOT, sample
from jaxinspect.bench.report import STABLE_COLD_PHASES
from jaxinspect.bench.steady import Budget, CallInputs, measure_per_call, measure_pipelined

SCHEMA = json.loads((ROOT / "jaxinspect" / "schemas" / "bench.schema.json").read_text())
SIMPLE = (sample("simple.py") + ":scale_shift", "--shapes", sample("simple.yaml"))
FAST = ("--cold-runs", "2", "--runs", "20", "--warmup", "2", "--time-budget", "0.05")


@pytest.fixture(scope="module")
def cached_run(tmp_path_factory):
    """One JSON run with the persistent cache: 2 empty-cache, 1 priming, 2 populated processes."""
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    cache = tmp_path_factory.mktemp("cache") / "jax_cache"
    result = CliRunner().invoke(
        app,
        ["bench", *SIMPLE, *FAST, "--format", "json", "--compilation-cache", str(cache)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), cache


def _ordered(stats):
    assert 0 < stats["min_s"] <= stats["median_s"] <= stats["max_s"], stats


def test_json_validates_against_the_schema_with_stable_paths(cached_run):
    doc, _ = cached_run
    jsonschema.validate(doc, SCHEMA)
    bench = doc["bench"]
    for phase in STABLE_COLD_PHASES:
        _ordered(bench["cold"][phase])
        assert len(bench["cold"][phase]["samples_s"]) == 2
    cached = bench["cached"]
    assert cached["count"] == 20 and cached["warmup"] == 2
    assert 0 < cached["min_s"] <= cached["median_s"] <= cached["p90_s"] <= cached["p99_s"]
    assert cached["p99_s"] <= cached["max_s"] and cached["stdev_s"] >= 0
    assert bench["pipelined"]["per_call_s"] > 0 and bench["pipelined"]["calls"] == 20
    assert bench["dispatch"]["tiny_call_s"] > 0
    env = doc["environment"]
    assert env["backend"] == "cpu" and env["jax_version"] == jax.__version__
    assert env["cpu_count"] >= 1


def test_persistent_cache_hits_in_the_populated_round_for_real(cached_run):
    doc, cache = cached_run
    pc = doc["bench"]["persistent_cache"]
    assert doc["bench"]["cold_processes"]["cache"] == "empty"
    assert doc["bench"]["cold_processes"]["cache_hits"] == [0, 0]
    assert doc["bench"]["cold_processes"]["cache_requests"] == [1, 1]
    assert pc["populated_processes"]["cache_hits"] == [1, 1]
    assert pc["all_hits"] and pc["unexpected_misses"] == []
    assert pc["min_compile_time_secs"] == 0 and pc["min_entry_size_bytes"] == 0
    assert pc["entries_written"] >= 1 and pc["entry_bytes"] > 0
    assert not pc["already_populated"]
    assert set(pc["saved_s"]) == {"compile"}  # the one phase a persistent cache skips
    for phase in STABLE_COLD_PHASES:
        _ordered(pc["populated"][phase])
    # The cache folder holds JAX's entries and no scratch folders of ours.
    names = [p.name for p in cache.iterdir()]
    assert names and all(n.endswith("-cache") for n in names), names
    assert any("min_compile_time_secs=0" in n for n in doc["notes"])


def test_a_second_run_finds_the_folder_already_populated(cached_run, run_cli):
    _, cache = cached_run
    result = run_cli(
        "bench",
        *SIMPLE,
        *FAST[:2],
        "--cold-runs",
        "1",
        "--runs",
        "5",
        "--warmup",
        "1",
        "--time-budget",
        "0.01",
        "--format",
        "json",
        "--compilation-cache",
        str(cache),
    )
    assert result.exit_code == 0, result.stderr
    pc = json.loads(result.stdout)["bench"]["persistent_cache"]
    assert pc["already_populated"] and pc["all_hits"]


def test_table_output_with_compare_and_donation(run_cli, tmp_path):
    bigger = tmp_path / "bigger.yaml"
    bigger.write_text("args:\n  x: f32[4000]\n")
    result = run_cli(
        "bench",
        *SIMPLE,
        "--cold-runs",
        "1",
        "--runs",
        "10",
        "--warmup",
        "1",
        "--time-budget",
        "0.02",
        "--compare",
        str(bigger),
        "--donate",
        "x",
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for text in (
        "Cold first call",
        "no persistent",
        "import_jax",
        "second_call",
        "Cached calls (10 timed, 1 warm-up)",
        "pipelined",
        "distribution",
        "Compare (medians)",
        "bigger.yaml",
        "donated",
        "copied afresh",
        "--compilation-cache not given",
    ):
        assert text in out, text
    assert "Cold first call" not in result.stderr  # the report goes to stdout alone


def test_donated_inputs_are_recreated_for_every_call():
    donating = jax.jit(lambda x: x * 2, donate_argnums=0)
    x = jax.device_put(np.arange(8, dtype=np.float32))
    compiled = donating.lower(x).compile()
    inputs = CallInputs((x,), {}, frozenset({0}), frozenset())
    budget = Budget(runs=7, seconds=0.01, warmup=2)
    stats = measure_per_call(compiled, inputs, budget, target="t")
    pipelined = measure_pipelined(
        compiled, inputs, budget, stats.median_s, max_bytes=10**6, target="t"
    )
    assert stats.count == 7 and pipelined.calls == 7
    assert inputs.donated_bytes == 32
    # Each pipelined call holds a 32-byte output and a 32-byte donated copy: 3 fit in 200 bytes.
    capped = measure_pipelined(compiled, inputs, budget, stats.median_s, max_bytes=200, target="t")
    assert capped.calls == 3
    assert not x.is_deleted()  # only fresh copies were donated
    np.testing.assert_array_equal(np.asarray(x), np.arange(8))


def test_donating_an_unknown_argument_is_a_spec_error(run_cli):
    result = run_cli("bench", *SIMPLE, *FAST, "--donate", "y")
    assert result.exit_code == 2
    assert "donate" in result.stderr and "`y`" in result.stderr


def test_inputs_over_the_limit_are_refused_before_any_process(run_cli):
    result = run_cli("bench", *SIMPLE, *FAST, "--max-input-bytes", "100")
    assert result.exit_code == 2
    assert "4,000 bytes, over the limit of 100" in result.stderr
    assert "--max-input-bytes" in result.stderr


def test_a_failing_function_exits_3_and_a_bad_target_2(run_cli, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    raise ValueError('nope')\n")
    result = run_cli("bench", f"{bad}:f", "--shapes", sample("simple.yaml"), *FAST)
    assert result.exit_code == 3 and "nope" in result.stderr
    result = run_cli("bench", f"{bad}:missing", "--shapes", sample("simple.yaml"), *FAST)
    assert result.exit_code == 2


def test_shapes_and_arg_together_are_refused(run_cli):
    result = run_cli("bench", *SIMPLE, "--arg", "x=f32[3]")
    assert result.exit_code == 2 and "not both" in result.stderr


def test_bench_help_does_not_import_jax():
    code = (
        "import sys\nfrom jaxinspect.cli.app import app\n"
        "try:\n    app(['bench', '--help'])\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "print('JAX_IMPORTED', 'jax' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "JAX_IMPORTED False" in proc.stdout and "--compilation-cache" in proc.stdout


def test_a_failure_in_a_cold_process_keeps_its_error_type(run_cli, tmp_path):
    # This module imports fine here but raises in a fresh cold-run process.
    flaky = tmp_path / "flaky.py"
    flaky.write_text(
        "import sys\n"
        "spec = getattr(sys.modules['__main__'], '__spec__', None)\n"
        "if getattr(spec, 'name', '') == 'jaxinspect.bench.coldchild':\n"
        "    raise ValueError('only in a fresh process')\n"
        "def f(x):\n    return x + 1\n"
    )
    result = run_cli("bench", f"{flaky}:f", "--shapes", sample("simple.yaml"), *FAST)
    assert result.exit_code == 3, result.stderr
    assert "in a fresh process" in result.stderr and "only in a fresh process" in result.stderr
    assert "Traceback" not in result.stderr
    # With --debug the error carries the fresh process's own traceback, and the same exit code.
    debug = run_cli("bench", f"{flaky}:f", "--shapes", sample("simple.yaml"), *FAST, "--debug")
    assert debug.exit_code == 3, debug.stderr
    assert "traceback in the fresh process" in debug.stderr
    assert "only in a fresh process" in debug.stderr


def test_every_case_of_a_cases_spec_is_benchmarked_side_by_side(run_cli, tmp_path):
    spec = tmp_path / "sizes.yaml"
    spec.write_text(
        "cases:\n  small:\n    args:\n      x: f32[8]\n  large:\n    args:\n      x: f32[4096]\n"
    )
    result = run_cli(
        "bench",
        sample("simple.py") + ":scale_shift",
        "--shapes",
        str(spec),
        "--cold-runs",
        "1",
        "--runs",
        "5",
        "--warmup",
        "1",
        "--time-budget",
        "0.01",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["bench"]["spec"] == f"{spec} [small]"
    assert [c["spec"] for c in doc["compare"]] == [f"{spec} [large]"]
    assert doc["compare"][0]["input_bytes"] == 4096 * 4
    missing = run_cli(
        "bench", sample("simple.py") + ":scale_shift", "--shapes", str(spec), "--case", "medium"
    )
    assert missing.exit_code == 2 and "no case `medium`" in missing.stderr


def test_a_failing_case_or_compare_spec_is_a_row_and_the_worst_code_wins(run_cli, tmp_path):
    target = tmp_path / "picky.py"
    target.write_text(
        "def f(x):\n"
        "    if x.shape[0] > 100:\n"
        "        raise ValueError('too long for f')\n"
        "    return x + 1\n"
    )
    spec = tmp_path / "sizes.yaml"
    spec.write_text(
        "cases:\n  small:\n    args:\n      x: f32[8]\n  large:\n    args:\n      x: f32[4096]\n"
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("args:\n  y: f32[8]\n")  # f has no parameter y
    common = ("--cold-runs", "1", "--runs", "3", "--warmup", "1", "--time-budget", "0.01")
    result = run_cli(
        "bench", f"{target}:f", "--shapes", spec, "--compare", broken, *common, "--format", "json"
    )
    assert result.exit_code == 3, result.stderr  # the worst: the function failed (3) > spec (2)
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["bench"]["spec"] == f"{spec} [small]" and doc["bench"]["cached"]["count"] == 3
    large, wrong = doc["compare"]
    assert large["spec"] == f"{spec} [large]"
    assert large["error"]["exit_code"] == 3 and large["error"]["stage"] == "trace"
    assert "too long for f" in large["error"]["message"]
    assert wrong["spec"] == str(broken) and wrong["error"]["exit_code"] == 2
    assert "`y`" in wrong["error"]["message"]
    assert f"Error: case {spec} [large]: " in result.stderr
    assert f"Error: case {broken}: " in result.stderr
    assert "2 of 3 cases failed" in result.stderr
    table = run_cli("bench", f"{target}:f", "--shapes", spec, "--case", "large", "--compare",
                    broken, *common)  # fmt: skip
    assert table.exit_code == 3, table.stderr  # every spec failed: rows, and no environment
    assert "failed (exit 3," in table.stdout and "failed (exit 2)" in table.stdout
    assert "FAILED (exit 3): " in table.stdout and "too long for f" in table.stdout
    assert "no spec could be benchmarked" in table.stdout
