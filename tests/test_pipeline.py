"""The pipeline on real JAX: one compile per run, x64 only on demand, keys, statics, limits."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import pytest
from jax import monitoring

from conftest import sample
from jaxinspect.errors import ExitCode, StageError, UsageError
from jaxinspect.inputs.spec import load_spec, parse_arg_options, parse_spec_text
from jaxinspect.inputs.target import load_target
from jaxinspect.stages.runner import InspectOptions, inspect_target, run_inspection

_compiles: list[str] = []


def _on_duration(name: str, _secs: float, **kwargs: object) -> None:
    if name == "/jax/core/compile/backend_compile_duration":
        _compiles.append(str(kwargs.get("fun_name")))


monitoring.register_event_duration_secs_listener(_on_duration)


@pytest.fixture
def compiles() -> list[str]:
    # Earlier tests in this process may have compiled the same sample; JAX's in-process
    # caches would then answer without a backend compile.
    jax.clear_caches()
    _compiles.clear()
    return _compiles


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(
        textwrap.dedent(
            """
            import jax
            import jax.numpy as jnp

            def double(x):
                return x * 2.0

            def noisy(key, x):
                return x + jax.random.normal(key, x.shape)

            def scaled(x, lr, mode="mul"):
                return x * lr if mode == "mul" else x + lr

            def precise(x):
                return x.sum()
            """
        )
    )
    return path


def test_stages_compile_exactly_once_with_execution(compiles):
    report = inspect_target(
        sample("mlp.py:predict"), load_spec(sample("mlp.yaml")), InspectOptions(runs=3)
    )
    assert compiles == ["jit(predict)"]
    t = report.timings
    assert all(v is not None and v > 0 for v in (t.trace_s, t.lower_s, t.compile_s, t.first_call_s))
    assert t.cached_call is not None
    assert 0 < t.cached_call.min_s <= t.cached_call.median_s <= t.cached_call.max_s
    assert t.cached_call.runs == 3


def test_reported_numbers_are_jaxs_own():
    spec = load_spec(sample("mlp.yaml"))
    report, artifacts = run_inspection(
        load_target(sample("mlp.py:predict")), spec, InspectOptions(execute=False)
    )
    # The platform and devices are read back from the executable XLA built.
    executable_devices = artifacts.compiled.runtime_executable().local_devices()
    assert report.backend == executable_devices[0].platform == "cpu"
    assert report.devices == tuple(f"cpu:{d.id} ({d.device_kind})" for d in executable_devices)
    raw = artifacts.compiled.cost_analysis()
    assert report.cost.flops == raw["flops"]
    assert report.cost.bytes_accessed == raw["bytes accessed"]
    assert report.cost.transcendentals == raw.get("transcendentals", 0.0)
    assert report.cost.arithmetic_intensity == pytest.approx(raw["flops"] / raw["bytes accessed"])
    mem = artifacts.compiled.memory_analysis()
    assert (
        report.memory.argument_bytes
        == mem.argument_size_in_bytes
        == 4 * (784 * 256 + 256 + 256 * 10 + 10 + 128 * 784)
    )
    assert report.memory.output_bytes == 4 * 128 * 10
    assert report.stage("hlo").text == artifacts.compiled.as_text()
    assert report.stage("stablehlo").text == artifacts.lowered.as_text()
    assert report.stage("jaxpr").text == str(artifacts.traced.jaxpr)
    # Same jaxpr as writing the jit by hand.
    import importlib.util

    mod_spec = importlib.util.spec_from_file_location("mlp_ref", sample("mlp.py"))
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    shapes = {"w1": (784, 256), "b1": (256,), "w2": (256, 10), "b2": (10,)}
    params = {k: jax.ShapeDtypeStruct(v, jnp.float32) for k, v in shapes.items()}
    x = jax.ShapeDtypeStruct((128, 784), jnp.float32)
    assert str(jax.jit(mod.predict).trace(params, x).jaxpr) == report.stage("jaxpr").text


def test_no_execute_reports_null_timings_with_reason(compiles):
    report = inspect_target(
        sample("simple.py:sin_cos"), load_spec(sample("simple.yaml")), InspectOptions(execute=False)
    )
    assert report.timings.first_call_s is None and report.timings.cached_call is None
    assert report.reason("timings.first_call_s") == "--no-execute"
    assert report.timings.compile_s is not None
    assert compiles == ["jit(sin_cos)"]


def test_stage_selection_stops_the_pipeline_early(compiles):
    report = inspect_target(
        sample("simple.py:sin_cos"),
        load_spec(sample("simple.yaml")),
        InspectOptions(sections=("jaxpr",)),
    )
    assert compiles == []
    assert report.stage("jaxpr") is not None
    assert report.stage("stablehlo") is None and report.stage("hlo") is None
    assert report.cost is None and report.memory is None
    assert "not requested" in report.reason("stages.hlo")
    assert report.timings.lower_s is None and report.timings.compile_s is None


def test_x64_only_when_the_spec_has_a_64bit_leaf(program):
    target = f"{program}:precise"
    report = inspect_target(target, parse_arg_options(["x=f64[4]"]), InspectOptions(runs=1))
    assert report.x64
    assert "tensor<4xf64>" in report.stage("stablehlo").text
    assert "f64[4]" in report.stage("jaxpr").text  # printed while compiling, in x64 mode too
    assert not jax.config.jax_enable_x64  # restored after the run
    report = inspect_target(target, parse_arg_options(["x=f32[4]"]), InspectOptions(runs=1))
    assert not report.x64
    assert "f64" not in report.stage("stablehlo").text


def test_typed_keys_and_weak_scalars_and_statics(program):
    keyed = inspect_target(
        f"{program}:noisy", parse_arg_options(["key=key[]", "x=f32[8]"]), InspectOptions(runs=1)
    )
    assert [a.kind for a in keyed.args] == ["key", "array"]
    assert keyed.timings.cached_call is not None
    spec = parse_spec_text("args:\n  x: f32[4]\n  lr: 0.5\nstatic:\n  mode: add\n", source="s")
    report = inspect_target(f"{program}:scaled", spec, InspectOptions(runs=1))
    assert [(a.path, a.kind, a.weak_type) for a in report.args] == [
        ("x", "array", False),
        ("lr", "array", True),
        ("mode", "static", False),
    ]
    assert "add" in report.stage("jaxpr").text and "mul" not in report.stage("jaxpr").text


def test_input_size_limit_refuses_before_allocating(program):
    with pytest.raises(UsageError, match="need 4,000,000 bytes, over the limit of 1,000") as info:
        inspect_target(
            f"{program}:double",
            parse_arg_options(["x=f32[1000,1000]"]),
            InspectOptions(max_input_bytes=1000),
        )
    assert "--max-input-bytes" in (info.value.hint or "")


def test_unavailable_backend_lists_available_ones(program):
    with pytest.raises(UsageError, match="--backend tpu: not available .*available: cpu"):
        inspect_target(
            f"{program}:double", parse_arg_options(["x=f32[2]"]), InspectOptions(backend="tpu")
        )


def test_user_failure_shows_user_frames_and_jax_message(tmp_path):
    path = tmp_path / "branchy.py"
    path.write_text("def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n")
    with pytest.raises(StageError) as info:
        inspect_target(f"{path}:f", parse_arg_options(["x=f32[3]"]), InspectOptions())
    err = info.value
    assert err.stage == "trace" and err.exit_code is ExitCode.TARGET_FAILED
    assert "TracerBoolConversionError: Attempted boolean conversion" in err.message
    assert f"{path}:2 in f\n    if x.sum() > 0:" in err.message
    assert "jaxinspect/" not in err.message  # none of the tool's own frames


def test_hlo_source_tables_hold_only_user_frames():
    report = inspect_target(
        sample("mlp.py:predict"), load_spec(sample("mlp.yaml")), InspectOptions(execute=False)
    )
    tables = report.stage("hlo").text.split("FunctionNames")[0]
    assert "sample_programs/mlp.py" in tables
    assert "jaxinspect/" not in tables and "_pytest" not in tables


def test_op_histograms_count_nested_bodies():
    report = inspect_target(
        sample("rnn.py:run"), load_spec(sample("rnn.yaml")), InspectOptions(execute=False)
    )
    jaxpr_ops = dict(report.stage("jaxpr").op_counts)
    assert jaxpr_ops["scan"] == 1
    assert jaxpr_ops["dot_general"] == 2 and jaxpr_ops["tanh"] == 1  # inside the scan body
    stablehlo_ops = dict(report.stage("stablehlo").op_counts)
    assert stablehlo_ops["stablehlo.while"] == 1
    assert stablehlo_ops["stablehlo.dot_general"] == 2  # inside the while body region
    hlo_ops = dict(report.stage("hlo").op_counts)
    assert hlo_ops["while"] == 1
    # Opcode spellings are XLA's own, as printed in the HLO text.
    for opcode in hlo_ops:
        assert f" {opcode}(" in report.stage("hlo").text


def _prepared(program, until: str = "compile", work=None):
    from jaxinspect.pipeline.stages import run_pipeline
    from jaxinspect.stages.runner import prepare_call

    call = prepare_call(load_target(f"{program}:precise"), parse_arg_options(["x=f32[4]"]), None)
    return run_pipeline(
        call.function,
        call.plan,
        call.args,
        call.kwargs,
        target="t",
        until=until,
        while_compiling=work,
    )


def test_work_while_compiling_runs_in_its_own_thread_beside_the_compile(program):
    import threading

    from jaxinspect.pipeline.whilecompiling import spare_core

    artifacts = _prepared(program, work=lambda traced: (threading.current_thread().name, traced))
    name, traced = artifacts.beside.value()
    assert traced is artifacts.traced
    # On one core there is no thread: the work is done when its value is asked for.
    assert name == ("jaxinspect-while-compiling" if spare_core() else "MainThread")
    assert artifacts.compiled is not None


def test_work_that_fails_beside_the_compile_raises_where_its_value_is_asked_for(program):
    calls = []

    def fails(traced):
        calls.append(traced)
        raise ValueError("printing failed")

    artifacts = _prepared(program, work=fails)
    assert artifacts.compiled is not None  # the compile is not disturbed
    with pytest.raises(ValueError, match="printing failed"):
        artifacts.beside.value()


def test_no_thread_where_the_run_stops_before_compile(program):
    import threading

    artifacts = _prepared(program, until="lower", work=lambda _: threading.current_thread().name)
    assert artifacts.compiled is None
    assert artifacts.beside.value() == threading.current_thread().name


def test_memory_analysis_is_asked_for_beside_the_printings(monkeypatch):
    """XLA serializes the buffer assignment in ``memory_analysis()`` while the stage texts
    and the module are printed: all release the GIL. The summary is the same either way."""
    import threading

    import jax.stages

    from jaxinspect.pipeline.whilecompiling import spare_core

    real = jax.stages.Compiled.memory_analysis
    threads = []

    def recording(self):
        threads.append(threading.current_thread().name)
        return real(self)

    monkeypatch.setattr(jax.stages.Compiled, "memory_analysis", recording)
    loaded = load_target(f"{sample('mlp.py')}:predict")
    spec = load_spec(sample("mlp.yaml"))
    printed, _ = run_inspection(loaded, spec, InspectOptions(backend="cpu", execute=False))
    alone, _ = run_inspection(
        loaded, spec, InspectOptions(backend="cpu", execute=False, stage_texts=False)
    )
    beside = "jaxinspect-memory-analysis" if spare_core() else "MainThread"
    assert threads == [beside, beside]  # beside the printings (of the module, at least)
    assert printed.stages and not alone.stages
    assert printed.memory == alone.memory
    assert printed.memory.temp_bytes is not None


def test_nothing_runs_beside_the_timed_calls(monkeypatch):
    """The memory analysis asked for in a thread after the compile has ended before the
    program's first timed call starts (a slow one is waited for)."""
    import time

    import jax.stages

    from jaxinspect.stages import runner

    real_stats, real_calls = jax.stages.Compiled.memory_analysis, runner.time_calls
    events = []

    def slow_stats(self):
        time.sleep(0.3)
        stats = real_stats(self)
        events.append("memory_analysis ended")
        return stats

    def calls(*args, **kwargs):
        events.append("timed calls start")
        return real_calls(*args, **kwargs)

    monkeypatch.setattr(jax.stages.Compiled, "memory_analysis", slow_stats)
    monkeypatch.setattr(runner, "time_calls", calls)
    loaded = load_target(f"{sample('mlp.py')}:predict")
    report, _ = run_inspection(
        loaded, load_spec(sample("mlp.yaml")), InspectOptions(backend="cpu", runs=2)
    )
    assert events == ["memory_analysis ended", "timed calls start"]
    assert report.timings.first_call_s is not None and report.memory is not None
