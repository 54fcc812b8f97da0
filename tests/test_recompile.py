"""`jaxinspect recompile`: real compilation counts, readable keys, and the reason for each miss."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import Result

from conftest import ROOT, sample
from jaxinspect.errors import ExitCode
from jaxinspect.inputs.cases import parse_spec_cases_text
from jaxinspect.inputs.target import load_target
from jaxinspect.recompile.cachekey import CacheKey, LeafKey, key_changes
from jaxinspect.recompile.report import SweepReport
from jaxinspect.recompile.runner import run_sweep

SCHEMA = json.loads((ROOT / "jaxinspect/schemas/recompile.schema.json").read_text())

PROGRAM = """
def step(x, lr, training=False):
    y = x * lr
    return y if training else y + 1
"""

# a and a_again share one executable; b, c and d each compile, for one reason each.
SWEEP = """
cases:
  a:       {args: {x: 'f32[8,4]', lr: 0.1}, static: {training: false}}
  a_again: {args: {x: 'f32[8,4]', lr: 0.5}, static: {training: false}}
  b:       {args: {x: 'f32[4,4]', lr: 0.1}, static: {training: false}}
  c:       {args: {x: 'f32[8,4]', lr: 'f32[]'}, static: {training: false}}
  d:       {args: {x: 'f32[8,4]', lr: 0.1}, static: {training: true}}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("recompile")
    (folder / "step.py").write_text(PROGRAM)
    (folder / "sweep.yaml").write_text(SWEEP)
    return folder


@pytest.fixture(scope="module")
def sweep(program: Path) -> SweepReport:
    cases = parse_spec_cases_text(SWEEP, source="sweep.yaml").cases
    return run_sweep(load_target(f"{program / 'step.py'}:step"), cases)


def test_hits_and_compiles_are_counted_not_assumed(sweep: SweepReport) -> None:
    assert [c.compiled for c in sweep.cases] == [True, False, True, True, True]
    assert [c.compiles for c in sweep.cases] == [1, 0, 1, 1, 1]
    assert sweep.total_compiles == 4
    assert [c.shares_with for c in sweep.cases] == [None, "a", None, None, None]
    hit = sweep.cases[1]
    assert (hit.traces, hit.lowerings, hit.compile_s) == (0, 0, 0.0)
    assert all(c.compile_s > 0 and c.wall_s >= c.compile_s for c in sweep.cases if c.compiled)


def test_each_new_compile_names_the_component_that_changed(sweep: SweepReport) -> None:
    why = {c.name: (c.nearest, [str(ch) for ch in c.changes]) for c in sweep.cases}
    assert why["a"] == (None, [])
    assert why["a_again"] == ("a", [])  # a weak float's value is not part of the key
    assert why["b"] == ("a_again", ["x: shape 8×4 → 4×4"])
    assert why["c"] == ("a_again", ["lr: weak_type True → False"])
    assert why["d"] == ("a_again", ["training: static False → True"])


def test_key_is_readable(sweep: SweepReport) -> None:
    key = sweep.cases[3].key
    assert [leaf.summary for leaf in key.leaves] == ["float32[8,4] cpu:0", "float32[] cpu:0"]
    assert sweep.cases[0].key.leaves[1].summary == "float32[] weak cpu:0"
    assert key.static == (("training", "False"),)
    assert key.structure == "PyTreeDef((*, *))"


def test_key_changes_cover_structure_and_missing_leaves() -> None:
    leaf = LeafKey("p[0]", (2,), "float32", False, "cpu:0")
    as_list = CacheKey((leaf,), (), "PyTreeDef(([*],))")
    as_tuple = CacheKey((leaf,), (), "PyTreeDef(((*,),))")
    [change] = key_changes(as_list, as_tuple)
    assert str(change) == "(arguments): structure PyTreeDef(([*],)) → PyTreeDef(((*,),))"
    grown = CacheKey((leaf, LeafKey("q", (), "int32", True, "cpu:0")), (("n", "3"),), "T")
    assert [str(c) for c in key_changes(as_list, grown)] == [
        "q: argument absent → int32[]",
        "n: static absent → 3",
    ]


def test_a_case_binding_other_statics_fails_alone(program: Path) -> None:
    text = SWEEP + "  e: {args: {x: 'f32[8,4]', lr: 0.1, training: 'bool[]'}}\n"
    cases = parse_spec_cases_text(text, source="sweep.yaml").cases
    report = run_sweep(load_target(f"{program / 'step.py'}:step"), cases)
    assert [c.name for c in report.cases] == ["a", "a_again", "b", "c", "d", "e"]
    [failed] = report.failures
    assert failed.name == "e"
    assert failed.error.exit_code == ExitCode.USAGE_ERROR
    assert failed.error.message.startswith("sweep.yaml: cases.e: binds static_argnums=()")
    assert report.total_compiles == 4  # the other five ran as without e


@pytest.mark.parametrize(("limit", "code"), [(4, 0), (3, 1)])
def test_max_compiles_sets_the_exit_code(
    run_cli: Callable[..., Result], program: Path, limit: int, code: int
) -> None:
    args = ["recompile", f"{program / 'step.py'}:step", "-s", program / "sweep.yaml"]
    result = run_cli(*args, "--max-compiles", str(limit), "-f", "json")
    assert result.exit_code == code, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    assert document["total_compiles"] == 4
    assert document["exceeded"] is (code == 1)
    assert document["cases"][2]["changes"][0] == {
        "path": "x",
        "component": "shape",
        "before": "8×4",
        "after": "4×4",
        "text": "x: shape 8×4 → 4×4",
    }
    if code:
        assert "4 compilations, over --max-compiles 3" in result.stderr


def test_table_and_case_selection(run_cli: Callable[..., Result], program: Path) -> None:
    args = ["recompile", f"{program / 'step.py'}:step", "-s", program / "sweep.yaml"]
    result = run_cli(*args, "--case", "d", "--case", "a")
    assert result.exit_code == 0, result.stderr
    assert "training: static False → True" in result.stdout  # cases run in spec order
    assert "2 XLA compilations for 2 cases" in result.stdout
    bad = run_cli(*args, "--case", "z")
    assert bad.exit_code == 2
    assert "has no case `z`" in bad.stderr


def test_linreg_sweep_sample(run_cli: Callable[..., Result]) -> None:
    target = sample("linreg.py") + ":loss_fn"
    result = run_cli("recompile", target, "-s", sample("linreg_sweep.yaml"), "-f", "json")
    assert result.exit_code == 0, result.stderr
    cases = {c["name"]: c for c in json.loads(result.stdout)["cases"]}
    assert cases["b64_again"]["shares_executable_with"] == "b64"
    assert [c["text"] for c in cases["b128"]["changes"]] == [
        "x: shape 64×16 → 128×16",
        "y: shape 64 → 128",
    ]
    assert "x: dtype float32 → bfloat16" in [c["text"] for c in cases["b128_bf16"]["changes"]]


def test_transform_and_failing_case(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    target = sample("linreg.py") + ":loss_fn"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "cases:\n"
        "  ok: {args: {params: {w: 'f32[4]', b: 'f32[]'}, x: 'f32[8,4]', y: 'f32[8]'}}\n"
        "  bad: {args: {params: {w: 'f32[4]', b: 'f32[]'}, x: 'f32[8,5]', y: 'f32[8]'}}\n"
    )
    result = run_cli("recompile", target, "-s", sweep, "-t", "grad", "--case", "ok", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["composition"] == "jit(grad(loss_fn, argnums=0))"
    failed = run_cli("recompile", target, "-s", sweep)
    assert failed.exit_code == 3
    assert "Error: case bad: " in failed.stderr
    assert "dot_general requires contracting dimensions" in failed.stderr
    assert "1 XLA compilations for 2 cases (1 failed)" in failed.stdout
    assert re.search(r"│ bad\s+│ failed \(exit 3\) │", failed.stdout)


# ok and ok2 compile; mismatch fails in the user's code (3), typo does not bind (2).
FAILING = """
cases:
  ok: {args: {x: 'f32[4]', y: 'f32[4]'}}
  mismatch: {args: {x: 'f32[4]', y: 'f32[5]'}}
  typo: {args: {x: 'f32[4]', z: 'f32[4]'}}
  ok2: {args: {x: 'f32[8]', y: 'f32[8]'}}
"""


@pytest.mark.parametrize(
    ("cases", "max_compiles", "code"),
    [
        (["ok", "mismatch", "typo", "ok2"], None, 3),  # the worst of 3 and 2
        (["ok", "typo", "ok2"], None, 2),
        (["ok", "typo", "ok2"], "1", 2),  # 2 beats the exceeded gate's 1
        (["ok", "ok2"], "1", 1),
    ],
)
def test_failing_cases_are_rows_and_the_worst_code_wins(
    run_cli: Callable[..., Result],
    tmp_path: Path,
    cases: list[str],
    max_compiles: str | None,
    code: int,
) -> None:
    sweep = tmp_path / "failing.yaml"
    sweep.write_text(FAILING)
    args = ["recompile", sample("simple.py") + ":axpy", "-s", sweep, "-f", "json"]
    args += [arg for name in cases for arg in ("--case", name)]
    args += ["--max-compiles", max_compiles] if max_compiles else []
    result = run_cli(*args)
    assert result.exit_code == code, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    assert [c["name"] for c in document["cases"]] == cases
    assert document["total_compiles"] == 2
    errors = {c["name"]: c["error"] for c in document["cases"]}
    assert errors["ok"] is None and errors["ok2"] is None
    assert document["cases"][-1]["changes"][0]["text"] == "x: shape 4 → 8"
    if "mismatch" in cases:
        assert errors["mismatch"]["exit_code"] == 3
        assert errors["mismatch"]["stage"] == "compile"
        assert "incompatible shapes for broadcasting" in errors["mismatch"]["message"]
        assert "Error: case mismatch: " in result.stderr
    if "typo" in cases:
        assert errors["typo"] == {
            "message": f"{sweep}: cases.typo: args.z: {sample('simple.py')}:axpy(x, y) "
            "has no parameter `z`",
            "exit_code": 2,
            "stage": None,
            "hint": None,
        }
        assert f"Error: case typo: {sweep}: cases.typo: args.z:" in result.stderr
    failed = [name for name in cases if errors[name] is not None]
    if failed:
        assert f"{len(failed)} of {len(cases)} cases failed ({', '.join(failed)})" in result.stderr


def test_debug_prints_each_failed_case_traceback_and_still_sweeps(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    sweep = tmp_path / "failing.yaml"
    sweep.write_text(FAILING)
    target = sample("simple.py") + ":axpy"
    result = run_cli(
        "recompile", target, "-s", sweep, "--case", "mismatch", "--case", "ok2", "--debug"
    )
    assert result.exit_code == 3, result.stderr
    assert "1 XLA compilations for 2 cases (1 failed)" in result.stdout
    assert "Traceback (most recent call last):" in result.stderr
    assert "Error: case mismatch: " in result.stderr


#: Issue #26 finding 10: eager helpers JAX compiles while the target traces.
HELPERS = """
import jax
import jax.numpy as jnp


def norm_helper(n):
    return jnp.sqrt(n)


def scaled(x):
    with jax.ensure_compile_time_eval():
        scale = jnp.sqrt(jnp.asarray(x.shape[0], jnp.float32))  # the finding's eager sqrt
        # Defined here, so compiled in no earlier test of this process: always a helper.
        scale = scale * jax.jit(norm_helper)(jnp.float32(x.shape[0]))
    return x * scale
"""

HELPER_CASES = """
cases:
  a: {args: {x: 'f32[5]'}}
  b: {args: {x: 'f32[7]'}}
"""


def test_helper_compilations_are_named_apart_from_the_targets(run_cli, tmp_path: Path) -> None:
    (tmp_path / "scaled.py").write_text(HELPERS)
    (tmp_path / "cases.yaml").write_text(HELPER_CASES)
    args = [f"{tmp_path}/scaled.py:scaled", "--shapes", tmp_path / "cases.yaml"]
    # A fresh shape (5, 7) for the eager helpers: nothing in this process compiled them yet.
    result = run_cli("recompile", *args, "--max-compiles", "2", "--format", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    assert document["total_compiles"] == 2 and not document["exceeded"]
    assert [c["events"]["compiles"] for c in document["cases"]] == [1, 1]
    helpers = {h["name"]: h["count"] for h in document["cases"][0]["helper_compiles"]}
    assert helpers["jit(norm_helper)"] == 1
    assert document["cases"][1]["helper_compiles"] == []  # the helpers' cache now has them
    assert document["helper_compiles"] == document["cases"][0]["helper_compiles"]
    table = run_cli("recompile", *args, "--max-compiles", "1")
    assert table.exit_code == 1  # the target's own second compilation still counts
    assert "2 XLA compilations for 2 cases (--max-compiles 1) EXCEEDED" in table.stdout
