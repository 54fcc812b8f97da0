"""IR previews on real compiler output: ENTRY first, metadata hidden, jaxpr equations first."""

from __future__ import annotations

import json
import re

import pytest
from narrow import assert_readable

from conftest import sample
from jaxinspect.renderers.irpreview import (
    CONTINUATION,
    fold_jaxpr_params,
    hlo_reading_order,
    strip_attributes,
    wrap_line,
)


def stage_texts(run_cli, target: str, spec: str) -> dict[str, str]:
    result = run_cli("stages", target, "--shapes", spec, "--format", "json", "--no-execute")
    assert result.exit_code == 0, result.stderr
    return {name: s["text"] for name, s in json.loads(result.stdout)["stages"].items()}


@pytest.fixture(scope="module")
def mlp_hlo() -> str:
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    args = ["hlo", sample("mlp.py") + ":predict", "--shapes", sample("mlp.yaml")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_hlo_preview_starts_at_entry_without_the_metadata_tables(mlp_hlo):
    assert "FileNames" in mlp_hlo and mlp_hlo.index("ENTRY") > 40 * 40  # the raw text
    view = hlo_reading_order(mlp_hlo)
    assert view.lines[0] == "HloModule jit_predict"
    assert view.lines[2].startswith("ENTRY %main")
    text = "\n".join(view.lines)
    assert not any(t in text for t in ("FileNames", "StackFrames", "metadata=", "stack_frame_id"))
    assert "frontend_attributes" not in text and view.hidden is not None
    # Every instruction is still there, in ENTRY then callee order.
    raw_instructions = [line for line in mlp_hlo.splitlines() if re.match(r"\s+(ROOT )?%", line)]
    kept = [line for line in view.lines if re.match(r"\s+(ROOT )?%", line)]
    assert len(kept) == len(raw_instructions)
    callees = re.findall(r"calls=(%[\w.]+)", "\n".join(view.lines))
    headers = [line.split()[0] for line in view.lines if line.startswith("%")]
    assert headers == callees  # each fusion body right after the computation that calls it


def test_metadata_flag_keeps_everything(mlp_hlo):
    view = hlo_reading_order(mlp_hlo, metadata=True)
    text = "\n".join(view.lines)
    assert "FileNames" in text and "stack_frame_id" in text and view.hidden is None
    assert sorted(line for line in text.splitlines() if line.strip()) == sorted(
        line for line in mlp_hlo.splitlines() if line.strip()
    )


def test_loop_bodies_follow_the_while_that_runs_them(run_cli):
    hlo = stage_texts(run_cli, sample("rnn.py") + ":run", sample("rnn.yaml"))["hlo"]
    lines = hlo_reading_order(hlo).lines
    names = [line.split()[0] for line in lines if line.startswith(("%", "ENTRY"))]
    assert names[0] == "ENTRY"
    while_line = next(line for line in hlo.splitlines() if " while(" in line)
    condition = re.search(r"condition=(%[\w.]+)", while_line).group(1)
    body = re.search(r"body=(%[\w.]+)", while_line).group(1)
    assert names.index(condition) < names.index(body)
    # The body's fusions come after the body, before anything it does not call.
    assert names.index(body) < names.index("%fused_computation.1")


def test_strip_attributes_keeps_quoted_braces():
    line = '  %a = f32[] add(%b, %c), metadata={op_name="jit(f)/{weird}" stack_frame_id=2}, x=1'
    assert strip_attributes(line) == "  %a = f32[] add(%b, %c), x=1"
    broken = '  %a = f32[] add(%b), metadata={op_name="never closed'
    assert strip_attributes(broken) == broken


def test_jaxpr_parameters_are_folded_so_equations_come_first(run_cli, tmp_path):
    program = tmp_path / "many.py"
    program.write_text("def f(xs):\n    return sum(xs.values())\n")
    spec = tmp_path / "many.yaml"
    spec.write_text("args:\n  xs:\n" + "".join(f"    x{i:02}: f32[4]\n" for i in range(20)))
    result = run_cli("jaxpr", f"{program}:f", "--shapes", spec)
    assert result.exit_code == 0, result.stderr
    jaxpr = result.stdout
    folded = fold_jaxpr_params(jaxpr)
    first = folded.splitlines()[0]
    assert "a:f32[4] b:f32[4] c:f32[4] … 14 more … " in first and "(20 parameters)" in first
    assert first.rstrip().endswith("let")
    assert folded.splitlines()[1].lstrip().startswith("u:f32[4] = add")
    assert fold_jaxpr_params("{ lambda ; a:f32[]. let  in (a,) }") == (
        "{ lambda ; a:f32[]. let  in (a,) }"
    )


def test_long_lines_wrap_with_a_marker_and_keep_shapes_whole():
    line = "  %ynn_fusion.1 = f32[128,256]{1,0} fusion(%x.1, %params__w1__.1), kind=kCustom"
    pieces = wrap_line(line, 40)
    assert all(len(p) <= 40 for p in pieces)
    assert all(p.lstrip().startswith(CONTINUATION) for p in pieces[1:])
    assert "f32[128,256]{1,0}" in pieces[0]
    rejoined = " ".join(p.strip().removeprefix(CONTINUATION) for p in pieces)
    assert rejoined.split() == line.split()


def test_stages_at_80_columns_shows_entry_and_names_the_users_spec(run_cli):
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    spec = sample("mlp.yaml")
    args = ["stages", sample("mlp.py") + ":predict", "--shapes", spec, "--no-execute"]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "80", "NO_COLOR": "1"}).stdout
    hlo_panel = out[out.index("optimized HLO") :]
    assert "ENTRY %main" in hlo_panel and "FileNames" not in out
    assert f"--shapes {spec}`" in out.replace("│\n│ ", "").replace(" │", "") or spec in out
    assert_readable(out, 80, ["ynn_fusion.1", "f32[784,256]", "params['w1']"])
    full = CliRunner().invoke(app, [*args, "--metadata"], env={"COLUMNS": "80"}).stdout
    assert "FileNames" in full and "--metadata shows them" not in full
