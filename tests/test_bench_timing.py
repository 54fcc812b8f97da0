"""The timing shared by ``stages`` and ``bench``: quiet GC, call counts, progress, --timeout."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import ROOT, sample
from jaxinspect.inputs.binding import bind_spec
from jaxinspect.inputs.spec import parse_arg_options
from jaxinspect.pipeline import execute
from jaxinspect.pipeline.stages import run_pipeline
from jaxinspect.pipeline.timing import calls
from jaxinspect.pipeline.timing.calls import CallCount, CallInputs, SeriesProgress, time_series
from jaxinspect.pipeline.timing.quiet import frozen_heap, paused_gc, quiet_gc

# A target whose every execution records whether the collector was on, and can be slowed.
RECORDING = """
import gc, os, time
import jax
import numpy as np

seen = []
DELAY = float(os.environ.get("SLOW_DELAY", "0"))


def _host(x):
    seen.append(gc.isenabled())
    time.sleep(DELAY)
    return np.asarray(x)


def f(x):
    seen.append(("trace", gc.isenabled()))
    return jax.pure_callback(_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2
"""


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_quiet_gc_collects_first_and_pauses_the_collector() -> None:
    garbage = _Cycle()
    alive = weakref.ref(garbage)
    del garbage
    assert gc.isenabled()
    with quiet_gc():
        assert alive() is None  # collected before the interval
        assert not gc.isenabled()
    assert gc.isenabled()


def test_paused_gc_collects_nothing_and_restores_the_collector() -> None:
    garbage = _Cycle()
    alive = weakref.ref(garbage)
    del garbage
    with paused_gc():
        assert not gc.isenabled()
        assert alive() is not None  # no collection on entering, unlike quiet_gc
    assert gc.isenabled()
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("block", [quiet_gc, paused_gc])
def test_a_collector_the_host_paused_stays_paused(
    block: Callable[[], AbstractContextManager[None]],
) -> None:
    gc.disable()
    try:
        with block():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_frozen_heap_freezes_once_and_releases() -> None:
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with frozen_heap():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0


def test_every_step_and_call_runs_with_the_collector_paused(tmp_path: Path) -> None:
    path = tmp_path / "recording.py"
    path.write_text(RECORDING)
    namespace: dict[str, object] = {}
    exec(compile(RECORDING, str(path), "exec"), namespace)
    f, seen = namespace["f"], namespace["seen"]
    assert callable(f) and isinstance(seen, list)
    spec = parse_arg_options(["x=f32[4]"])
    plan = bind_spec(f, spec, target="t")
    abstract = jax.ShapeDtypeStruct((4,), jnp.float32)
    art = run_pipeline(f, plan, [abstract], {}, target="t")
    assert seen == [("trace", False)]
    inputs = CallInputs((jnp.ones(4),), {}, frozenset(), frozenset())
    first, cached = execute.time_calls(art.compiled, inputs, runs=4, target="t")
    assert cached.runs == 4 and first > 0
    assert seen[1:] == [False] * 5  # the first call and four cached calls
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_call_count_times_a_slow_call_a_few_times() -> None:
    stages = CallCount(None, 0.25, 5, 1000, 3)
    assert stages.floor(0.001) == 5 and stages.expected(0.001) == 250
    assert stages.floor(40.0) == 3 and stages.expected(40.0) == 3
    assert stages.expected(1.0) == 5  # 5 s of calls is still within SLOW_FLOOR_S
    assert CallCount(None, 1.0, 5, 1000, 1).expected(40.0) == 1  # bench's warm-up
    assert CallCount(7, 0.25, 5, 1000, 3).expected(40.0) == 7  # --runs is exact
    assert not stages.wants_more(3, 120.0, 40.0)
    assert stages.wants_more(3, 0.003, 0.001)


def test_progress_lines_give_an_estimate() -> None:
    assert SeriesProgress("cached calls", 0, 3, 40.0).line() == (
        "cached calls: 3 call(s) of about 40 s each, about 120 s in all"
    )
    assert SeriesProgress("cached calls", 1, 3, 40.0).line() == (
        "cached calls: 1 of 3 done, about 80 s left"
    )
    assert SeriesProgress("cached calls", 3, 3, 40.0).line() == "cached calls: 3 of 3 done"


def test_donated_inputs_are_fresh_for_every_call_of_a_series() -> None:
    donating = jax.jit(lambda x: x * 2, donate_argnums=0)
    x = jax.device_put(np.arange(4, dtype=np.float32))
    compiled = donating.lower(x).compile()
    inputs = CallInputs((x,), {}, frozenset({0}), frozenset())
    series = time_series(compiled, inputs, CallCount(6, 0, 1, 10, 1), target="t", what="calls")
    assert len(series.totals) == 6 and not x.is_deleted()


def test_stages_times_a_slow_call_three_times_with_progress(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Thresholds scaled down so that a 50 ms call counts as slow.
    monkeypatch.setattr(calls, "SLOW_FLOOR_S", 0.05)
    monkeypatch.setattr(calls, "PROGRESS_AFTER_S", 0.01)
    monkeypatch.setattr(execute, "AUTO_BUDGET_S", 0.01)
    monkeypatch.setenv("SLOW_DELAY", "0.05")
    path = tmp_path / "slowish.py"
    path.write_text(RECORDING)
    result = run_cli("stages", f"{path}:f", "--arg", "x=f32[4]", "--stage", "timings", "-f", "json")
    assert result.exit_code == 0, result.stderr
    cached = json.loads(result.stdout)["timings"]["cached_call"]
    assert cached["runs"] == 3 and cached["min_s"] >= 0.05
    assert "cached calls: 3 call(s) of about" in result.stderr
    assert "cached calls: 3 of 3 done" in result.stderr


def _jaxinspect(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "jaxinspect", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})},
    )


def test_timeout_stops_a_slow_stages_run_with_exit_124(tmp_path: Path) -> None:
    path = tmp_path / "slow.py"
    path.write_text(RECORDING)
    # The call sleeps 60 s: a run not stopped would outlive communicate's bound below, so no
    # wall-clock assertion is needed (a loaded machine only makes the start slower).
    proc = _jaxinspect("stages", f"{path}:f", "--arg", "x=f32[4]", "--timeout", "3",
                       env={"SLOW_DELAY": "60"})  # fmt: skip
    stdout, stderr = proc.communicate(timeout=55)
    assert proc.returncode == 124, stderr
    assert "Error: the run took longer than --timeout 3 s and was stopped" in stderr
    assert stdout == "" and "Traceback" not in stderr


def test_timeout_in_process_raises_in_the_run_and_spares_the_host(run_cli, tmp_path: Path) -> None:
    # Embedded (tests, the CLI fuzz), --timeout never ends the process: the run ends with
    # RunTimedOut as soon as the main thread runs Python again (here: tracing in small sleeps).
    # Each step of the loop leaves a line in `steps`: the run stopped inside tracing, however
    # slowly a loaded machine ran it, when the loop never got to its end.
    path, steps = tmp_path / "slowtrace.py", tmp_path / "steps"
    path.write_text(
        f"import time\n\ndef f(x):\n    for _ in range(200):\n        time.sleep(0.05)\n"
        f"        with open({str(steps)!r}, 'a') as out:\n            out.write('.\\n')\n"
        "    return x + 1\n"
    )
    result = run_cli("stages", f"{path}:f", "--arg", "x=f32[3]", "--timeout", "0.5")
    assert result.exit_code == 124, result.stderr
    assert not steps.exists() or len(steps.read_text().splitlines()) < 200
    assert "Error: the run took longer than --timeout 0.5 s and was stopped" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # the host's handler is back


def test_a_deadline_that_falls_in_a_gc_callback_still_ends_the_run(capsys) -> None:
    # Python drops an exception raised in a gc callback ("Exception ignored", a traceback on
    # stderr): on a loaded machine the deadline once fell inside jax's, and the run went on.
    from jaxinspect.errors import RunTimedOut
    from jaxinspect.pipeline.timing.deadline import run_deadline

    def wait_in_callback(phase: str, info: object) -> None:
        if phase == "start":
            gc.callbacks.remove(wait_in_callback)
            for _ in range(500):  # until the deadline's signal interrupts the callback
                time.sleep(0.01)

    steps: list[int] = []
    with pytest.raises(RunTimedOut), run_deadline(0.2, hint="h"):
        gc.callbacks.append(wait_in_callback)
        gc.collect()
        for step in range(500):  # the run after the collection: stopped here, not done
            time.sleep(0.01)
            steps.append(step)
    assert wait_in_callback not in gc.callbacks
    assert len(steps) < 500
    assert "Exception ignored" not in capsys.readouterr().err


def test_timeout_must_be_positive(run_cli) -> None:
    result = run_cli("stages", sample("simple.py") + ":scale_shift", "--arg", "x=f32[3]",
                     "--timeout", "0")  # fmt: skip
    assert result.exit_code == 2
    assert "--timeout 0: give a number of seconds above 0" in result.stderr


# Writes its pid on import in a cold-run process, and sleeps there for a minute per call.
COLD_SLEEPER = textwrap.dedent(
    """
    import os, sys, time
    import jax
    import numpy as np

    _spec = getattr(sys.modules["__main__"], "__spec__", None)
    COLD = getattr(_spec, "name", "") == "jaxinspect.bench.coldchild"
    if COLD:
        with open(os.environ["PIDFILE"], "w") as out:
            out.write(str(os.getpid()))


    def _host(x):
        if COLD:
            with open(os.environ["PIDFILE"] + ".calling", "w") as out:
                out.write("in")
            time.sleep(60)
        return np.asarray(x)


    def f(x):
        return jax.pure_callback(_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2
    """
)


def _cold_child(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    """A bench run whose cold-run child is sleeping, and that child's pid."""
    target = tmp_path / "sleeper.py"
    target.write_text(COLD_SLEEPER)
    pidfile = tmp_path / "child.pid"
    proc = _jaxinspect("bench", f"{target}:f", "--arg", "x=f32[4]", "--cold-runs", "1", *extra,
                       env={"PIDFILE": str(pidfile)})  # fmt: skip
    _wait_for(pidfile, proc)
    return proc, int(pidfile.read_text())


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Wait until ``path`` has content, while ``proc`` still runs."""
    deadline = time.monotonic() + 120  # a bound for a hung run, generous for a loaded machine
    while not (path.exists() and path.read_text()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.1)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split(")")[-1].split()[0] == "Z"


def test_sigterm_stops_bench_and_its_cold_child_with_exit_143(tmp_path: Path) -> None:
    proc, child = _cold_child(tmp_path)
    _wait_for(tmp_path / "child.pid.calling", proc)  # the child is past its import, in a call
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    assert "terminated by SIGTERM; stopped 1 cold-run process(es)" in stderr
    assert _gone(child)


def test_timeout_stops_bench_and_its_cold_child(tmp_path: Path) -> None:
    # 30 s: time for a loaded machine to start the cold child (jax imported twice) before the
    # deadline; the child's call sleeps 60 s, so it is still the timeout that ends the run.
    proc, child = _cold_child(tmp_path, "--timeout", "30")
    _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 124, stderr
    assert "--timeout 30 s" in stderr
    assert _gone(child)
