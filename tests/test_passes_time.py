"""``jaxinspect passes --time``: one compilation under JAX's profiler, its time by pass."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
from typing import Any

import jax
import pytest
from narrow import assert_readable
from rich.console import Console

from conftest import sample, validate_document
from jaxinspect.base.inspection import Timings
from jaxinspect.inputs.spec import load_spec
from jaxinspect.inputs.target import load_target
from jaxinspect.passes.compileevents import StageEvents
from jaxinspect.passes.jsondoc import SCHEMA, passes_to_dict
from jaxinspect.passes.report import PassesReport
from jaxinspect.passes.timeconsole import render_pass_times
from jaxinspect.passes.timereport import PASS, PIPELINE, STAGE, TimedStep
from jaxinspect.passes.timing import build_pass_times, time_passes
from jaxinspect.stages.runner import InspectOptions
from jaxinspect.topologies import gpu as gputarget

MLP = ("mlp.py:predict", "mlp.yaml")
STACK = ("transformer_stack.py:stack", "transformer_stack.yaml")
BLOCK = ("transformer.py:block", "transformer.yaml")
NO_TPU = importlib.util.find_spec("libtpu") is None
GPU_MISSING = gputarget.missing_pieces()


def _timed(target: str, spec: str) -> PassesReport:
    # As in a fresh process: an earlier test's cached traces would leave the inner jits
    # (matmul, add...) out of the trace's split.
    jax.clear_caches()
    loaded = load_target(sample(target.split(":")[0]) + ":" + target.split(":")[1])
    return time_passes(loaded, load_spec(sample(spec)), InspectOptions())


def _covered(report: PassesReport) -> bool:
    coverage = report.time.coverage if report.time else None
    return coverage is not None and 0.9 <= coverage <= 1.1


@pytest.fixture(scope="module", params=[MLP, BLOCK, STACK], ids=["mlp", "block", "stack"])
def timed(request: pytest.FixtureRequest) -> PassesReport:
    # The MLP compiles in about 0.1 s, of which JAX's Python around XLA's events is a few ms:
    # on a machine the rest of the suite loads, one preempted slice of that Python moves the
    # share by 10%. Up to three compilations, the first within 10% kept: missing events would
    # miss the bound every time.
    report = _timed(*request.param)
    for _ in range(2):
        if _covered(report):
            break
        report = _timed(*request.param)
    return report


def _children(steps: tuple[TimedStep, ...], index: int) -> list[TimedStep]:
    """The rows one level below ``steps[index]``."""
    depth, out = steps[index].depth, []
    for step in steps[index + 1 :]:
        if step.depth <= depth:
            break
        if step.depth == depth + 1:
            out.append(step)
    return out


def test_events_account_for_the_compile_within_ten_percent(timed: PassesReport) -> None:
    times = timed.time
    assert times is not None and times.steps is not None and times.compile_s is not None
    assert times.coverage is not None and 0.9 <= times.coverage <= 1.1, times.coverage
    compile_row = next(s for s in times.steps if s.kind == STAGE and s.name == "compile")
    assert compile_row.seconds == times.compile_s
    assert [s.name for s in times.steps if s.depth == 0] == ["trace", "lower", "compile"]


def test_a_row_holds_its_children_and_none_is_counted_twice(timed: PassesReport) -> None:
    steps = timed.time.steps if timed.time else None
    assert steps
    for index, step in enumerate(steps):
        below = _children(steps, index)
        # Children of one row never overlap in time: their sum fits in the row (a stage
        # row is timed outside the profiler: its events may end a hair after it).
        assert sum(c.seconds for c in below) <= step.seconds * 1.01 + 1e-4, step
        assert step.self_s == pytest.approx(max(step.seconds - sum(c.seconds for c in below), 0))
        # Largest first among siblings.
        assert [c.seconds for c in below] == sorted((c.seconds for c in below), reverse=True)


def test_xla_pipelines_hold_their_passes_and_repeated_passes_are_grouped(
    timed: PassesReport,
) -> None:
    times = timed.time
    assert times is not None and times.steps is not None
    steps = times.steps
    pipelines = [i for i, s in enumerate(steps) if s.kind == PIPELINE]
    assert pipelines, "no XLA pipeline event"
    passes = [c for i in pipelines for c in _children(steps, i) if c.kind == PASS]
    assert any(p.name == "layout-assignment" for p in passes)
    # algsimp runs in every simplification round: one row with its count, not one per run.
    algsimp = [s for s in steps if s.name == "algsimp"]
    assert algsimp and all(s.runs >= 1 for s in algsimp)
    assert any(s.runs > 1 for s in steps if s.is_pass)
    # The pipeline's name comes without XLA's " (jit_...)" suffix.
    assert not any(s.name.endswith(f"({timed.module})") for s in steps)
    # Each pass counted once: the outermost pipeline rows, inside the compile's events.
    outer = sum(
        s.seconds
        for s in steps
        if s.kind == PIPELINE and s.depth == min(p.depth for p in steps if p.kind == PIPELINE)
    )
    assert times.passes_s is not None and 0 < times.passes_s <= (times.accounted_s or 0)
    assert times.passes_s >= outer
    top = times.top_pass
    assert top is not None and top in {s.name for s in steps if s.kind == PASS}
    assert max((s for s in steps if s.name == top), key=lambda s: s.seconds).seconds > 0


def test_tracing_is_split_by_the_jitted_functions_it_called(timed: PassesReport) -> None:
    steps = timed.time.steps if timed.time else ()
    assert steps
    trace_children = _children(steps, 0)
    assert {"matmul", "dot_general"} & {s.name for s in trace_children}, trace_children
    assert all(s.kind == "function" for s in trace_children)


def test_json_has_the_time_and_follows_the_schema(timed: PassesReport) -> None:
    doc = json.loads(json.dumps(passes_to_dict(timed)))
    validate_document(doc, SCHEMA)
    time = doc["time"]
    assert time["coverage"] == pytest.approx(time["accounted_s"] / time["compile_s"])
    assert doc["passes"] is None and "--time" in doc["unavailable"]["passes"]
    assert time["top_pass"] is not None


@pytest.mark.parametrize("width", [60, 80, 120])
def test_console_table_fits_the_width(timed: PassesReport, width: int) -> None:
    console = Console(file=io.StringIO(), width=width, color_system=None, soft_wrap=False)
    console.print(render_pass_times(timed))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    times = timed.time
    assert times is not None and times.top_pass is not None
    assert_readable(text, width, [times.top_pass])
    assert f"top pass: {times.top_pass}" in text
    assert "compile events account for" in text and "compile (" in text


def test_no_compile_events_is_null_with_a_reason_never_zero() -> None:
    # What a backend whose compiler emits no events (or a profiler that wrote nothing) gives.
    timings = Timings(trace_s=0.01, lower_s=0.02, compile_s=0.5)
    reasons: list[tuple[str, str]] = []
    times = build_pass_times(timings, StageEvents({}, None, frozenset({"compile"})), reasons)
    assert times.accounted_s is None and times.coverage is None and times.top_pass is None
    assert [s.name for s in times.steps or ()] == ["trace", "lower", "compile"]
    said = dict(reasons)
    assert "no event inside the compile step" in said["time.accounted_s"]
    assert "no per-pass events" in said["time.top_pass"]
    none: list[tuple[str, str]] = []
    assert build_pass_times(timings, None, none).steps is None
    assert dict(none)["time.steps"] == "the profiler wrote no profile"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jaxinspect", "passes", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_json_without_time_has_no_time_key_and_time_rejects_diff(run_cli: Any) -> None:
    target = sample(MLP[0].split(":")[0]) + ":predict"
    plain = run_cli("passes", target, "--shapes", sample(MLP[1]), "--format", "json")
    assert plain.exit_code == 0 and "time" not in json.loads(plain.stdout)
    refused = run_cli("passes", target, "--shapes", sample(MLP[1]), "--time", "--diff", "1")
    assert refused.exit_code == 2 and "--time" in refused.stderr


def test_report_passes_time_adds_the_section(run_cli: Any, tmp_path: Any) -> None:
    target = sample(MLP[0].split(":")[0]) + ":predict"
    page = tmp_path / "report.html"
    args = ("report", target, "--shapes", sample(MLP[1]), "--no-execute", "-o", str(page))
    done = run_cli(*args, "--passes-time")
    assert done.exit_code == 0, done.stderr
    html = page.read_text()
    assert '<section id="pass-times">' in html and "compile events account for" in html
    assert 'id="t-pass-times"' in html and "backend_compile_and_load" in html
    assert run_cli(*args).exit_code == 0
    assert '<section id="pass-times">' not in page.read_text()  # only when asked for


def _time_of_mlp_on(topology: str) -> dict[str, Any]:
    """``passes --time --format json`` of the MLP compiled for ``topology``: its ``time``,
    after the document is checked against the schema and the events cover the compile."""
    done = _cli(
        sample("mlp.py") + ":predict",
        "--shapes",
        sample("mlp.yaml"),
        "--topology",
        topology,
        "--time",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    validate_document(doc, SCHEMA)
    time: dict[str, Any] = doc["time"]
    assert 0.9 <= time["coverage"] <= 1.1
    return time


@pytest.mark.skipif(NO_TPU, reason="libtpu is not installed")
def test_tpu_slice_compile_has_libtpu_pipelines_and_passes() -> None:
    time = _time_of_mlp_on("v5e:2x2")
    names = {s["name"] for s in time["steps"]}
    assert "TpuCompiler::Compile" in names
    assert any(s["kind"] == "pipeline" for s in time["steps"]) and time["top_pass"]


@pytest.mark.skipif(GPU_MISSING is not None, reason=f"{GPU_MISSING} (CI installs the cuda extra)")
def test_gpu_target_compile_has_xla_gpu_pipelines_and_passes() -> None:
    time = _time_of_mlp_on("h100:1")
    names = {s["name"] for s in time["steps"]}
    assert "PjRtCApiCompiler::Compile(jit_predict)" in names  # the CUDA plugin's compiler
    passes = {s["name"] for s in time["steps"] if s["kind"] == "pass"}
    assert "priority-fusion" in passes  # XLA:GPU's fusion pass
    assert time["top_pass"] in passes
