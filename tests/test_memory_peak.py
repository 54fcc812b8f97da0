"""Memory at the peak from XLA's buffer assignment: the parser, the timeline, the command."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import jsonschema
import pytest
from jax import monitoring
from narrow import assert_readable
from rich.console import Console
from typer.testing import CliRunner

from conftest import ROOT, SAMPLES, sample
from jaxinspect import jaxapi
from jaxinspect.cli.app import app
from jaxinspect.inputs.spec import load_spec
from jaxinspect.inputs.target import load_target
from jaxinspect.memory.console import render_memory
from jaxinspect.memory.jsondoc import render_memory_json
from jaxinspect.memory.peak import analyse_dump_texts
from jaxinspect.memory.runner import build_memory_report
from jaxinspect.pipeline.analyses import collect_memory
from jaxinspect.pipeline.dumps import DumpedModule
from jaxinspect.stages.dumprun import run_dumped
from jaxinspect.stages.livepeak import jax_peak_relation, schedule_steps
from jaxinspect.stages.runner import InspectOptions, run_inspection
from jaxinspect.xla.bufferassign import (
    parse_buffer_assignment,
    parse_live_ranges,
    parse_usage_totals,
)
from jaxinspect.xla.hlotext import parse_module
from jaxinspect.xla.ownership import default_user_code

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


def test_usage_report_totals_per_memory_space():
    text = (
        "Memory Space: default (color=0)\nTotal bytes: 1230848 (1.17MiB)\n  cumulative_size;\n"
        "\nMemory Space: vmem (color=1)\nTotal bytes: 802816 (784.0KiB)\n"
    )
    assert parse_usage_totals(text) == {0: ("default", 1230848), 1: ("vmem", 802816)}
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
    module_text = jaxapi.hlo_module_text(module, metadata=True)
    peak = analyse_dump_texts(
        text("-buffer-assignment.txt"),
        text("-live-range.txt"),
        module_text,
        usage_report=text("-memory-usage-report.txt"),
        memory=memory,
        user=default_user_code(str(SAMPLES / "mlp.py")),
    )
    entry = tuple(i.name for i in parse_module(module_text).entry.instructions)
    return peak, memory, parse_live_ranges(text("-live-range.txt")), entry


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
    peak, memory, live, entry = request.getfixturevalue(name)
    # XLA's own live-range dump names the same step and lists the same bytes there.
    assert (peak.peak_step, peak.peak_bytes) == (live.peak_step, live.peak_bytes)
    figure = {f.name: f for f in peak.figures}["live_range_peak"]
    assert figure.agrees and figure.bytes == peak.peak_bytes
    assert sum(b.bytes for b in peak.buffers) == peak.peak_bytes
    assert max(p.live_bytes for p in peak.timeline) == peak.peak_bytes
    assert peak.peak_point.live_bytes == peak.peak_bytes
    assert {(b.instruction, b.index) for b in peak.buffers} == set(live.peak_values)
    # One timeline point per entry instruction, in the scheduled module's printed order.
    assert tuple(p.instruction for p in peak.timeline) == entry


@pytest.mark.parametrize("name", ["mlp_peak", "transformer_peak"])
def test_memory_analysis_figures_relate_as_documented(name, request):
    peak, memory, *_ = request.getfixturevalue(name)
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
    assert "below the peak" in figures["peak_memory_in_bytes"].note
    assert "without the temp allocation" in figures["peak_memory_in_bytes"].note
    assert all(figures[f"{k}_size_in_bytes"].agrees for k in ("argument", "output", "temp"))
    # Nothing is live that XLA did not allocate: the peak is at most every allocation.
    assert peak.peak_bytes <= peak.allocated_bytes == figures["usage_report_total"].bytes


def test_mlp_peak_is_the_second_matmul_over_the_hidden_layer(mlp_peak):
    peak, memory, *_ = mlp_peak
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
    peak, *_ = transformer_peak
    biggest = [b for b in peak.buffers if b.bytes == peak.buffers[0].bytes]
    assert {b.shape for b in biggest} == {"f32[128,512]", "f32[512,128]"}
    temps = sorted(b.shape for b in peak.buffers if b.kind == "temp")
    assert temps == ["f32[128,512]", "f32[128,512]"]  # x @ w1 and gelu of it
    sources = {(Path(b.source.file).name, b.source.line) for b in peak.buffers if b.kind == "temp"}
    assert sources == {("transformer.py", 34)}  # hidden = jax.nn.gelu(... @ params["w1"])


# --- the command --------------------------------------------------------------------------

MEMORY_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/memory.schema.json").read_text())
_compiles: list[str] = []


def _on_duration(name: str, _secs: float, **kwargs: object) -> None:
    if name == jaxapi.COMPILE_EVENT:
        _compiles.append(str(kwargs.get("fun_name")))


monitoring.register_event_duration_secs_listener(_on_duration)


def memory_json(run_cli, target: str, spec: str, *extra: str) -> dict:
    result = run_cli("memory", sample(target), "--shapes", sample(spec), *extra, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, MEMORY_SCHEMA)
    return doc


@pytest.mark.parametrize(
    ("target", "spec", "largest"),
    [
        ("mlp.py:predict", "mlp.yaml", {"f32[784,256]"}),
        ("transformer.py:block", "transformer.yaml", {"f32[128,512]", "f32[512,128]"}),
    ],
)
def test_json_peak_is_xlas_sums_its_buffers_and_tops_the_timeline(run_cli, target, spec, largest):
    jax.clear_caches()  # a compilation cached in this process would not dump
    _compiles.clear()
    doc = memory_json(run_cli, target, spec)
    assert len(_compiles) == 1  # one compilation, and it is the one that dumped
    memory = doc["memory"]
    peak = memory["peak"]["bytes"]
    assert sum(b["bytes"] for b in memory["buffers"]) == peak
    assert max(p["live_bytes"] for p in memory["timeline"]) == peak
    figures = {f["name"]: f for f in memory["figures"]}
    assert figures["live_range_peak"]["agrees"] and figures["live_range_peak"]["xla_bytes"] == peak
    analysis = memory["memory_analysis"]
    assert figures["temp_size_in_bytes"]["xla_bytes"] == analysis["temp_bytes"]
    assert peak == analysis["argument_bytes"] + analysis["output_bytes"] + analysis["temp_bytes"]
    top = [b for b in memory["buffers"] if b["bytes"] == memory["buffers"][0]["bytes"]]
    assert {b["shape"] for b in top} == largest
    assert memory["fit"] is None and "--device" in doc["unavailable"]["memory.fit"]


def test_device_fit_line_and_json(run_cli):
    doc = memory_json(run_cli, "mlp.py:predict", "mlp.yaml", "--device", "h100")
    fit = doc["memory"]["fit"]
    assert (fit["device"], fit["capacity_bytes"], fit["fits"]) == ("h100", 80 * 10**9, True)
    assert fit["peak_bytes"] == doc["memory"]["peak"]["bytes"] == 1_351_720
    result = run_cli(
        "memory", sample("mlp.py:predict"), "--shapes", sample("mlp.yaml"), "--device", "h100"
    )
    assert "peak 1.29 MiB of 74.5 GiB HBM on h100 (0.00169%)" in result.stdout
    cpu = memory_json(run_cli, "mlp.py:predict", "mlp.yaml", "--device", "epyc-9654")
    assert cpu["memory"]["fit"] is None
    assert "no memory capacity" in cpu["unavailable"]["memory.fit"]


def test_loop_body_steps_belong_to_their_while(run_cli):
    doc = memory_json(run_cli, "rnn.py:run", "rnn.yaml")
    memory = doc["memory"]
    loop = next(p for p in memory["timeline"] if p["opcode"] == "while")
    assert loop["first_step"] < loop["step"]  # the body and condition run before it
    assert memory["peak"]["entry_instruction"] == loop["instruction"]
    assert memory["peak"]["instruction"] == loop["at"] != loop["instruction"]
    # XLA's dump names another step and counts an in-place result twice: the note says so.
    figure = next(f for f in memory["figures"] if f["name"] == "live_range_peak")
    assert (
        not figure["agrees"]
        and "twice" in figure["note"]
        and "cannot account" not in figure["note"]
    )


def test_console_fits_80_columns_with_every_name_whole(run_cli):
    runner = CliRunner()
    argv = ["memory", sample("transformer.py:block"), "--shapes", sample("transformer.yaml")]
    result = runner.invoke(app, argv, env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    for heading in ("peak", "buffers live at the peak", "live bytes by step", "XLA's own figures"):
        assert heading in text
    assert "▲ peak" in text and "◀\u00a0peak" in text
    doc = memory_json(run_cli, "transformer.py:block", "transformer.yaml")
    names = {b["instruction"] for b in doc["memory"]["buffers"]}
    names |= {p["instruction"] for p in doc["memory"]["timeline"]}
    shapes = {b["shape"] for b in doc["memory"]["buffers"]}
    assert_readable(text, 80, names | shapes)


def test_bad_spec_and_unknown_device_exit_2(run_cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("args:\n  params: f32[oops]\n")
    result = run_cli("memory", sample("mlp.py:predict"), "--shapes", str(bad))
    assert result.exit_code == 2 and "bad.yaml" in result.stderr
    result = run_cli(
        "memory", sample("mlp.py:predict"), "--shapes", sample("mlp.yaml"), "--device", "h1000"
    )
    assert result.exit_code == 2 and "h100" in result.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None,
    reason="libtpu is not installed (pip install 'jaxinspect[tpu]'); CI installs it",
)
def test_tpu_peak_counts_hbm_and_explains_xlas_other_spaces_and_padding(run_cli):
    doc = memory_json(run_cli, "mlp.py:predict", "mlp.yaml", "--topology", "v5e:2x2")
    memory = doc["memory"]
    peak = memory["peak"]["bytes"]
    assert sum(b["bytes"] for b in memory["buffers"]) == peak
    # w1 is prefetched into on-chip memory (color 1): not HBM, so not in the timeline.
    assert any(k["color"] != 0 for k in memory["by_kind"])
    assert peak == sum(b["bytes"] for b in memory["buffers"] if b["kind"] != "temp")
    figure = next(f for f in memory["figures"] if f["name"] == "live_range_peak")
    assert "other memory spaces" in figure["note"] and "padding" in figure["note"]
    assert "cannot account" not in figure["note"]  # the difference is accounted for exactly
    fit = memory["fit"]
    assert fit["device"] == "TPU v5 lite" and fit["peak_bytes"] == peak and fit["fits"]


def test_no_buffer_assignment_gives_nulls_with_the_reason():
    spec = load_spec(sample("mlp.yaml"))
    options = InspectOptions(sections=("memory",), execute=False)
    source, artifacts = run_inspection(load_target(sample("mlp.py:predict")), spec, options)
    why = "XLA wrote no buffer assignment for this compilation"
    dump = DumpedModule(
        0, "jit_predict", None, None, None, None, None, None, (("buffer_assignment", why),)
    )
    report = build_memory_report(source, artifacts.compiled, dump)
    assert report.peak is None and report.fit is None
    doc = json.loads(render_memory_json(report))
    jsonschema.validate(doc, MEMORY_SCHEMA)
    assert all(doc["memory"][k] is None for k in ("peak", "buffers", "timeline", "figures"))
    assert doc["unavailable"]["memory.peak"] == why
    assert doc["memory"]["memory_analysis"]["temp_bytes"] == 131072  # JAX's figures stay
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(render_memory(report))
    assert f"no buffer assignment: {why}" in " ".join(console.file.getvalue().split())


STAGES_SCHEMA = json.loads((ROOT / "jaxinspect" / "schemas" / "stages.schema.json").read_text())
COST_SCHEMA = json.loads((ROOT / "jaxinspect" / "schemas" / "cost.schema.json").read_text())

# #26 finding 9: closed-over data (a 1000×21 design matrix) is a constant allocation, which
# memory_analysis() counts in no field.
DESIGN_PROGRAM = """
import jax.numpy as jnp
import numpy as np

X = jnp.asarray(np.random.default_rng(0).normal(size=(1000, 21)), dtype=jnp.float32)


def loss(w):
    return jnp.sum(jnp.tanh(X @ w))
"""


def _json(run_cli, schema, *argv: str) -> dict:
    result = run_cli(*argv, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, schema)
    return doc


def test_one_peak_in_stages_cost_and_memory_with_constants_counted(run_cli, tmp_path):
    program = tmp_path / "design.py"
    program.write_text(DESIGN_PROGRAM)
    target = ("--arg", "w=f32[21]")
    stages = _json(run_cli, STAGES_SCHEMA, "stages", f"{program}:loss", *target, "--no-execute")
    cost = _json(run_cli, COST_SCHEMA, "cost", f"{program}:loss", *target)
    memory = memory_json_of(run_cli, f"{program}:loss", *target)
    peak = memory["memory"]["peak"]["bytes"]
    assert stages["memory"]["peak"]["bytes"] == cost["memory"]["peak"]["bytes"] == peak
    # The design matrix (84,000 B) is live at the peak, and counted in the upper bound.
    assert stages["memory"]["peak"]["constant_bytes"] >= 1000 * 21 * 4
    assert peak > 1000 * 21 * 4
    assert stages["memory"]["derived_counts_constants"]
    assert stages["memory"]["derived_peak_bytes"] >= peak
    assert cost["memory"]["peak_estimate"]["source"] == "jaxinspect"
    assert cost["memory"]["peak_estimate"]["bytes"] == peak
    console = run_cli("stages", f"{program}:loss", *target, "--no-execute", "--stage", "memory")
    assert console.exit_code == 0, console.stderr
    text = " ".join(console.stdout.split())
    assert "│ peak │ 86 KiB │ most bytes live at once" in text
    assert "│ constants │ 82 KiB │ closed-over" in text
    assert "│ peak_memory_in_bytes (XLA) │ 82.1 KiB │ 3,996 B below" in text  # 88,088 - 84,092
    assert "leaves out" not in text


def memory_json_of(run_cli, target: str, *extra: str) -> dict:
    result = run_cli("memory", target, *extra, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, MEMORY_SCHEMA)
    return doc


def test_stages_reads_the_peak_from_its_one_compilation():
    jax.clear_caches()  # a compilation cached in this process would not dump
    _compiles.clear()
    spec = load_spec(sample("mlp.yaml"))
    options = InspectOptions(sections=("memory",), execute=False, live_peak=True)
    source, _ = run_inspection(load_target(sample("mlp.py:predict")), spec, options)
    assert len(_compiles) == 1
    assert source.memory is not None and source.memory.peak is not None
    assert source.memory.peak.bytes == 1_351_720  # as `memory` finds it (test above)
    plain = InspectOptions(sections=("memory",), execute=False)
    source, _ = run_inspection(load_target(sample("mlp.py:predict")), spec, plain)
    assert source.memory is not None and source.memory.peak is None
    assert "jaxinspect memory" in (source.reason("memory.peak") or "")
    assert not source.memory.derived_counts_constants


def test_memory_counts_the_schedule_once_with_the_stages_peak():
    # The stages report's peak and the memory report's buffers and timeline come from one
    # count of the live bytes per step (the dumps of the run's one compilation).
    jax.clear_caches()  # a compilation cached in this process would not dump
    schedule_steps.cache_clear()
    spec = load_spec(sample("mlp.yaml"))
    options = InspectOptions(sections=("memory",), execute=False, live_peak=True)
    run = run_dumped(load_target(sample("mlp.py:predict")), spec, options)
    report = build_memory_report(run.source, run.compiled, run.dumped)
    assert schedule_steps.cache_info().misses == 1
    assert run.source.memory is not None and run.source.memory.peak is not None
    assert report.peak is not None
    assert report.peak.peak_bytes == run.source.memory.peak.bytes == 1_351_720
    assert report.peak.peak_step == run.source.memory.peak.step


@pytest.mark.parametrize(
    ("jax_peak", "side", "says"),
    [
        # #26 finding 11: XLA's figure above the peak never "leaves out" anything.
        (1_500, "500 B above the peak", "not all live at one step"),
        (1_500 - 700, "200 B below the peak", "temp values are live at the peak"),
    ],
)
def test_xla_peak_note_never_contradicts_the_numbers_beside_it(jax_peak, side, says):
    lasting = jax_peak
    agrees, note = jax_peak_relation(jax_peak, 1_000, lasting, 700)
    assert not agrees and note.startswith(side) and says in note
    assert "leaves out" not in note
    # A TPU's figure: the peak plus its on-chip scratch in other memory spaces.
    agrees, note = jax_peak_relation(1_000 + 52, 1_000, 2_000, 0, (("vmem (color 1)", 52),))
    assert note.startswith("52 B above the peak") and "52 B in vmem (color 1)" in note
    assert jax_peak_relation(1_000, 1_000, 900, 100) == (True, "the same figure as the peak")


@pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None,
    reason="libtpu is not installed (pip install 'jaxinspect[tpu]'); CI installs it",
)
def test_tpu_stages_peak_is_memorys_and_xlas_figure_adds_vmem(run_cli):
    argv = (sample("mlp.py:predict"), "--shapes", sample("mlp.yaml"), "--topology", "v5e:2x2")
    stages = _json(run_cli, STAGES_SCHEMA, "stages", *argv, "--no-execute")
    memory = memory_json(run_cli, "mlp.py:predict", "mlp.yaml", "--topology", "v5e:2x2")
    live = stages["memory"]["peak"]
    assert live["bytes"] == memory["memory"]["peak"]["bytes"]
    # w1 (802,816 B) is prefetched into vmem (color 1): XLA's figure is the peak plus it.
    vmem = {s["space"]: s["bytes"] for s in live["other_spaces"]}["vmem (color 1)"]
    assert stages["memory"]["peak_bytes"] == live["bytes"] + vmem == live["bytes"] + 784 * 256 * 4
    figure = next(f for f in memory["memory"]["figures"] if f["name"] == "peak_memory_in_bytes")
    assert figure["note"].startswith(f"{vmem:,} B above the peak") and "vmem" in figure["note"]
    text = run_cli("stages", *argv, "--no-execute", "--stage", "memory").stdout
    assert "802,816 B above the peak" in text
    console = run_cli("memory", *argv).stdout
    assert "color 1 is vmem" in " ".join(console.split())
