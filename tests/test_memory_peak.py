"""Memory at the peak from XLA's buffer assignment: the parser, the timeline, the command."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from conftest import SAMPLES
from jaxinspect import jaxapi
from jaxinspect.cost.bufferassign import (
    parse_buffer_assignment,
    parse_live_ranges,
    parse_usage_totals,
)
from jaxinspect.cost.memorypeak import analyse_dump_texts
from jaxinspect.cost.ownership import default_user_code
from jaxinspect.pipeline.analyses import collect_memory

# Excerpts of XLA's dumps of sample_programs/rnn.py:run and linreg.py:update_params (params
# donated), jax 0.10.2 on CPU, as XLA wrote them.
RNN_ASSIGNMENT = """BufferAssignment:
allocation 0: size 102400, parameter 3, shape |f32[100,8,32]| at ShapeIndex {}:
 value: <37 xs.1 @0> (size=102400,offset=0): f32[100,8,32]{2,1,0}
allocation 3: size 2048, output shape is |f32[8,64]|, maybe-live-out:
 value: <20 copy.2 @0> (size=4,offset=0): s32[]
 value: <25 ynn_fusion @0> (size=2048,offset=0): f32[8,64]{1,0}
 value: <45 arg_tuple.3{1} (phi) @0> (size=2048,offset=0): f32[8,64]{1,0}
allocation 6: size 4, constant:
 value: <21 constant.4 @0> (size=4,offset=0): s32[]
allocation 9: size 3140, preallocated-temp:
 value: <22 wrapped_add @0> (size=4,offset=3136): s32[]
 value: <27 tuple.3{} @0> (size=48,offset=0): (s32[], f32[8,64]{1,0}, f32[100,8,32]{2,1,0}, f32[64,64]{1,0}, f32[32,64]{1,0}, /*index=5*/f32[64]{0})
"""  # noqa: E501 (one line of XLA's text)
LINREG_ASSIGNMENT = """BufferAssignment:
allocation 2: size 64, parameter 1, shape |f32[16]| at ShapeIndex {}, maybe-live-out:
 value: <44 params__w__.1 @0> (size=64,offset=0): f32[16]{0}
 value: <52 multiply_subtract_fusion @0> (size=64,offset=0): f32[16]{0}
allocation 6: size 4, thread-local:
 value: <5 reduce_sum.2 @0> (size=4,offset=0): f32[]
"""
MLP_LIVE_RANGE = """HloLiveRange (max 9):
  InstructionSequence:
    0:params__b1__.1
    1:x.1
    2:ynn_fusion.1
  BufferLiveRange:
    x.1{}:0-9
    ynn_fusion.1{}:5-6
    while.5{1}:28-30
  Live ranges at 7 (peak):
    params__w1__.1{}: 802816 bytes (cumulative: 802816 bytes)
    x.1{}: 401408 bytes (cumulative: 1204224 bytes)
  Stack trace breakdown for peak usage: 1 351 720 bytes
    main.1 (100.0%, total: 1 351 720 bytes, current: 0 bytes, remaining: 1 351 720 bytes)
"""


def test_parser_reads_allocations_kinds_and_values_of_real_text():
    allocations = parse_buffer_assignment(RNN_ASSIGNMENT)
    assert [(a.index, a.size, a.kind) for a in allocations] == [
        (0, 102400, "parameter"),
        (3, 2048, "output"),
        (6, 4, "constant"),
        (9, 3140, "temp"),
    ]
    xs, out, _, temp = allocations
    assert (xs.parameter, xs.parameter_index, xs.live_out) == (3, "{}", False)
    assert out.live_out and out.parameter is None
    phi = out.values[2]
    assert (phi.instruction, phi.index, phi.phi, phi.size) == ("arg_tuple.3", "{1}", True, 2048)
    assert out.values[1].key == ("ynn_fusion", "{}") and out.values[1].shape == "f32[8,64]{1,0}"
    assert (temp.values[0].offset, temp.values[1].key) == (3136, ("tuple.3", "{}"))
    assert temp.values[1].shape.startswith("(s32[], f32[8,64]{1,0}")


def test_parser_tells_a_donated_parameter_and_thread_local_scratch():
    donated, scratch = parse_buffer_assignment(LINREG_ASSIGNMENT)
    assert (donated.kind, donated.parameter, donated.live_out) == ("parameter", 1, True)
    assert [v.instruction for v in donated.values] == ["params__w__.1", "multiply_subtract_fusion"]
    assert scratch.kind == "thread-local"


def test_parser_refuses_text_without_allocations():
    with pytest.raises(ValueError, match="no allocation"):
        parse_buffer_assignment("BufferAssignment:\n")
    with pytest.raises(ValueError, match="before any allocation"):
        parse_buffer_assignment(" value: <1 x @0> (size=4,offset=0): f32[]\n")


def test_live_range_parser_reads_schedule_ranges_and_xla_peak():
    live = parse_live_ranges(MLP_LIVE_RANGE)
    assert live.sequence == ("params__b1__.1", "x.1", "ynn_fusion.1")
    assert live.ranges == {
        ("x.1", "{}"): (0, 9),
        ("ynn_fusion.1", "{}"): (5, 6),
        ("while.5", "{1}"): (28, 30),
    }
    assert (live.peak_step, live.peak_bytes) == (7, 1204224)
    assert live.peak_values == (("params__w1__.1", "{}"), ("x.1", "{}"))
    with pytest.raises(ValueError, match="no instruction sequence"):
        parse_live_ranges("HloLiveRange (max 0):\n")


def test_usage_report_totals_per_memory_color():
    text = "Memory Space: default (color=0)\nTotal bytes: 1351720 (1.29MiB)\n  cumulative_size;"
    assert parse_usage_totals(text) == {0: 1351720}
    assert parse_usage_totals("nothing here") == {}


# --- the analysis, on XLA's dumps of real compilations ------------------------------------


def _dumped(tmp_path, function, *args, static_argnums=()):
    """Compile ``function`` once with XLA dumping into ``tmp_path``: the peak analysis."""
    compiled = (
        jax.jit(function, static_argnums=static_argnums)
        .trace(*args)
        .lower()
        .compile(compiler_options={"xla_dump_to": str(tmp_path)})
    )

    def text(suffix: str) -> str:
        (path,) = tmp_path.glob(f"*{suffix}")
        return path.read_text()

    module = jaxapi.optimized_hlo_module(compiled, "a test")
    memory = collect_memory(compiled, "cpu", [])
    peak = analyse_dump_texts(
        text("-buffer-assignment.txt"),
        text("-live-range.txt"),
        jaxapi.hlo_module_text(module, metadata=True),
        usage_report=text("-memory-usage-report.txt"),
        memory=memory,
        user=default_user_code(str(SAMPLES / "mlp.py")),
    )
    return peak, memory, parse_live_ranges(text("-live-range.txt"))


def _sample(name):
    spec = importlib.util.spec_from_file_location(f"memory_{name}", SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


F32 = jnp.float32


@pytest.fixture(scope="module")
def mlp_peak(tmp_path_factory):
    params = {
        "w1": jax.ShapeDtypeStruct((784, 256), F32),
        "b1": jax.ShapeDtypeStruct((256,), F32),
        "w2": jax.ShapeDtypeStruct((256, 10), F32),
        "b2": jax.ShapeDtypeStruct((10,), F32),
    }
    x = jax.ShapeDtypeStruct((128, 784), F32)
    return _dumped(tmp_path_factory.mktemp("mlp"), _sample("mlp").predict, params, x)


@pytest.fixture(scope="module")
def transformer_peak(tmp_path_factory):
    sq = jax.ShapeDtypeStruct((128, 128), F32)
    params = {
        "wq": sq,
        "wk": sq,
        "wv": sq,
        "wo": sq,
        "ln1": jax.ShapeDtypeStruct((128,), F32),
        "ln2": jax.ShapeDtypeStruct((128,), F32),
        "w1": jax.ShapeDtypeStruct((128, 512), F32),
        "w2": jax.ShapeDtypeStruct((512, 128), F32),
    }
    x = jax.ShapeDtypeStruct((2, 64, 128), F32)
    block = _sample("transformer").block
    return _dumped(tmp_path_factory.mktemp("tf"), block, params, x, 4, static_argnums=(2,))


@pytest.mark.parametrize("name", ["mlp_peak", "transformer_peak"])
def test_peak_equals_xlas_live_range_peak_and_its_buffers_sum_to_it(name, request):
    peak, memory, live = request.getfixturevalue(name)
    # XLA's own live-range dump names the same step and lists the same bytes there.
    assert (peak.peak_step, peak.peak_bytes) == (live.peak_step, live.peak_bytes)
    figure = {f.name: f for f in peak.figures}["live_range_peak"]
    assert figure.agrees and figure.bytes == peak.peak_bytes
    assert sum(b.bytes for b in peak.buffers) == peak.peak_bytes
    assert max(p.live_bytes for p in peak.timeline) == peak.peak_bytes
    assert peak.peak_point.live_bytes == peak.peak_bytes
    assert {(b.instruction, b.index) for b in peak.buffers} == set(live.peak_values)


@pytest.mark.parametrize("name", ["mlp_peak", "transformer_peak"])
def test_memory_analysis_figures_relate_as_documented(name, request):
    peak, memory, _ = request.getfixturevalue(name)
    kinds = {k.kind: k.bytes for k in peak.by_kind}
    # Every memory_analysis() size is the sum of the allocations of its kind.
    assert memory.argument_bytes == kinds["parameter"]
    assert memory.output_bytes == kinds["output"]
    assert memory.temp_bytes == kinds["temp"]
    # On CPU, peak_memory_in_bytes is parameters + outputs + constants: no temp.
    lasting = kinds["parameter"] + kinds["output"] + kinds.get("constant", 0)
    assert memory.peak_bytes == lasting < peak.peak_bytes
    figures = {f.name: f for f in peak.figures}
    assert not figures["peak_memory_in_bytes"].agrees
    assert "leaves out the temp allocation" in figures["peak_memory_in_bytes"].note
    assert all(figures[f"{k}_size_in_bytes"].agrees for k in ("argument", "output", "temp"))
    # Nothing is live that XLA did not allocate: the peak is at most every allocation.
    assert peak.peak_bytes <= peak.allocated_bytes == figures["usage_report_total"].bytes


def test_mlp_peak_is_the_second_matmul_over_the_hidden_layer(mlp_peak):
    peak, memory, _ = mlp_peak
    largest = peak.buffers[0]
    assert (largest.shape, largest.kind, largest.argument) == (
        "f32[784,256]",
        "parameter",
        "params['w1']",
    )
    # The hidden activation (temp) and the logits (output) are live while the second
    # matmul runs; everything else is an argument.
    temps = [b for b in peak.buffers if b.kind == "temp"]
    assert [b.shape for b in temps] == ["f32[128,256]"]
    assert temps[0].source is not None and temps[0].source.function == "relu"
    assert peak.peak_bytes == memory.argument_bytes + memory.temp_bytes + memory.output_bytes


def test_transformer_peak_is_the_mlp_hidden_layer(transformer_peak):
    peak, _, _ = transformer_peak
    biggest = [b for b in peak.buffers if b.bytes == peak.buffers[0].bytes]
    assert {b.shape for b in biggest} == {"f32[128,512]", "f32[512,128]"}
    temps = sorted(b.shape for b in peak.buffers if b.kind == "temp")
    assert temps == ["f32[128,512]", "f32[128,512]"]  # x @ w1 and gelu of it
    sources = {(Path(b.source.file).name, b.source.line) for b in peak.buffers if b.kind == "temp"}
    assert sources == {("transformer.py", 34)}  # hidden = jax.nn.gelu(... @ params["w1"])
