"""Scientific programs (diffrax, blackjax, numpyro) through every command, on factory inputs.

Random inputs do not fit them (diffrax refuses save times that do not increase); with
``--inputs factory`` every command exits 0, and the FLOPs and memory it reports equal those of
plain JAX (``jax.jit(f).lower(...).compile()``) computed here. Problem sizes are small.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import pytest
from typer.testing import Result

from conftest import SAMPLES


def _load_samples() -> Any:
    spec = importlib.util.spec_from_file_location("scientific_plain", SAMPLES / "scientific.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scientific = _load_samples()

# (target function, its spec): each spec is `args: {from: scientific.py:<name>_inputs}`.
PROGRAMS = {
    "lotka_volterra": "scientific_lotka_volterra.yaml",
    "nuts_step": "scientific_nuts.yaml",
    "svi_step": "scientific_svi.yaml",
}


def _target(name: str) -> str:
    return f"{SAMPLES / 'scientific.py'}:{name}"


def _spec(name: str) -> str:
    return str(SAMPLES / PROGRAMS[name])


def _plain_jax(name: str) -> Any:
    """The program compiled by plain JAX on its factory's arrays."""
    inputs = getattr(scientific, f"{name.removesuffix('_step')}_inputs")()
    return jax.jit(getattr(scientific, name)).lower(**inputs).compile()


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_every_command_runs_on_factory_inputs(
    name: str, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    compiled = _plain_jax(name)
    xla = compiled.cost_analysis()
    memory = compiled.memory_analysis()
    target, spec = _target(name), _spec(name)

    stages = _json(
        run_cli(
            "stages",
            target,
            "--shapes",
            spec,
            "--inputs",
            "factory",
            "--runs",
            "2",
            "--format",
            "json",
        )
    )
    assert stages["cost"]["flops"] == xla["flops"]
    assert stages["memory"]["temp_bytes"] == memory.temp_size_in_bytes
    assert stages["memory"]["argument_bytes"] == memory.argument_size_in_bytes
    timings = stages["timings"]
    assert timings["inputs"]["source"] == "factory"
    assert timings["inputs"]["random"] == []

    cost = _json(run_cli("cost", target, "--shapes", spec, "--format", "json"))
    assert cost["cost"]["flops"] == xla["flops"]

    mem = _json(run_cli("memory", target, "--shapes", spec, "--format", "json"))
    assert mem["memory"]["memory_analysis"]["temp_bytes"] == memory.temp_size_in_bytes

    html = tmp_path / "report.html"
    report = run_cli("report", target, "--shapes", spec, "--inputs", "factory", "-o", html)
    assert report.exit_code == 0, report.stderr
    assert "Inputs (factory)" in html.read_text(encoding="utf-8")

    manifest = tmp_path / "jaxinspect.yaml"
    manifest.write_text(f"targets:\n  - target: {target}\n    shapes: {spec}\n", encoding="utf-8")
    update = run_cli("check", "--update", "--manifest", manifest)
    assert update.exit_code == 0, update.stderr
    check = run_cli("check", "--manifest", manifest)
    assert check.exit_code == 0, check.stderr

    bench = _json(
        run_cli(
            "bench",
            target,
            "--shapes",
            spec,
            "--inputs",
            "factory",
            "--cold-runs",
            "1",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--format",
            "json",
        )
    )
    assert bench["bench"]["inputs"]["source"] == "factory"
    if name == "nuts_step":  # NUTS integrates for as many steps as the state's values ask
        assert bench["bench"]["data_dependent_loops"] > 0
        assert "these were the factory's values" in bench["bench"]["caveat"]
        assert "these were the factory's values" in timings["caveat"]


# --- finding 2: a function that refuses random values -------------------------------------

_CHECKED = """
import equinox as eqx
import jax.numpy as jnp


def increasing_only(ts):
    ts = eqx.error_if(ts, jnp.any(jnp.diff(ts) <= 0), "ts must increase")
    return jnp.sum(ts)


def times():
    return {"ts": jnp.linspace(0.0, 1.0, 8)}
"""


@pytest.fixture
def checked(tmp_path: Path) -> Path:
    """A program that raises when its input does not increase, a factory of increasing times."""
    (tmp_path / "checked.py").write_text(_CHECKED, encoding="utf-8")
    (tmp_path / "factory.yaml").write_text("args: {from: checked.py:times}\n", encoding="utf-8")
    (tmp_path / "factory_inputs.yaml").write_text(
        "args: {from: checked.py:times}\ninputs: factory\n", encoding="utf-8"
    )
    (tmp_path / "shapes.yaml").write_text("args:\n  ts: f32[8]\n", encoding="utf-8")
    return tmp_path


def test_random_factory_inputs_failure_says_so(
    checked: Path, run_cli: Callable[..., Result]
) -> None:
    target = f"{checked / 'checked.py'}:increasing_only"
    result = run_cli("stages", target, "--shapes", checked / "factory.yaml", "--stage", "timings")
    assert result.exit_code == 3
    assert "ts must increase" in result.stderr
    assert "The inputs ts were seeded random values" in result.stderr
    assert "--inputs factory" in result.stderr
    assert "jaxinspect/" not in result.stderr  # none of jaxinspect's own frames
    assert result.stderr.count("\n") <= 8


def test_yaml_leaves_failure_suggests_a_factory(
    checked: Path, run_cli: Callable[..., Result]
) -> None:
    target = f"{checked / 'checked.py'}:increasing_only"
    result = run_cli("stages", target, "--shapes", checked / "shapes.yaml", "--inputs", "factory")
    assert result.exit_code == 3
    assert "The inputs ts were seeded random values" in result.stderr
    assert "Build them with a `from:` factory" in result.stderr


@pytest.mark.parametrize(
    ("spec", "flags"),
    [("factory.yaml", ("--inputs", "factory")), ("factory_inputs.yaml", ())],
)
def test_factory_inputs_run_on_the_factory_values(
    checked: Path, run_cli: Callable[..., Result], spec: str, flags: tuple[str, ...]
) -> None:
    target = f"{checked / 'checked.py'}:increasing_only"
    result = run_cli(
        "stages", target, "--shapes", checked / spec, *flags, "--runs", "1", "--format", "json"
    )
    inputs = _json(result)["timings"]["inputs"]
    assert inputs == {"source": "factory", "random": [], "factory": ["ts"]}


def test_bench_failure_names_the_random_inputs(
    checked: Path, run_cli: Callable[..., Result]
) -> None:
    target = f"{checked / 'checked.py'}:increasing_only"
    result = run_cli(
        "bench", target, "--shapes", checked / "factory.yaml", "--cold-runs", "1", "--runs", "1"
    )
    assert result.exit_code == 3
    assert "The inputs ts were seeded random values" in result.stderr
    assert "stages --no-execute" in result.stderr


def test_report_no_execute_skips_the_run(
    checked: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    target = f"{checked / 'checked.py'}:increasing_only"
    out = tmp_path / "r.html"
    result = run_cli(
        "report", target, "--shapes", checked / "factory.yaml", "--no-execute", "-o", out
    )
    assert result.exit_code == 0, result.stderr
    assert "--no-execute" in out.read_text(encoding="utf-8")
    both = run_cli(
        "report",
        target,
        "--shapes",
        checked / "factory.yaml",
        "--no-execute",
        "--measure",
        "-o",
        out,
    )
    assert both.exit_code == 2
    assert "--measure runs the program" in both.stderr


@pytest.mark.parametrize("command", ["stages", "bench"])
def test_unknown_inputs_value_is_a_usage_error(
    checked: Path, run_cli: Callable[..., Result], command: str
) -> None:
    target = f"{checked / 'checked.py'}:increasing_only"
    result = run_cli(command, target, "--shapes", checked / "factory.yaml", "--inputs", "factroy")
    assert result.exit_code == 2
    assert "expected random or factory, not factroy (did you mean factory?)" in result.stderr


def test_unknown_inputs_spec_key_value(checked: Path, run_cli: Callable[..., Result]) -> None:
    (checked / "bad.yaml").write_text("args:\n  ts: f32[8]\ninputs: real\n", encoding="utf-8")
    result = run_cli(
        "stages", f"{checked / 'checked.py'}:increasing_only", "--shapes", checked / "bad.yaml"
    )
    assert result.exit_code == 2
    assert "bad.yaml: inputs: expected random or factory, not real" in result.stderr


def test_cost_inputs_needs_measure(checked: Path, run_cli: Callable[..., Result]) -> None:
    result = run_cli(
        "cost",
        f"{checked / 'checked.py'}:increasing_only",
        "--shapes",
        checked / "factory.yaml",
        "--inputs",
        "factory",
    )
    assert result.exit_code == 2
    assert "add --measure" in result.stderr


# --- finding 3: loops whose trip count depends on the values ---------------------------------

_LOOPS = """
import jax
import jax.numpy as jnp


def count_up(limit):
    return jax.lax.while_loop(lambda c: c < limit, lambda c: c + 1.0, 0.0)


def doubled(x):
    return jax.lax.fori_loop(0, 10, lambda i, c: c * 2.0, x)


def limit():
    return {"limit": jnp.asarray(100.0)}


jitted_count_up = jax.jit(count_up)


def number_limit():
    return {"limit": 100.0}
"""


@pytest.fixture
def loops(tmp_path: Path) -> Path:
    (tmp_path / "loops.py").write_text(_LOOPS, encoding="utf-8")
    (tmp_path / "limit.yaml").write_text("args: {from: loops.py:limit}\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("flags", "values"),
    [((), "these were random"), (("--inputs", "factory"), "these were the factory's values")],
)
def test_data_dependent_loop_carries_a_caveat(
    loops: Path, run_cli: Callable[..., Result], flags: tuple[str, ...], values: str
) -> None:
    target = f"{loops / 'loops.py'}:count_up"
    spec = loops / "limit.yaml"
    timings = _json(
        run_cli("stages", target, "--shapes", spec, *flags, "--runs", "1", "--format", "json")
    )["timings"]
    assert timings["data_dependent_loops"] == 1
    assert timings["caveat"].startswith(f"the time depends on the input values; {values}")
    table = run_cli("stages", target, "--shapes", spec, *flags, "--runs", "1", "--stage", "timings")
    assert table.exit_code == 0, table.stderr
    assert f"note: the time depends on the input values; {values}" in table.stdout


def test_factory_values_keep_a_traced_python_number(
    loops: Path, run_cli: Callable[..., Result]
) -> None:
    # A jax.jit target traces the factory's Python number as a weak scalar; run on the
    # factory's values, it is passed as the number it is, not refused as another array.
    (loops / "number.yaml").write_text("args: {from: loops.py:number_limit}\n", encoding="utf-8")
    document = _json(
        run_cli(
            "stages",
            f"{loops / 'loops.py'}:jitted_count_up",
            "--shapes",
            loops / "number.yaml",
            "--inputs",
            "factory",
            "--runs",
            "1",
            "--format",
            "json",
        )
    )
    (arg,) = document["args"]
    assert (arg["path"], arg["kind"], arg["shape"], arg["weak_type"]) == (
        "limit",
        "array",
        [],
        True,
    )
    assert document["timings"]["inputs"] == {
        "source": "factory",
        "random": [],
        "factory": ["limit"],
    }
    assert "these were the factory's values" in document["timings"]["caveat"]


def test_loop_with_known_trip_count_has_no_caveat(
    loops: Path, run_cli: Callable[..., Result]
) -> None:
    timings = _json(
        run_cli(
            "stages",
            f"{loops / 'loops.py'}:doubled",
            "--arg",
            "x=f32[4]",
            "--runs",
            "1",
            "--format",
            "json",
        )
    )["timings"]
    assert timings["data_dependent_loops"] == 0
    assert timings["caveat"] is None
    assert timings["inputs"] == {"source": "random", "random": ["x"], "factory": []}


def test_no_execute_leaves_the_inputs_null_with_a_reason(
    loops: Path, run_cli: Callable[..., Result]
) -> None:
    document = _json(
        run_cli(
            "stages",
            f"{loops / 'loops.py'}:count_up",
            "--shapes",
            loops / "limit.yaml",
            "--no-execute",
            "--format",
            "json",
        )
    )
    assert document["timings"]["inputs"] is None
    assert document["timings"]["caveat"] is None
    assert document["unavailable"]["timings.inputs"] == "--no-execute"
