"""Every command on every sample target, at console widths 60, 80, 120 and 250.

Each command runs once per target, in-process (one compilation, as a user's call would make):
it must not fail with exit 4 (an internal error), and what it prints must fit each width. The
widths cost no further compilation: the console the command prints on is replaced by one that
renders the same report objects at every width (the tables lay themselves out at render time,
``renderers/fit.py``), so a layout bug at 60 columns shows even though the command ran once.
"""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from conftest import ROOT
from jaxinspect.cli.app import app

WIDTHS = (60, 80, 120, 250)
NO_TPU = importlib.util.find_spec("libtpu") is None

#: (target, spec, extra options, module the sample needs): every sample function with a spec.
TARGETS = [
    ("simple.py:scale_shift", "simple.yaml", (), None),
    ("simple.py:axpy", "axpy.yaml", (), None),
    ("linreg.py:update_params", "linreg.yaml", (), None),
    ("linreg.py:predict_batch", "linreg_predict_batch.yaml", (), None),
    ("linreg.py:hessian", "linreg_hessian.yaml", (), None),
    ("mlp.py:predict", "mlp.yaml", (), None),
    ("cholesky.py:factor", "cholesky.yaml", (), None),
    ("rnn.py:run", "rnn.yaml", (), None),
    ("transformer.py:block", "transformer.yaml", (), None),
    ("transformer_stack.py:stack", "transformer_stack.yaml", (), None),
    ("sharded.py:train_step", "sharded_dp.yaml", (), None),
    ("sharded.py:matmul", "sharded_matmul.yaml", (), None),
    ("sharded.py:column_sums", "sharded_psum.yaml", (), None),
    ("sharded.py:lm_step", "lm_v5e16.yaml", ("--topology", "v5e:4x4"), "libtpu"),
    ("train_equinox.py:train_step", "train_equinox.yaml", (), "equinox"),
    ("train_flax.py:train_step", "train_flax.yaml", (), "flax"),
    ("train_flax.py:train_step", "train_flax_args.yaml", (), "flax"),
    ("train_nnx.py:train_step", "train_nnx.yaml", (), "flax"),
    ("train_nnx.py:forward", "train_nnx_forward.yaml", (), "flax"),
]
#: Specs with several cases: ``recompile`` runs on these.
MULTI_CASE = [
    ("linreg.py:loss_fn", "linreg_sweep.yaml"),
    ("mlp.py:predict", "mlp_batches.yaml"),
    ("transformer.py:block", "transformer_cases.yaml"),
]
COMMANDS = {
    "stages": ("stages",),
    "cost": ("cost",),
    "cost --by line": ("cost", "--by", "line"),
    "memory": ("memory",),
    "passes": ("passes",),
    "report": ("report",),
}


class EveryWidth:
    """Stands in for ``stdout_console()``: renders what is printed at every width."""

    def __init__(self) -> None:
        self.outputs: dict[int, list[str]] = {w: [] for w in WIDTHS}

    def print(self, *renderables: Any, **kwargs: Any) -> None:
        for width in WIDTHS:
            console = Console(file=io.StringIO(), width=width, color_system=None, soft_wrap=False)
            console.print(*renderables, **kwargs)
            self.outputs[width].append(console.file.getvalue())  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:  # size, width...: as the widest console
        return getattr(Console(file=io.StringIO(), width=WIDTHS[-1]), name)


@pytest.fixture
def every_width(monkeypatch: pytest.MonkeyPatch) -> Iterator[EveryWidth]:
    from jaxinspect.renderers import stdout

    console = EveryWidth()
    monkeypatch.setattr(stdout, "stdout_console", lambda: console)
    monkeypatch.chdir(ROOT)  # relative paths, as a user in the repository would type them
    yield console


def _needs(module: str | None) -> list[Any]:
    if module is None:
        return []
    missing = importlib.util.find_spec(module) is None
    return [pytest.mark.skipif(missing, reason=f"{module} is not installed")]


def _run(console: EveryWidth, args: list[str], tmp: Any) -> None:
    if args[0] == "report":
        args = [*args, "-o", str(tmp / "report.html")]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250", "NO_COLOR": "1"})
    assert result.exit_code != 4, f"{' '.join(args)}: internal error\n{result.stderr}"
    assert result.exit_code == 0, f"{' '.join(args)}: exit {result.exit_code}\n{result.stderr}"
    for width, texts in console.outputs.items():
        for line in "".join(texts).splitlines():
            assert len(line) <= width, f"{' '.join(args)} at {width}: {line!r}"
    if args[0] != "report":
        assert any(console.outputs[WIDTHS[0]]), f"{' '.join(args)} printed nothing"


@pytest.mark.parametrize(
    ("target", "spec", "extra", "command"),
    [
        pytest.param(t, s, e, c, marks=_needs(m), id=f"{t}-{s}-{c}")
        for t, s, e, m in TARGETS
        for c in COMMANDS
    ],
)
def test_every_command_on_every_sample_fits_every_width(
    every_width: EveryWidth,
    tmp_path: Any,
    target: str,
    spec: str,
    extra: tuple[str, ...],
    command: str,
) -> None:
    args = [*COMMANDS[command], f"sample_programs/{target}", "-s", f"sample_programs/{spec}"]
    _run(every_width, [*args, *extra], tmp_path)


@pytest.mark.parametrize(("target", "spec"), MULTI_CASE)
def test_recompile_on_every_multi_case_sample_fits_every_width(
    every_width: EveryWidth, tmp_path: Any, target: str, spec: str
) -> None:
    args = ["recompile", f"sample_programs/{target}", "-s", f"sample_programs/{spec}"]
    _run(every_width, args, tmp_path)
