"""``jaxinspect run`` and ``jaxinspect.compile_log()``: the compile log of a real program."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent
JAXINSPECT = str(Path(sys.executable).parent / "jaxinspect")
SCHEMA = json.loads((ROOT / "jaxinspect/schemas/runlog.schema.json").read_text())
#: See tests/test_robustness.py: SIGINT at its default disposition, then exec the command.
DEFAULT_SIGINT = (
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
)

# A training-like loop that recompiles twice: a static argument changes (line 12), then the
# batch shape (line 13). It reads argv, prints to stdout and ends as argv says.
PROGRAM = """\
import sys
from functools import partial
import jax, jax.numpy as jnp

@partial(jax.jit, static_argnames="training")
def step(x, training):
    return (x * 2).sum() if training else x.sum()

x = jnp.ones((4, 3))
for i in range(3):
    step(x, training=True)
step(x, training=False)
step(jnp.ones((8, 3)), training=False)
print("args:", sys.argv[1:])
if "--raise" in sys.argv:
    raise ValueError("boom")
sys.exit(int(sys.argv[1]))
"""


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [JAXINSPECT, "run", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},  # the log's table unfolded
    )


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("prog")
    (folder / "train.py").write_text(PROGRAM)
    return folder


def test_run_lists_exactly_the_two_recompilations_and_keeps_the_programs_output(
    program: Path,
) -> None:
    done = _run("-f", "json", "-o", "log.json", "train.py", "0", "--raise", cwd=program)
    # The program's own stdout, its traceback as Python prints it, and its exit code.
    assert done.stdout == "args: ['0', '--raise']\n"
    assert done.returncode == 1, done.stderr
    assert 'File "train.py", line 16, in <module>' in done.stderr
    assert done.stderr.rstrip().endswith("ValueError: boom")
    assert "runpy" not in done.stderr and "jaxinspect" not in done.stderr
    document = json.loads((program / "log.json").read_text())
    jsonschema.validate(document, SCHEMA)
    assert document["exit_code"] == 1 and document["program"] == "train.py"
    recompiles = [c for c in document["compilations"] if c["recompile"]]
    assert [(c["call_site"], [ch["text"] for ch in c["changes"]]) for c in recompiles] == [
        ("train.py:12 (<module>)", ["training: static True → False"]),
        ("train.py:13 (<module>)", ["x: shape 4×3 → 8×3"]),
    ]
    step = next(f for f in document["functions"] if f["function"] == "step")
    assert step == {**step, "compiles": 3, "defined_at": "train.py:5"}
    first = next(c for c in document["compilations"] if c["function"] == "step")
    assert first["call_site"] == "train.py:11 (<module>)" and not first["recompile"]
    assert first["trace_s"] > 0 and first["lower_s"] > 0 and first["compile_s"] > 0


def test_run_exits_with_the_programs_code_and_max_compiles_gates_it(program: Path) -> None:
    own = _run("train.py", "7", cwd=program)
    assert own.returncode == 7 and own.stdout == "args: ['7']\n"
    # The table goes to stderr: both recompilations, with their reasons.
    assert "training: static True → False" in own.stderr
    assert "x: shape 4×3 → 8×3" in own.stderr
    assert "2 recompilations" in own.stderr
    gated = _run("--max-compiles", "2", "train.py", "0", cwd=program)
    assert gated.returncode == 1
    assert "over --max-compiles 2: step (3)" in gated.stderr
    # To a file: on stderr the log would share the stream with what the program and its
    # libraries write there (libtpu's absl warnings where jaxinspect[tpu] is installed).
    within = _run(
        "--max-compiles", "3", "-f", "json", "-o", "log.json", "train.py", "0", cwd=program
    )
    assert within.returncode == 0
    document = json.loads((program / "log.json").read_text())
    jsonschema.validate(document, SCHEMA)
    assert document["max_compiles"] == 3 and document["exceeded"] is False


def test_run_fail_on_recompiles_is_the_max_compiles_gate(program: Path) -> None:
    # step compiles 3 times: 2 recompilations, over >1, within >2.
    gated = _run("--fail-on", "recompiles>1", "train.py", "0", cwd=program)
    assert gated.returncode == 1
    message = next(line for line in gated.stderr.splitlines() if "recompiled" in line)
    assert message.startswith("jaxinspect: --fail-on 'recompiles>1': step recompiled 2 times")
    assert "training: static True → False" in message and "x: shape 4×3 → 8×3" in message
    within = _run(
        "--fail-on", "recompiles>2", "-f", "json", "-o", "log.json", "train.py", "0", cwd=program
    )
    assert within.returncode == 0, within.stderr
    document = json.loads((program / "log.json").read_text())
    assert document["max_compiles"] == 3 and document["exceeded"] is False
    # >= counts the same way: 2 recompilations reach >=2.
    assert _run("--fail-on", "recompiles>=2", "train.py", "0", cwd=program).returncode == 1


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("recompile>1", "unknown metric 'recompile'"),
        ("recompiles>1.5", "whole number"),
        ("recompiles>+10%", "whole number"),
        ("recompiles<3", "expected recompiles>N"),
        ("any", "run gates on recompilations only"),
        ("", "names no rule"),
    ],
)
def test_run_fail_on_malformed_rule_is_a_usage_error(program: Path, rule: str, said: str) -> None:
    done = _run("--fail-on", rule, "train.py", "0", cwd=program)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert done.stdout == ""  # refused before the program ran


def test_run_m_runs_a_module_as_python_m_does(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(PROGRAM)
    done = _run("-f", "json", "-o", "log.json", "-m", "pkg.train", "5", cwd=tmp_path)
    assert done.returncode == 5 and done.stdout == "args: ['5']\n", done.stderr
    document = json.loads((tmp_path / "log.json").read_text())
    assert document["program"] == "-m pkg.train"
    assert document["total_recompiles"] == 2


def test_ctrl_c_mid_training_still_prints_the_log(tmp_path: Path) -> None:
    marker = tmp_path / "training"
    (tmp_path / "loop.py").write_text(
        "import pathlib, time\nimport jax, jax.numpy as jnp\n\n"
        "@jax.jit\ndef step(x):\n    return x + 1\n\n"
        "x = step(jnp.zeros(3))\n"
        f"pathlib.Path({str(marker)!r}).write_text('in')\n"
        "while True:\n    x = step(x)\n    time.sleep(0.01)\n"
    )
    proc = subprocess.Popen(
        [*DEFAULT_SIGINT, JAXINSPECT, "run", "loop.py"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
    )
    deadline = time.monotonic() + 120  # jax's import on a loaded machine
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if not marker.exists():
        proc.kill()
        pytest.fail(f"the program never started its loop: {proc.communicate()[1]}")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert out == ""
    assert "KeyboardInterrupt" in err and "interrupted (Ctrl-C)" in err
    assert "│ step " in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [((), "needs a SCRIPT.py"), (("missing.py",), "missing.py: no such file")],
)
def test_run_without_a_program_is_a_usage_error(
    tmp_path: Path, argv: tuple[str, ...], message: str
) -> None:
    done = _run(*argv, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr


def test_compile_log_records_a_python_block() -> None:
    from functools import partial

    import jax
    import jax.numpy as jnp

    import jaxinspect

    @partial(jax.jit, static_argnums=1)
    def scale(x: jax.Array, k: int) -> jax.Array:
        return x * k

    with jaxinspect.compile_log(max_compiles=1) as log:
        scale(jnp.ones(2), 2)
        scale(jnp.ones(2), 2)
        scale(jnp.ones(2), 3)
    assert [str(c) for r in log.recompilations for c in r.changes] == ["args[1]: static 2 → 3"]
    document = json.loads(log.to_json())
    jsonschema.validate(document, SCHEMA)
    assert document["program"] is None and document["exceeded"] is True
    console = Console(width=160, file=io.StringIO(), color_system=None)
    console.print(log)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "│ scale " in text and "args[1]: static 2 → 3" in text, text
    html = log._repr_html_()
    assert "<table>" in html and "args[1]: static 2 → 3" in html and "<script" not in html
    with jaxinspect.compile_log() as quiet:
        scale(jnp.ones(2), 2)  # cached: nothing compiles
    assert quiet.compilations == ()


def test_jax_config_is_restored_after_the_block() -> None:
    import jax

    import jaxinspect

    with jaxinspect.compile_log():
        assert jax.config.jax_explain_cache_misses
    assert not jax.config.jax_explain_cache_misses
    assert os.environ.get("JAX_EXPLAIN_CACHE_MISSES") is None


def test_a_jit_traced_inside_another_leaves_the_outer_ones_record() -> None:
    # Regression: an inner jit (optax's tree helpers inside a train step) is traced, and
    # explained, while its caller is; its explanation replaced the caller's, so the caller's
    # compiles were filed under the inner function's file and never counted as recompiling.
    import inspect

    import jax
    import jax.numpy as jnp

    import jaxinspect

    @jax.jit
    def inner(x: jax.Array) -> jax.Array:
        return x * 2

    def outer(x: jax.Array) -> jax.Array:
        return inner(x) + 1

    step = jax.jit(outer)
    with jaxinspect.compile_log() as log:
        step(jnp.ones(2))
        step(jnp.ones(3))
    line = inspect.getsourcelines(outer)[1]
    compiles = [c for c in log.compilations if c.function == "outer"]
    assert len(compiles) == 2
    assert all(c.defined_at is not None and c.defined_at.endswith(f":{line}") for c in compiles)
    (again,) = log.recompilations
    assert again.function == "outer"
    assert [str(c) for c in again.changes] == ["x: shape 2 → 3"]


def test_a_compilation_reads_back_what_the_child_writes_and_names_a_wrong_field() -> None:
    from jaxinspect.jsonfields import DecodeError
    from jaxinspect.recompile.cachekey import KeyChange
    from jaxinspect.runlog.model import Compilation

    change = KeyChange("x", "shape", "4", "8")
    comp = Compilation("step", "t.py:3", "t.py:9 (<module>)", 0.5, None, 1.25, "miss", True,
                       (change,), None)  # fmt: skip
    wire = json.loads(json.dumps(comp.to_dict()))
    assert wire["changes"] == [
        {"path": "x", "component": "shape", "before": "4", "after": "8", "text": "x: shape 4 → 8"}
    ]
    assert Compilation.from_dict(wire) == comp  # `text` is derived: read, not stored
    wire["compile_s"] = -1.0
    with pytest.raises(DecodeError, match="`compile_s` must be a number >= 0"):
        Compilation.from_dict(wire)
