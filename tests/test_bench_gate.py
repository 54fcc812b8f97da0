"""The latency gate: baselines saved and read back, rules, verdicts on real and fake samples."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import jax  # noqa: F401  (pytester in-process runs unload what they import; jaxlib cannot reload)
import jsonschema
import pytest

from conftest import ROOT
from jaxinspect.bench.baseline import decide, parse_gate_rules
from jaxinspect.bench.significance import ratio_bounds
from jaxinspect.errors import UsageError

pytest_plugins = ["pytester"]

SCHEMAS = ROOT / "jaxinspect" / "schemas"

PROGRAM = """
import jax
import jax.numpy as jnp


def step(x):
    return jnp.tanh(x @ x) * 0.5


def fast(x):
    return jax.lax.fori_loop(0, STEPS, lambda _, y: step(y), x)
"""


def noisy(rng: random.Random, center: float, n: int = 30) -> list[float]:
    # Latency-like: a floor plus a long right tail.
    return [center * (1 + rng.expovariate(20)) for _ in range(n)]


def test_identical_samples_are_no_regression_and_a_slowdown_is() -> None:
    rng = random.Random(1)
    alarms = sum(decide(noisy(rng, 1.0), noisy(rng, 1.0), 0.10)[3] for _ in range(200))
    assert alarms == 0
    detections = sum(decide(noisy(rng, 1.3), noisy(rng, 1.0), 0.10)[3] for _ in range(50))
    assert detections == 50
    # Slower, but not beyond the threshold: no regression.
    assert not decide(noisy(rng, 1.05), noisy(rng, 1.0), 0.10)[3]


def test_bounds_contain_the_ratio_and_are_reproducible() -> None:
    rng = random.Random(2)
    new, old = noisy(rng, 2.0), noisy(rng, 1.0)
    ratio, low, high = ratio_bounds(new, old, 0.98)
    assert low < ratio < high and 1.7 < ratio < 2.3
    assert ratio_bounds(new, old, 0.98) == (ratio, low, high)
    # Three samples each: a regression only when every new one is slower than every old one.
    assert decide([1.5, 1.6, 1.7], [1.0, 1.1, 1.2], 0.10)[3]
    assert not decide([1.5, 1.6, 1.0], [1.0, 1.1, 1.2], 0.10)[3]
    with pytest.raises(ValueError):
        ratio_bounds([], [1.0], 0.98)


def test_rules_parse_and_errors_name_the_rule() -> None:
    rules = parse_gate_rules("cached.min>+10%, compile>+25%")
    assert [(r.metric, r.threshold) for r in rules] == [("cached.min", 0.10), ("compile", 0.25)]
    assert [r.metric for r in parse_gate_rules(None)] == ["cached.min"]
    with pytest.raises(UsageError, match="unknown metric 'cached.mean'"):
        parse_gate_rules("cached.mean>+10%")
    with pytest.raises(UsageError, match="expected METRIC>\\+N%"):
        parse_gate_rules("compile<5%")


def write_program(folder: Path, steps: int) -> str:
    path = folder / f"prog{steps}.py"
    path.write_text(PROGRAM.replace("STEPS", str(steps)))
    return f"{path}:fast"


QUICK = ("--arg", "x=f32[64,64]", "--cold-runs", "1", "--time-budget", "0.3")


def test_save_then_judge_same_and_slower_code(
    tmp_path: Path, run_cli: Callable[..., object]
) -> None:
    baseline = tmp_path / "base.json"
    saved = run_cli("bench", write_program(tmp_path, 20), *QUICK, "--save", baseline)
    assert saved.exit_code == 0, saved.stderr
    document = json.loads(baseline.read_text())
    jsonschema.validate(document, json.loads((SCHEMAS / "bench-baseline.schema.json").read_text()))
    assert len(document["gate"]["target_min_s"]) == 30

    # The same code, judged with a margin no machine noise reaches: the load of other processes
    # (or pytest-xdist workers) can change between the two runs, and slow one severalfold. The
    # statistics of the +10 % default are measured by tests/benchmarks/bench_latency_gate.py.
    same = run_cli(
        "bench",
        write_program(tmp_path, 20),
        *QUICK,
        "--baseline",
        baseline,
        "--fail-on",
        "cached.min>+300%",
        "-f",
        "json",
    )
    assert same.exit_code == 0, same.stdout
    doc = json.loads(same.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "bench.schema.json").read_text()))
    assert doc["gate"]["failed"] is False and doc["gate"]["rules"][0]["rule"] == "cached.min>+300%"
    assert 0.25 < doc["gate"]["rules"][0]["ratio"] < 4

    slower = run_cli(
        "bench",
        write_program(tmp_path, 400),
        *QUICK,
        "--baseline",
        baseline,
        "--fail-on",
        "cached.min>+300%,cached.median>+300%",
        "--allow-other-baseline",  # another file: the slower implementation of the function
    )
    assert slower.exit_code == 1  # twenty times the work
    assert "REGRESSION" in slower.stdout and "cached.min>+300%" in slower.stdout


def test_bad_baselines_and_options_are_usage_errors(
    tmp_path: Path, run_cli: Callable[..., object]
) -> None:
    target = write_program(tmp_path, 2)
    missing = run_cli("bench", target, *QUICK, "--baseline", tmp_path / "nope.json")
    assert missing.exit_code == 2 and "nope.json not found" in missing.stderr
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"kind": "jaxinspect-bench-baseline", "schema_version": 1}')
    result = run_cli("bench", target, *QUICK, "--baseline", corrupt)
    assert result.exit_code == 2 and "corrupt.json: `target` must be a string" in result.stderr
    alone = run_cli("bench", target, *QUICK, "--fail-on", "cached.min>+5%")
    assert alone.exit_code == 2 and "--baseline" in alone.stderr


def test_another_environment_is_a_note_unless_strict(
    tmp_path: Path, run_cli: Callable[..., object]
) -> None:
    target = write_program(tmp_path, 4)
    baseline = tmp_path / "base.json"
    assert run_cli("bench", target, *QUICK, "--save", baseline).exit_code == 0
    document = json.loads(baseline.read_text())
    document["environment"]["jax_version"] = "0.0.1"
    baseline.write_text(json.dumps(document))
    generous = ("--fail-on", "cached.min>+900%")
    relaxed = run_cli("bench", target, *QUICK, "--baseline", baseline, *generous)
    assert relaxed.exit_code == 0
    assert "jax_version: baseline '0.0.1'" in relaxed.stderr
    strict = run_cli("bench", target, *QUICK, "--baseline", baseline, *generous, "--strict-env")
    assert strict.exit_code == 1
    one_process = run_cli(
        "bench", target, *QUICK, "--baseline", baseline, "--fail-on", "compile>+9%"
    )
    assert one_process.exit_code == 2 and "at least 3 fresh-process samples" in one_process.stderr


BENCH_TESTS = """
import jax
import jax.numpy as jnp


def model(x):
    return jax.lax.fori_loop(0, STEPS, lambda _, y: jnp.tanh(y @ y) * 0.5, x)


def test_latency(jaxinspect_bench):
    jaxinspect_bench(model, {"args": {"x": "f32[64,64]"}}, budget_s=0.3, fail_on="cached.min>+60%")
"""


def test_the_bench_fixture_stores_then_guards_a_baseline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_speed=BENCH_TESTS.replace("STEPS", "10"))
    missing = pytester.runpytest()
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no stored latency baseline*--jaxinspect-update*"])
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1)
    stored = pytester.path / "__jaxinspect__" / "test_speed" / "test_latency.bench.json"
    assert json.loads(stored.read_text())["kind"] == "jaxinspect-bench-baseline"
    pytester.runpytest().assert_outcomes(passed=1)
    # 50 times the work: a regression that no load on the machine (nor another pytest-xdist
    # worker) hides behind +60 % (8 times the work once passed under load).
    pytester.makepyfile(test_speed=BENCH_TESTS.replace("STEPS", "500"))
    slower = pytester.runpytest()
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(["*latency regression against*", "*REGRESSION*"])
