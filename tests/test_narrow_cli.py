"""Every table command at 80, 100 and 120 columns: nothing wider, no identifier split.

The goldens in ``tests/golden/`` pin the whole layout where the output is deterministic
(``cost``; ``stages`` and ``recompile`` with their timings set to fixed values). After an
intended change of layout, rewrite them with::

    JAXINSPECT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_narrow_cli.py

and review the diff of ``tests/golden/`` like any other change.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from pathlib import Path

import pytest
from narrow import assert_fits_json, assert_readable
from rich.console import Console
from typer.testing import CliRunner

from conftest import CHECK_MANIFEST, CHECK_PROGRAM, ROOT
from jaxinspect.cli.app import app

GOLDEN = Path(__file__).parent / "golden"
WIDTHS = (80, 100, 120)


def invoke(width: int, *args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("JAXINSPECT_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden {path}; run with JAXINSPECT_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden"


@pytest.fixture(autouse=True)
def _from_the_repository(monkeypatch):
    # Relative paths in the output (targets, "your code") are then the same on every machine.
    monkeypatch.chdir(ROOT)


COST_TARGETS = {
    "mlp": ("sample_programs/mlp.py:predict", "sample_programs/mlp.yaml"),
    "transformer": ("sample_programs/transformer.py:block", "sample_programs/transformer.yaml"),
    "rnn": ("sample_programs/rnn.py:run", "sample_programs/rnn.yaml"),
}


@pytest.mark.parametrize(
    ("program", "extra"),
    [*[(p, ()) for p in sorted(COST_TARGETS)], ("transformer", ("--device", "h100"))],
)
def test_cost_fits_every_width_and_matches_its_golden(program, extra):
    target, spec = COST_TARGETS[program]
    args = ("cost", target, "--shapes", spec, *extra)
    doc = json.loads(invoke(120, *args, "--format", "json"))
    name = "_".join([program, *[a for a in extra if not a.startswith("-")]])
    for width in WIDTHS:
        out = invoke(width, *args)
        assert_fits_json(out, width, doc)
        check_golden(f"cost_{name}_{width}.txt", out)


def test_cost_of_a_flax_language_model_sized_program_fits_80_columns():
    pytest.importorskip("flax")
    target, spec = "sample_programs/train_flax.py:train_step", "sample_programs/train_flax.yaml"
    doc = json.loads(invoke(120, "cost", target, "--shapes", spec, "--format", "json"))
    out = invoke(80, "cost", target, "--shapes", spec)
    assert_fits_json(out, 80, doc)
    top = doc["cost"]["ops"][0]["name"] if "cost" in doc else doc["ops"][0]["name"]
    assert top in out


def fixed_timings(report):
    from jaxinspect.base.inspection import CallTimings, Timings

    timings = Timings(0.00612, 0.0283, 0.0584, 0.00421, CallTimings(4.96e-4, 4.58e-4, 2.02e-3, 438))
    return dataclasses.replace(report, timings=timings)


def render(renderable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, soft_wrap=False)
    console.print(renderable)
    return console.file.getvalue()


@pytest.mark.parametrize("program", ["mlp", "transformer"])
def test_stages_fits_every_width_and_matches_its_golden(program):
    from jaxinspect.inputs.spec import load_spec
    from jaxinspect.stages.console import render_console
    from jaxinspect.stages.jsondoc import render_json
    from jaxinspect.stages.runner import InspectOptions, inspect_target

    target, spec = COST_TARGETS[program]
    options = InspectOptions(live_peak=True)  # as the stages command runs it
    report = fixed_timings(inspect_target(target, load_spec(Path(spec)), options))
    doc = json.loads(render_json(report))
    for width in WIDTHS:
        out = render(render_console(report, rerun=f"--shapes {spec}"), width)
        assert_fits_json(out, width, doc)
        assert "ENTRY %main" in out and "FileNames" not in out
        check_golden(f"stages_{program}_{width}.txt", _same_length_count(out))


def _same_length_count(text: str) -> str:
    """The HLO panel's title counts the raw text's lines, source-location tables included, and
    those tables hold the frames of whoever traced (pytest's differ by run): mask the count."""
    return re.sub(
        r"optimized HLO \((\d+) lines\) ─*",
        lambda m: ("optimized HLO (N lines) " + "─" * len(m.group(0)))[: len(m.group(0))],
        text,
    )


@pytest.mark.parametrize("program", ["mlp", "transformer"])
def test_stages_on_the_command_line_fits_80_columns(program):
    target, spec = COST_TARGETS[program]
    args = ("stages", target, "--shapes", spec, "--no-execute")
    doc = json.loads(invoke(120, *args, "--format", "json"))
    out = invoke(80, *args)
    assert_fits_json(out, 80, doc)
    assert "ENTRY %main" in out and "peak_memory_in_bytes (XLA)" in out


def test_stages_of_flax_parameters_cuts_paths_in_the_middle():
    pytest.importorskip("flax")
    args = (
        "stages",
        "sample_programs/train_flax.py:train_step",
        "--shapes",
        "sample_programs/train_flax.yaml",
        "--no-execute",
    )
    out = invoke(80, *args)
    assert_fits_json(out, 80, json.loads(invoke(120, *args, "--format", "json")))
    header = out[: out.index("jaxpr (")]
    # Every leaf is an array since TrainState.step is traced (#26): no kind column, dtypes.
    rows = [line for line in header.splitlines()[8:] if re.search(r"(float|int)32", line)]
    paths = [line.split("│")[1].split()[0] for line in rows]
    assert len(paths) == len(set(paths)) > 4  # every leaf tells itself apart
    assert all(not p.endswith("…") for p in paths)


def test_recompile_fits_every_width_and_matches_its_golden():
    from jaxinspect.inputs.cases import load_spec_cases
    from jaxinspect.inputs.target import load_target
    from jaxinspect.recompile.console import render_sweep_console
    from jaxinspect.recompile.report import CaseOutcome
    from jaxinspect.recompile.runner import run_sweep

    spec_file = load_spec_cases("sample_programs/transformer_cases.yaml")
    report = run_sweep(load_target("sample_programs/transformer.py:block"), spec_file.cases)
    cases = tuple(
        dataclasses.replace(c, compile_s=0.27, wall_s=0.3) if isinstance(c, CaseOutcome) else c
        for c in report.cases
    )
    report = dataclasses.replace(report, cases=cases)
    for width in WIDTHS:
        out = render(render_sweep_console(report), width)
        assert_readable(out, width, ["2×128×128", "float32[2,128,128]", "seq64_again"])
        assert "float32[2,128,128] cpu:0" in out and "params['wq']" not in out  # only what differs
        assert "1/1/1" in out and "hit: seq64" in out
        check_golden(f"recompile_transformer_{width}.txt", out)
    every = render(render_sweep_console(report, all_keys=True), 80)
    assert "params['wq']" in every and "hidden" not in every


def test_recompile_keys_flag_on_the_command_line():
    args = ["recompile", "sample_programs/mlp.py:predict", "-s", "sample_programs/mlp_batches.yaml"]
    out = invoke(80, *args)
    assert "9 components" not in out and "params['w1']" not in out
    assert "components the same in every case are hidden; --keys shows them." in out
    assert "params['w1']" in invoke(80, *args, "--keys")


def test_bench_fits_80_columns():
    target, spec = COST_TARGETS["mlp"]
    out = invoke(80, "bench", target, "--shapes", spec, "--cold-runs", "1", "--runs", "20")
    assert_readable(out, 80, ["first_call", "second_call", "import_jax"])
    assert "median" in out and "p99" in out


def test_check_fits_80_columns_and_its_title_wraps_at_spaces(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text(CHECK_PROGRAM)
    (tmp_path / "jaxinspect.yaml").write_text(CHECK_MANIFEST)
    assert "written" in invoke(80, "check", "--update")
    # 40 columns, or as many as the manifest's path needs: the path is one word, folded where
    # it is longer than the line, and how long depends on where pytest keeps tmp_path.
    width = max(40, len(f"({tmp_path / 'jaxinspect.yaml'})"))
    out = invoke(width, "check")
    assert_readable(out, width, ["jaxinspect.yaml", "prog.py:double", "unchanged"])
    assert "jaxinspect.yaml" in out
