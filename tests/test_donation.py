"""`donate:` in the spec: parsing, binding to donate_argnums/argnames, and the aliasing report."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jsonschema
import pytest
from typer.testing import Result

from conftest import ROOT, sample
from jaxinspect.errors import SpecError
from jaxinspect.inputs.binding import bind_spec
from jaxinspect.inputs.spec import parse_spec_text
from jaxinspect.inputs.target import load_target
from jaxinspect.pipeline.aliasing import buffer_aliases, parse_input_output_alias
from jaxinspect.stages.runner import InspectOptions, run_inspection

SCHEMA = json.loads((ROOT / "jaxinspect/schemas/stages.schema.json").read_text())

LINREG_DONATE = """
args:
  params: {w: 'f32[16]', b: 'f32[]'}
  x: f32[64,16]
  y: f32[64]
donate: [params]
"""


def update(params: Any, x: Any, *, lr: Any) -> Any:
    return {k: v - lr * x.sum() for k, v in params.items()}


def test_donate_parses_to_names() -> None:
    spec = parse_spec_text(LINREG_DONATE, source="s.yaml")
    assert spec.donate == ("params",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("args: {x: 'f32[2]'}\ndonate: {x: 1}", "s.yaml: donate must be a list of parameter names"),
        ("args: {x: 'f32[2]'}\ndonate: [x, x]", "s.yaml: donate[1]: `x` is listed twice"),
        ("args: {x: 'f32[2]'}\ndonate: ['1x']", "s.yaml: donate[0]: '1x' is not a valid"),
        ("args: {x: 'f32[2]'}\ndonate: [z]", "s.yaml: donate: `z` is not under `args`"),
        (
            "args: {x: 'f32[2]'}\nstatic: {n: 1}\ndonate: [n]",
            "s.yaml: donate: `n` is under `static`",
        ),
    ],
)
def test_bad_donate_is_a_spec_error(text: str, message: str) -> None:
    with pytest.raises(SpecError, match="^" + re.escape(message)):
        parse_spec_text(text, source="s.yaml")


def test_plan_gives_donate_argnums_and_argnames() -> None:
    spec = parse_spec_text(
        "args: {params: 'f32[2]', x: 'f32[2]', lr: 'f32[]'}\ndonate: [params, lr]", source="s.yaml"
    )
    plan = bind_spec(update, spec, target="t")
    assert plan.donate_argnums == (0,)
    assert plan.donate_argnames == ("lr",)
    assert plan.donated == ("params", "lr")
    assert [a.donated for a in plan.args] == [True, False, True]


def test_list_form_donation_is_checked_against_the_signature() -> None:
    spec = parse_spec_text("args: ['f32[2]', 'f32[2]']\ndonate: [params, nope]", source="s.yaml")
    with pytest.raises(SpecError, match=r"^s.yaml: donate: t is called without an argument `nope`"):
        bind_spec(lambda params, x: params, spec, target="t")


def test_header_parser_reads_real_compiler_output() -> None:
    f = jax.jit(lambda a, b: (b * 2, a + 1), donate_argnums=(0, 1))
    a, b = (jax.ShapeDtypeStruct((n,), jnp.float32) for n in (3, 4))
    module = f.trace(a, b).lower().compile().runtime_executable().hlo_modules()[0]
    header = module.to_string().split("\n", 1)[0]
    assert parse_input_output_alias(header) == (((0,), 1, "may-alias"), ((1,), 0, "may-alias"))
    assert parse_input_output_alias("HloModule m, entry_computation_layout={()->f32[]}") == ()


@pytest.fixture(scope="module")
def donated_report() -> Any:
    spec = parse_spec_text(LINREG_DONATE, source="s.yaml")
    loaded = load_target(sample("linreg.py") + ":update_params")
    return run_inspection(loaded, spec, InspectOptions(sections=("memory",), execute=False))


def test_memory_shows_the_aliasing_jax_reports(donated_report: Any) -> None:
    report, artifacts = donated_report
    memory = report.memory
    assert memory.donated == ("params",)
    assert memory.alias_bytes == 16 * 4 + 4  # w and b, both reused by the updated params
    assert {(a.argument, a.output) for a in memory.aliases} == {
        ("params['w']", "result['w']"),
        ("params['b']", "result['b']"),
    }
    donated = [info.donated for info in jax.tree_util.tree_leaves(artifacts.traced.args_info)]
    assert donated == [True, True, False, False]


def test_without_donation_nothing_aliases() -> None:
    spec = parse_spec_text(LINREG_DONATE.replace("donate: [params]", ""), source="s.yaml")
    loaded = load_target(sample("linreg.py") + ":update_params")
    report, artifacts = run_inspection(
        loaded, spec, InspectOptions(sections=("memory",), execute=False)
    )
    assert report.memory is not None
    assert report.memory.alias_bytes == 0
    assert report.memory.aliases == ()
    plan = bind_spec(loaded.function, spec, target="t")
    assert buffer_aliases(artifacts.traced, artifacts.lowered, artifacts.compiled, plan) == ()


def test_cli_json_and_table_show_aliases(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    path = tmp_path / "donate.yaml"
    path.write_text(LINREG_DONATE)
    target = sample("linreg.py") + ":update_params"
    result = run_cli("stages", target, "--shapes", path, "--stage", "memory", "-f", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    aliases = document["memory"]["input_output_aliases"]
    assert {a["argument"] for a in aliases} == {"params['w']", "params['b']"}
    table = run_cli("stages", target, "--shapes", path, "--stage", "memory", "--no-execute")
    assert table.exit_code == 0, table.stderr
    assert "donated (spec)" in table.stdout
    assert "params['w'] →" in table.stdout


def test_cli_donating_a_static_argument_exits_2(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("args: ['f32[2]']\nstatic: {lr: 0.1}\ndonate: [lr]\n")
    target = sample("linreg.py") + ":update_params"
    result = run_cli("stages", target, "--shapes", path)
    assert result.exit_code == 2
    assert f"{path}: donate: `lr` is under `static`" in result.stderr


def test_stages_executes_with_donation_and_reports_timings(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    # The docs/spec.md donation example, with execution on: each call gets fresh donated copies.
    path = tmp_path / "donate.yaml"
    path.write_text(LINREG_DONATE)
    target = sample("linreg.py") + ":update_params"
    result = run_cli("stages", target, "--shapes", path, "--runs", "4", "-f", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    timings = document["timings"]
    assert timings["first_call_s"] > 0
    assert timings["cached_call"]["runs"] == 4
    assert timings["cached_call"]["min_s"] > 0
    assert document["memory"]["donated"] == ["params"]
    table = run_cli("stages", target, "--shapes", path, "--stage", "timings")
    assert table.exit_code == 0, table.stderr
    assert "cached call" in table.stdout and "runs" in table.stdout
