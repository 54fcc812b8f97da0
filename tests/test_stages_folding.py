"""Issue #26 finding 13: ``stages`` stays readable for a 300-argument train step.

A Haiku train step printed about 1,900 terminal lines by default: a 310-row argument table and
a StableHLO signature of 311 arguments wrapping into 1,278 rows. Argument tables and function
signatures are folded with counts by default; ``--full`` shows them whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxinspect.renderers.irpreview import fold_signature, preview

#: A generated 300-leaf pytree argument, from a factory.
WIDE = """
import jax.numpy as jnp


def make_args():
    return {"params": {f"w{i:03d}": jnp.zeros((4,)) for i in range(300)}, "x": jnp.zeros((4,))}


def step(params, x):
    return sum(jnp.sum(w * x) for w in params.values())
"""


def _stages(run_cli: Any, tmp_path: Path, *extra: str) -> str:
    (tmp_path / "wide.py").write_text(WIDE)
    (tmp_path / "wide.yaml").write_text("args: {from: wide.py:make_args}\n")
    target, spec = f"{tmp_path}/wide.py:step", tmp_path / "wide.yaml"
    result = run_cli("stages", target, "--shapes", spec, "--no-execute", *extra)
    assert result.exit_code == 0, result.stderr
    return str(result.stdout)


def test_a_300_leaf_argument_is_folded_by_default(run_cli: Any, tmp_path: Path) -> None:
    out = _stages(run_cli, tmp_path, "--stage", "stablehlo")
    lines = out.splitlines()
    # Three leaves at each end of `params`, the fold row, and `x`: not 301 rows.
    assert sum("params['w" in line for line in lines) == 6
    assert "… 294 more of params (300 leaves)" in out
    assert "--full lists every leaf." in out
    assert " x " in next(line for line in lines if line.lstrip("│ ").startswith("x "))
    # The StableHLO signature of 301 arguments: 7 shown, the rest counted, in a few rows.
    assert "… 295 more …" in out and "(301 parameters)" in out
    assert len(lines) < 100, len(lines)


def test_full_shows_every_leaf_and_parameter(run_cli: Any, tmp_path: Path) -> None:
    out = _stages(run_cli, tmp_path, "--stage", "stablehlo", "--full")
    assert all(f"params['w{i:03d}']" in out for i in range(300))
    assert "more of params" not in out and "(301 parameters)" not in out


def test_fold_signature_on_both_lists_and_short_ones_untouched() -> None:
    params = ", ".join(f"%arg{i}: tensor<4xf32> {{a = [1, 2]}}" for i in range(20))
    results = ", ".join(f'tensor<f32> {{jax.result_info = "r[{i}], x"}}' for i in range(19))
    line = f"  func.func public @main({params}) -> ({results}) {{"
    folded = fold_signature(line)
    assert folded.startswith("  func.func public @main(%arg0: tensor<4xf32> {a = [1, 2]}, %arg1")
    assert "… 14 more …" in folded and "(20 parameters)" in folded
    assert "… 13 more …" in folded and "(19 results)" in folded and folded.endswith(") {")
    short = "  func.func private @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {"
    assert fold_signature(short) == short
    hlo = "ENTRY %main.9 (" + ", ".join(f"p{i}.1: f32[4]" for i in range(17)) + ") -> f32[] {"
    assert "(17 parameters)" in fold_signature(hlo)
    assert preview("stablehlo", line).lines == (folded,)
