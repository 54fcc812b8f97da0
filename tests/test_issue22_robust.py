"""Regression tests of issue #22's robustness defects, one test per defect number (test_dNN_...).

Timeouts, uncaught prints and tracebacks that only the console script shows run jaxinspect in
a fresh process (``python -m jaxinspect``, which owns its process as the console script
does); the rest run in this process through the CLI runner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, sample
from jaxinspect.bench.baseline import MAX_BASELINE_BYTES, check_identity, read_baseline
from jaxinspect.bench.report import MAX_SAMPLES
from jaxinspect.cost.optimes import DEFAULT_RUNS, FEW_RUNS, adapted_runs
from jaxinspect.errors import UsageError
from jaxinspect.pipeline.timing.deadline import MAX_TIMEOUT_S
from jaxinspect.process.errtrace import user_frames_only
from jaxinspect.usertext import escape_controls, safe_repr

RunCli = Callable[..., Any]

PROGRAM = textwrap.dedent(
    """
    import os, threading, time
    import jax
    import jax.numpy as jnp
    import numpy as np


    def double(x):
        return x * 2


    def swallow(x):
        # Catches every Exception for 3.7 s: a --timeout 2 must still stop the run.
        start = time.monotonic()
        while time.monotonic() - start < 3.7:
            try:
                time.sleep(0.02)
            except Exception:
                pass
        return x * 2


    def _sleepy(v):
        time.sleep(3)
        return np.asarray(v)


    def in_callback(x):
        return jax.pure_callback(_sleepy, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


    def _a_second(v):
        time.sleep(1)
        return np.asarray(v)


    def second_a_call(x):
        return jax.pure_callback(_a_second, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


    def _fails(v):
        raise ValueError("user callback failed")


    def failing_callback(x):
        return jax.pure_callback(_fails, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


    def nothing(x):
        return None


    def pair(x, y):
        return x + y


    class BadRepr:
        def __repr__(self):
            raise RuntimeError("no repr")

        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, BadRepr)


    class Escapes:
        def __repr__(self):
            return "\\x1b[31mRED\\x1b]0;title\\x07"

        def __hash__(self):
            return 2

        def __eq__(self, other):
            return isinstance(other, Escapes)


    def static_n(x, n):
        return x * 2


    def bad_repr_args():
        return {"x": jnp.ones(3), "n": BadRepr()}


    def huge_int_args():
        return {"x": jnp.ones(3), "n": 10**5000}


    def escape_args():
        return {"x": jnp.ones(3), "n": Escapes()}


    def one_tuple():
        return (jnp.ones(3),)
    """
)

CHATTY = textwrap.dedent(
    """
    import os, sys, threading, time


    def _noise():
        while True:
            print("THREAD-NOISE", flush=True)
            os.write(1, b"FD-NOISE\\n")
            time.sleep(0.001)


    threading.Thread(target=_noise, daemon=True).start()


    def f(x):
        return x * 2
    """
)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return path


def _spawn(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m jaxinspect ARGS`` in a fresh process (it owns its process: --timeout ends it)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "jaxinspect", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


# --- 12, 24, 29, 30: baselines -------------------------------------------------------------


def _baseline(
    target: str, spec: str = "x=f32[3]", changes: dict[str, Any] | None = None, **more: Any
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": 1,
        "kind": "jaxinspect-bench-baseline",
        "target": target,
        "spec": spec,
        "environment": {
            "backend": "cpu",
            "device_kind": "cpu",
            "jax_version": "0",
            "jaxlib_version": "0",
            "python_version": "3",
            "platform": "linux",
            "cpu_count": 2,
            "x64": False,
        },
        "gate": {
            "calls_per_round": 10,
            "target_min_s": [0.001, 0.001, 0.001],
            "target_median_s": [0.001, 0.001, 0.001],
            "reference_min_s": [0.001, 0.001, 0.001],
        },
        "cold": {"compile": [0.1, 0.1, 0.1]},
    }
    document.update(changes or {}, **more)
    return document


def _bench_with(run_cli: RunCli, program: Path, baseline: Path, *extra: str) -> Any:
    return run_cli("bench", f"{program}:double", "--arg", "x=f32[3]", "--cold-runs", "1",
                   "--baseline", baseline, *extra)  # fmt: skip


def test_d12_a_baseline_of_another_target_spec_or_backend_is_exit_2(
    run_cli: RunCli, program: Path, tmp_path: Path
) -> None:
    path = tmp_path / "base.json"
    path.write_text(json.dumps(_baseline(f"{program}:nothing")))
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2, result.stderr
    assert f"measured for target '{program}:nothing'" in result.stderr
    assert f"this run measures '{program}:double'" in result.stderr
    assert "--allow-other-baseline" in result.stderr
    path.write_text(json.dumps(_baseline(f"{program}:double", spec="x=f32[4]")))
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2 and "for spec 'x=f32[4]'" in result.stderr
    path.write_text(json.dumps(_baseline(f"{program}:double")))
    result = _bench_with(run_cli, program, path, "--backend", "tpu")
    assert result.exit_code == 2 and "for backend 'cpu'" in result.stderr
    # The same target written another way is the same target.
    with pytest.raises(UsageError):
        check_identity(
            read_baseline(_baseline("a.py:f")), "b.json", target="a.py:g", spec="x=f32[3]"
        )
    check_identity(
        read_baseline(_baseline("./d/../a.py:f")), "b.json", target="a.py:f", spec="x=f32[3]"
    )


def test_d12_allow_other_baseline_needs_a_baseline(run_cli: RunCli, program: Path) -> None:
    result = run_cli("bench", f"{program}:double", "--arg", "x=f32[3]", "--allow-other-baseline")
    assert result.exit_code == 2
    assert "compare with a --baseline FILE" in result.stderr


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,  # nested past the parser's recursion
        '{"schema_version": 1, "kind": "jaxinspect-bench-baseline", "x": ' + "9" * 5000 + "}",
        "9" * 5000,
    ],
    ids=["deeply-nested", "huge-int-field", "huge-int"],
)
def test_d24_nested_or_huge_integer_baselines_are_exit_2(
    run_cli: RunCli, program: Path, tmp_path: Path, text: str
) -> None:
    path = tmp_path / "base.json"
    path.write_text(text)
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2, result.stderr
    assert f"baseline {path}" in result.stderr and "Traceback" not in result.stderr


def test_d29_large_baselines_are_refused_before_the_bootstrap(
    run_cli: RunCli, program: Path, tmp_path: Path
) -> None:
    path = tmp_path / "base.json"
    many = [0.001] * (MAX_SAMPLES + 1)
    gate = {"calls_per_round": 1, "target_min_s": many, "target_median_s": many,
            "reference_min_s": many}  # fmt: skip
    path.write_text(json.dumps(_baseline(f"{program}:double", gate=gate)))
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2, result.stderr
    assert f"a list of 1 to {MAX_SAMPLES} positive finite seconds" in result.stderr
    path.write_text(" " * (MAX_BASELINE_BYTES + 1))
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2 and "larger than 4 MiB" in result.stderr


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"extra": 1}, "`extra` must be absent"),
        ({"target": 3}, "`target` must be a string"),
        ({"environment": {"backend": "cpu"}}, "`environment.device_kind` must be a string"),
        ({"cold": {"nope": [1.0]}}, "`cold.nope` must be a cold phase"),
        ({"cold": {"compile": [-1.0]}}, "`cold.compile` must be a list"),
        ({"gate": {"calls_per_round": True}}, "`gate.calls_per_round` must be"),
    ],
)
def test_d30_baselines_are_validated_field_by_field(
    run_cli: RunCli, program: Path, tmp_path: Path, change: dict[str, Any], named: str
) -> None:
    path = tmp_path / "base.json"
    path.write_text(json.dumps(_baseline(f"{program}:double", changes=change)))
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2, result.stderr
    assert named in result.stderr


def test_d30_non_finite_and_ragged_samples_are_refused(
    run_cli: RunCli, program: Path, tmp_path: Path
) -> None:
    path = tmp_path / "base.json"
    path.write_text(json.dumps(_baseline(f"{program}:double")).replace("0.001]", "Infinity]", 1))
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2 and "Infinity is not a number of seconds" in result.stderr
    document = _baseline(f"{program}:double")
    document["gate"]["target_min_s"] = [0.001]
    path.write_text(json.dumps(document))
    result = _bench_with(run_cli, program, path)
    assert result.exit_code == 2 and "lists of the same length" in result.stderr


# --- 14, 15, 16, 23: timeouts ---------------------------------------------------------------


def test_the_timeout_s_message_reaches_stderr_while_native_output_is_caught() -> None:
    # Under load the deadline can pass while JAX's plugins start (libtpu takes seconds), with
    # fd 2 caught by quiet_native_stderr: the message went into the catch and the run ended
    # 124 in silence (seen once in CI, in the test below).
    code = (
        "import time\n"
        "from jaxinspect.pipeline.timing.deadline import own_process, run_deadline\n"
        "from jaxinspect.process.nativelog import quiet_native_stderr\n"
        "own_process()\n"
        "with run_deadline(0.5, hint='raise it'), quiet_native_stderr():\n"
        "    time.sleep(10)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 124
    assert proc.stderr == (
        "Error: the run took longer than --timeout 0.5 s and was stopped\nHint: raise it\n"
    )


def test_d14_user_code_catching_exception_cannot_swallow_the_timeout(program: Path) -> None:
    start = time.monotonic()
    proc = _spawn("stages", f"{program}:swallow", "--arg", "x=f32[3]", "--timeout", "2")
    assert proc.returncode == 124, proc.stderr
    assert time.monotonic() - start < 3.5 + 10  # the run alone would take 3.7 s a call
    assert "Error: the run took longer than --timeout 2 s and was stopped" in proc.stderr
    assert proc.stdout == ""


def test_d14_embedded_a_swallowed_deadline_still_ends_with_124(
    run_cli: RunCli, program: Path
) -> None:
    result = run_cli("stages", f"{program}:swallow", "--arg", "x=f32[3]", "--timeout", "1",
                     "--no-execute")  # fmt: skip
    assert result.exit_code == 124, result.stderr
    assert "Traceback" not in result.stderr


def test_d15_a_timeout_during_a_host_callback_is_124(program: Path, run_cli: RunCli) -> None:
    proc = _spawn("stages", f"{program}:in_callback", "--arg", "x=f32[3]", "--timeout", "2")
    assert proc.returncode == 124, proc.stderr
    result = run_cli("stages", f"{program}:in_callback", "--arg", "x=f32[3]", "--timeout", "1")
    assert result.exit_code == 124, result.stderr  # embedded: 124, not the callback's exit 3


def test_d16_short_timeouts_never_crash(program: Path) -> None:
    for seconds in ("0.001", "0.05", "0.3", "1"):
        proc = _spawn("stages", f"{program}:double", "--arg", "x=f32[3]", "--timeout", seconds)
        assert proc.returncode in (0, 124), (seconds, proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "Fatal Python error" not in proc.stderr


@pytest.mark.parametrize("value", ["1e308", "inf", "nan", "0", "-1", str(MAX_TIMEOUT_S * 2)])
def test_d23_out_of_range_timeouts_are_exit_2(run_cli: RunCli, value: str) -> None:
    result = run_cli("stages", sample("simple.py") + ":scale_shift", "--arg", "x=f32[3]",
                     "--timeout", value)  # fmt: skip
    assert result.exit_code == 2, result.stderr
    assert "give a number of seconds above 0 and at most 1,000,000" in result.stderr


# --- 17: prints from the user's threads ----------------------------------------------------


def test_d17_a_printing_daemon_thread_cannot_break_json(tmp_path: Path) -> None:
    path = tmp_path / "chatty.py"
    path.write_text(CHATTY)
    for command in ("stages", "cost", "memory"):
        proc = _spawn(command, f"{path}:f", "--arg", "x=f32[3]", "-f", "json")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "NOISE" not in proc.stdout
        json.loads(proc.stdout)
        assert "THREAD-NOISE" in proc.stderr and "FD-NOISE" in proc.stderr


# --- 18, 19: memory of nothing, statics that cannot be shown -------------------------------


def test_d18_memory_of_a_zero_byte_peak(run_cli: RunCli, program: Path) -> None:
    for target, arg in (("nothing", "x=f32[3]"), ("double", "x=f32[0]")):
        for extra in ([], ["--device", "h100"], ["-f", "json"]):
            result = run_cli("memory", f"{program}:{target}", "--arg", arg, *extra)
            assert result.exit_code == 0, (target, extra, result.stderr)


@pytest.mark.parametrize(
    ("factory", "shown"),
    [
        ("bad_repr_args", "<BadRepr object; its repr raised RuntimeError>"),
        ("huge_int_args", "<int of about 5,001 digits>"),
    ],
)
def test_d19_statics_whose_repr_fails_are_described(
    run_cli: RunCli, program: Path, tmp_path: Path, factory: str, shown: str
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"args: {{from: prog.py:{factory}}}\n")
    for command in ("stages", "memory", "cost", "recompile", "passes"):
        result = run_cli(command, f"{program}:static_n", "--shapes", spec)
        assert result.exit_code == 0, (command, result.stderr)
    result = run_cli("stages", f"{program}:static_n", "--shapes", spec)
    assert shown in result.stdout
    assert safe_repr(10**5000) == "<int of about 5,001 digits>"


# --- 21, 22: bounded shards, meshes and device counts --------------------------------------


def test_d21_huge_shard_numbers_are_exit_2(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "jaxinspect.yaml").write_text("targets: []\n")
    for shard in ("1/" + "9" * 5000, "1/99999", "\u0661/\u0662"):
        result = run_cli("check", "--manifest", tmp_path / "jaxinspect.yaml", "--shard", shard)
        assert result.exit_code == 2, result.stderr
        assert "--shard" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--devices", "100000"], "is not in the range 1<=x<=65536"),
        (["--devices", "9" * 30], "is not in the range"),
        (["--mesh", "data=" + "9" * 30], "devices is more than 65,536"),
        (["--mesh", "a=300,b=300"], "the mesh spans 90,000 devices, more than 65,536"),
        (["--mesh", "data=5000"], "jaxinspect sets up at most 4,096 on CPU"),
        (["--devices", "5000"], "jaxinspect sets up at most 4,096 on CPU"),
    ],
)
def test_d22_huge_meshes_and_device_counts_are_exit_2(
    run_cli: RunCli, program: Path, option: list[str], message: str
) -> None:
    result = run_cli("stages", f"{program}:double", "--arg", "x=f32[4]", *option)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr


def test_d22_a_huge_mesh_in_a_spec_is_exit_2(
    run_cli: RunCli, program: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("args: {x: 'f32[4]'}\nmesh: {data: 100000}\n")
    result = run_cli("stages", f"{program}:double", "--shapes", spec)
    assert result.exit_code == 2 and "more than 65,536" in result.stderr


# --- 25: a failing host callback -----------------------------------------------------------


def test_d25_a_failing_callback_shows_only_the_users_frames(program: Path) -> None:
    proc = _spawn("stages", f"{program}:failing_callback", "--arg", "x=f32[3]")
    assert proc.returncode == 3, proc.stderr
    assert f'File "{program}"' in proc.stderr and "user callback failed" in proc.stderr
    for foreign in ("site-packages", "jaxinspect/", "typer", "Traceback"):
        assert foreign not in proc.stderr, proc.stderr
    text = 'x: Traceback (most recent call last):\n  File "/lib/site-packages/a.py", line 1, in f\n'
    assert "site-packages" not in user_frames_only(text + "ValueError: no")


# --- 28, 31: cost --measure ----------------------------------------------------------------


def test_d28_cost_measure_has_a_timeout_and_progress(program: Path) -> None:
    proc = _spawn("cost", f"{program}:second_a_call", "--arg", "x=f32[3]", "--measure",
                  "--timeout", "15")  # fmt: skip
    assert proc.returncode == 124, proc.stderr
    # ~1 s calls: 9 or 10 runs (not 20) of them, a long series that reports its progress.
    first = next(line for line in proc.stderr.splitlines() if "call(s) of about" in line)
    assert first.startswith(("measuring: cached calls: 9 ", "measuring: cached calls: 10 "))
    assert "Hint: Raise --timeout, or measure fewer runs with --measure-runs N." in proc.stderr


def test_d28_slow_programs_are_measured_fewer_times() -> None:
    assert adapted_runs(0.001) == DEFAULT_RUNS
    assert adapted_runs(1.0) == 10
    assert adapted_runs(60.0) == FEW_RUNS


def test_d31_cost_options_are_checked_before_anything_runs(run_cli: RunCli, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('imported')\n")  # never imported: the options fail
    for options in (["--measure-runs", "3"], ["--sort", "measured"], ["--sort", "time"]):
        result = run_cli("cost", f"{broken}:f", "--arg", "x=f32[3]", *options)
        assert result.exit_code == 2, (options, result.stderr)
        assert "imported" not in result.stderr


# --- 32: --debug only adds tracebacks ------------------------------------------------------


def test_d32_debug_keeps_the_exit_code(run_cli: RunCli, program: Path, tmp_path: Path) -> None:
    cases = [
        (["stages", f"{tmp_path}/missing.py:f", "--arg", "x=f32[3]"], 2),
        (["stages", f"{program}:double", "--arg", "x=f33[3]"], 2),
        (["stages", f"{program}:failing_callback", "--arg", "x=f32[3]"], 3),
        (["stages", f"{program}:double", "--arg", "x=f32[3]", "--timeout", "1e308"], 2),
    ]
    for argv, code in cases:
        plain = run_cli(*argv)
        debug = run_cli(*argv, "--debug")
        assert plain.exit_code == debug.exit_code == code, (argv, plain.stderr, debug.stderr)
        assert "Traceback" in debug.stderr and "Traceback" not in plain.stderr


# --- 34: messages --------------------------------------------------------------------------


def test_d34_short_positional_args_are_exit_2_like_the_mapping_form(
    run_cli: RunCli, program: Path, tmp_path: Path
) -> None:
    texts = {
        "list": "args: ['f32[3]']\n",
        "factory": "args: {from: prog.py:one_tuple}\n",
        "mapping": "args: {x: 'f32[3]'}\n",
    }
    for name, text in texts.items():
        spec = tmp_path / f"{name}.yaml"
        spec.write_text(text)
        result = run_cli("stages", f"{program}:pair", "--shapes", spec)
        assert result.exit_code == 2, (name, result.stderr)
        assert "`y`" in result.stderr


def test_d34_a_malformed_topology_is_named_without_libtpu(
    run_cli: RunCli, program: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jaxinspect.topologies import tpu as topology

    monkeypatch.setattr(topology, "libtpu_installed", lambda: False)
    result = run_cli("stages", f"{program}:double", "--arg", "x=f32[3]",
                     "--topology", "; rm -rf /")  # fmt: skip
    assert result.exit_code == 2
    assert "a slice name is GENERATION:SHAPE" in result.stderr
    assert "needs libtpu" not in result.stderr


def test_d34_an_empty_shard_says_so(run_cli: RunCli, program: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "jaxinspect.yaml"
    manifest.write_text("targets:\n  - target: prog.py:double\n    args: ['x=f32[3]']\n")
    result = run_cli("check", "--manifest", manifest, "--shard", "2/3", "--update")
    assert result.exit_code == 0, result.stderr
    assert "passed: no target to check" in result.stdout


def test_d34_all_cases_failing_do_not_claim_others_ran(
    run_cli: RunCli, program: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "cases.yaml"
    spec.write_text("cases:\n  a: {args: {x: 'f32[3]'}}\n  b: {args: {x: 'f32[4]'}}\n")
    result = run_cli("stages", f"{program}:failing_callback", "--shapes", spec)
    assert result.exit_code == 3, result.stderr
    assert "2 of 2 cases failed (a, b); none ran to the end" in result.stderr
    assert "the others ran" not in result.stderr


def test_d34_loose_file_diff_headers_name_the_files(run_cli: RunCli, tmp_path: Path) -> None:
    for side, op in (("old", "sin"), ("new", "cos")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "hlo.txt").write_text(
            f"HloModule m\n\nENTRY e {{\n  p = f32[] parameter(0)\n  ROOT r = f32[] {op}(p)\n}}\n"
        )
    result = run_cli("diff", tmp_path / "old" / "hlo.txt", tmp_path / "new" / "hlo.txt", "--text")
    assert f"--- {tmp_path}/old/hlo.txt\n" in result.stdout, result.stdout
    assert "hlo.txt/hlo.txt" not in result.stdout


def test_d34_terminal_escapes_from_user_values_are_escaped(
    run_cli: RunCli, program: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("args: {from: prog.py:escape_args}\n")
    result = run_cli("stages", f"{program}:static_n", "--shapes", spec)
    assert result.exit_code == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b[31mRED" in result.stdout
    result = run_cli("passes", f"{program}:double", "--arg", "x=f32[3]", "--diff", "\x1b[2J")
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr and "\\x1b[2J" in result.stderr
    assert escape_controls("a\nb\u202ec") == "a\nb\\u202ec"


def test_d34_mesh_axis_names_say_ascii(run_cli: RunCli, program: Path) -> None:
    result = run_cli("stages", f"{program}:double", "--arg", "x=f32[4]", "--mesh", "données=2")
    assert result.exit_code == 2
    assert "ASCII letters, digits and _" in result.stderr
