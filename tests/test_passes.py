"""``jaxinspect passes`` on real compilations: op counts, diffs, one compile, no files left."""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import replace

import jax
import pytest
from jax import monitoring
from narrow import assert_readable
from rich.console import Console

from conftest import sample, validate_document
from jaxinspect.errors import UsageError
from jaxinspect.inputs.spec import load_spec
from jaxinspect.inputs.target import load_target
from jaxinspect.passes.console import render_passes
from jaxinspect.passes.jsondoc import SCHEMA, SCHEMA_VERSION
from jaxinspect.passes.runner import build_passes_report, find_step, step_diff
from jaxinspect.pipeline.dumps import compilation_dump
from jaxinspect.renderers.jsondoc import SCHEMAS_DIR
from jaxinspect.stages.runner import InspectOptions, run_inspection
from jaxinspect.xla.hlotext import count_instructions, parse_module

MLP = (sample("mlp.py") + ":predict", "--shapes", sample("mlp.yaml"))

_compiles: list[str] = []


def _on_duration(name: str, _secs: float, **kwargs: object) -> None:
    if name == "/jax/core/compile/backend_compile_duration":
        _compiles.append(str(kwargs.get("fun_name")))


monitoring.register_event_duration_secs_listener(_on_duration)


def _instructions(hlo_module) -> int:
    return sum(len(c.instructions()) for c in hlo_module.computations())


@pytest.fixture(scope="module")
def mlp_run():
    """The MLP's passes report, with JAX's own objects of the same compilation."""
    options = InspectOptions(sections=("hlo",), execute=False)
    with compilation_dump(passes=True) as dump:
        options = replace(options, compiler_options=dump.compiler_options)
        source, artifacts = run_inspection(
            load_target(MLP[0]), load_spec(sample("mlp.yaml")), options
        )
        dumped = dump.read(artifacts.compiled)
    return build_passes_report(source, dumped), artifacts


def test_first_and_last_counts_are_jax_own_modules_instruction_counts(mlp_run):
    report, artifacts = mlp_run
    steps = report.steps
    assert steps is not None
    # Read through JAX's HloModule objects, not jaxinspect's text parser.
    entering = _instructions(artifacts.lowered.compiler_ir("hlo").as_hlo_module())
    scheduled = _instructions(artifacts.compiled.runtime_executable().hlo_modules()[0])
    assert (steps[0].ops_after, steps[-1].ops_after) == (entering, scheduled)
    assert (report.totals.ops_entering, report.totals.ops_scheduled) == (entering, scheduled)
    stablehlo = report.source.stage("stablehlo")
    assert stablehlo is not None
    assert steps[0].ops_before == sum(n for _, n in stablehlo.op_counts)
    # Each step starts from the one before it.
    assert all(b.ops_before == a.ops_after for a, b in zip(steps, steps[1:], strict=False))


def test_the_passes_that_changed_the_mlp(mlp_run):
    report, _ = mlp_run
    steps = report.steps
    assert steps is not None
    changed = [(s.pipeline, s.name) for s in steps if s.changed]
    assert changed[0] == ("input", "stablehlo-to-hlo")
    assert ("simplification", "algsimp") in changed
    assert ("HLO_passes_after_layout_assignment", "fusion") in changed
    fusion = find_step(report, "fusion")
    assert fusion.ops_after is not None and fusion.ops_before is not None
    assert fusion.ops_after > fusion.ops_before  # fused computations are new instructions
    # An unchanged snapshot has an empty diff; a changed one has lines either way.
    assert all(s.changed == bool(s.lines_added or s.lines_removed) for s in steps)
    assert (steps[-1].pipeline, steps[-1].name) == ("output", "after-optimizations")
    assert report.totals.changed == len(changed)


def test_diff_of_fusion_adds_the_fused_computations(mlp_run):
    report, _ = mlp_run
    step = find_step(report, "HLO_passes_after_layout_assignment/fusion")
    text = step_diff(report, step)
    assert text.startswith(f"--- {step.label} (before)\n+++ {step.label} (after)\n@@ ")
    added = [line for line in text.splitlines() if line.startswith("+%fused_computation")]
    assert added
    assert sum(line.startswith("+") for line in text.splitlines()) - 1 == step.lines_added


def test_find_step_by_index_and_its_errors(mlp_run):
    report, _ = mlp_run
    assert find_step(report, "0").name == "stablehlo-to-hlo"
    with pytest.raises(UsageError, match=r"no pass of that name \(did you mean algsimp"):
        find_step(report, "algsim")
    with pytest.raises(UsageError, match="no step #999"):
        find_step(report, "999")
    steps = report.steps or ()
    twice = replace(
        report, steps=(*steps, replace(steps[-1], name="fusion", index=len(steps), changed=True))
    )
    with pytest.raises(UsageError, match="2 steps changed the module under that name"):
        find_step(twice, "fusion")


def test_console_fits_80_columns_with_every_pass_name_whole(mlp_run):
    report, _ = mlp_run
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(render_passes(report))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    names = {s.name for s in report.steps or () if s.changed}
    assert_readable(text, 80, names)
    assert "fusion" in text and "20 → 26" in text
    assert "snapshots without a change not shown" in " ".join(text.split())


def test_json_is_valid_and_lists_passes_with_op_counts(run_cli, monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the dump folder goes here
    jax.clear_caches()  # an earlier test's in-process cache would answer without compiling
    _compiles.clear()
    result = run_cli("passes", *MLP, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert _compiles == ["jit(predict)"]  # one compilation, the one that dumped
    assert list(tmp_path.iterdir()) == []  # the dump folder is gone
    doc = json.loads(result.stdout)
    schema = json.loads((SCHEMAS_DIR / SCHEMA).read_text())
    validate_document(doc, SCHEMA)
    assert (
        doc["schema_version"] == SCHEMA_VERSION == schema["properties"]["schema_version"]["const"]
    )
    changed = [p for p in doc["passes"] if p["changed"]]
    assert any(p["name"] == "fusion" and p["ops_after"] > p["ops_before"] for p in changed)
    assert all(isinstance(p["ops_before"], int) for p in doc["passes"])
    assert doc["totals"]["ops_scheduled"] == doc["passes"][-1]["ops_after"]
    assert doc["module"] == "jit_predict"


def test_diff_option_prints_a_unified_diff(run_cli):
    result = run_cli("passes", *MLP, "--diff", "algsimp")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("--- #")
    assert "/algsimp (after)\n@@ " in result.stdout


def test_unknown_pass_is_a_usage_error_with_a_suggestion(run_cli):
    result = run_cli("passes", *MLP, "--diff", "fusoin")
    assert result.exit_code == 2
    assert "no pass of that name (did you mean fusion" in result.stderr
    assert result.stdout == ""


def test_diff_with_json_is_refused_before_compiling(run_cli):
    _compiles.clear()
    result = run_cli("passes", *MLP, "--diff", "fusion", "--format", "json")
    assert result.exit_code == 2
    assert "--diff prints a unified diff" in result.stderr
    assert _compiles == []


def test_count_instructions_agrees_with_the_full_parser_on_every_snapshot(mlp_run):
    report, _ = mlp_run
    texts = {step.text for step in report.steps or ()}
    assert len(texts) > 3
    for text in texts:
        parsed = parse_module(text)
        assert count_instructions(text) == sum(len(c.instructions) for c in parsed.computations)


def test_count_instructions_refuses_what_is_not_a_module():
    with pytest.raises(ValueError, match="no ENTRY computation"):
        count_instructions(
            "HloModule m\n\n%f (p: f32[]) -> f32[] {\n  ROOT %p = f32[] parameter(0)\n}\n"
        )
    with pytest.raises(ValueError, match="not an HLO instruction"):
        count_instructions("ENTRY %main () -> f32[] {\n  garbage\n}\n")
