"""The cost model on real JAX: per-op sums, loop-aware totals, source lines, custom calls."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from conftest import sample
from jaxinspect import jaxapi
from jaxinspect.base.inspection import InspectionReport
from jaxinspect.cost.costbuild import build_cost_report
from jaxinspect.inputs.spec import load_spec
from jaxinspect.inputs.target import load_target
from jaxinspect.pipeline.histograms import hlo_op_counts
from jaxinspect.pipeline.opcost import analyse_compiled
from jaxinspect.stages.runner import InspectOptions, run_inspection
from jaxinspect.xla.breakdown import ProgramCost
from jaxinspect.xla.hlotext import parse_instruction, parse_module
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.sourcemap import parse_frame_table

S = jax.ShapeDtypeStruct
F32 = jnp.float32


def matmul(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


# (target, spec, analytic loop-aware FLOPs, relative tolerance). The same formulas are written
# beside each sample in sample_programs/; XLA's elementwise counting makes most exact.
SAMPLES = {
    "scale_shift": ("simple.py:scale_shift", "simple.yaml", 2 * 1000, 0.0),
    "axpy": ("simple.py:axpy", "axpy.yaml", 2 * 1000, 0.0),
    "sin_cos": ("simple.py:sin_cos", "simple.yaml", 1000, 0.0),
    "mlp": (
        "mlp.py:predict",
        "mlp.yaml",
        matmul(128, 784, 256) + matmul(128, 256, 10) + 2 * 128 * 256 + 128 * 10,
        0.0,
    ),
    "loss_fn": ("linreg.py:loss_fn", "linreg.yaml", matmul(64, 16, 1) + 4 * 64, 0.0),
    "grad_loss": ("linreg.py:grad_loss", "linreg.yaml", 2 * matmul(64, 16, 1) + 6 * 64 + 63, 0.0),
    "update_params": (
        "linreg.py:update_params",
        "linreg.yaml",
        2 * matmul(64, 16, 1) + 6 * 64 + 63 + 2 * 17,
        0.0,
    ),
    "predict_batch": (
        "linreg.py:predict_batch",
        "linreg_predict_batch.yaml",
        matmul(64, 16, 1) + 64,
        0.0,
    ),
    "hessian": ("linreg.py:hessian", "linreg_hessian.yaml", 2 * matmul(16, 64, 16), 0.03),
    # 100 steps of two matmuls and two adds, plus the loop counter (100 adds, 101 compares)
    "rnn": (
        "rnn.py:run",
        "rnn.yaml",
        100 * (matmul(8, 64, 64) + matmul(8, 32, 64) + 2 * 8 * 64) + 100 + 101,
        0.0,
    ),
    "transformer": (
        "transformer.py:block",
        "transformer.yaml",
        4 * matmul(2 * 64, 128, 128) + 2 * 2 * 4 * matmul(64, 32, 64) + 2 * matmul(128, 128, 512),
        0.02,
    ),
    # LAPACK's potrf (about n^3/3) is a custom call XLA does not count
    "cholesky": ("cholesky.py:factor", "cholesky.yaml", matmul(64, 64, 64) + 8 * 64 * 64 + 1, 0.0),
}
LOOP_FREE = [k for k in SAMPLES if k not in ("rnn", "cholesky")]


@functools.cache
def inspected(key: str) -> tuple[InspectionReport, ProgramCost, object]:
    """One pipeline run per sample for the whole module; returns report, per-op cost, Compiled."""
    target, spec, _, _ = SAMPLES[key]
    options = InspectOptions(sections=("cost", "memory"), execute=False)
    report, artifacts = run_inspection(
        load_target(sample(target)), load_spec(sample(spec)), options
    )
    return report, analyse_compiled(artifacts.compiled), artifacts.compiled


def compiled_of(fn, *args):
    return jax.jit(fn).trace(*args).lower().compile()


@pytest.mark.parametrize("key", LOOP_FREE)
def test_per_op_sum_equals_xla_totals_on_loop_free_samples(key):
    _, program, compiled = inspected(key)
    xla = compiled.cost_analysis()
    assert not program.flags
    for ours, theirs in (
        (program.counted_once.flops, xla.get("flops", 0.0)),
        (program.counted_once.transcendentals, xla.get("transcendentals", 0.0)),
        (program.counted_once.bytes_accessed, xla.get("bytes accessed", 0.0)),
    ):
        assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-9)
    # Without loops, loop-aware and XLA's figures are the same numbers.
    assert program.loop_aware == program.counted_once


@pytest.mark.parametrize("key", list(SAMPLES))
def test_loop_aware_flops_match_the_analytic_formula(key):
    report, program, _ = inspected(key)
    _, _, analytic, tolerance = SAMPLES[key]
    assert report.cost is not None and report.cost.loop_aware is not None
    assert report.cost.loop_aware.flops == program.loop_aware.flops
    assert program.loop_aware.flops == pytest.approx(analytic, rel=max(tolerance, 1e-9))


def test_scan_body_is_multiplied_by_its_trip_count():
    report, program, _ = inspected("rnn")
    (loop,) = program.loops
    assert loop.trip_count == 100 and loop.runs == 1
    body_flops = sum(op.per_run.flops for op in program.ops if op.computation == loop.body)
    assert program.loop_aware.flops == pytest.approx(100 * body_flops, rel=0.01)
    # XLA's raw figure counts the body once; it stays beside the loop-aware one.
    assert report.cost.flops == program.counted_once.flops
    assert report.cost.flops < program.loop_aware.flops / 90
    assert report.cost.loop_aware.transcendentals == 100 * 8 * 64
    assert report.cost.transcendentals == 8 * 64


def test_matmul_is_attributed_to_its_own_source_line():
    _, program, _ = inspected("mlp")
    lines = Path(sample("mlp.py")).read_text().splitlines()
    first = 1 + next(i for i, line in enumerate(lines) if 'x @ params["w1"]' in line)
    second = 1 + next(i for i, line in enumerate(lines) if 'hidden @ params["w2"]' in line)
    report = build_cost_report(inspected("mlp")[0], program, "flops", None)
    by_line = {(Path(g.file).name, g.line): g for g in report.by_line if g.file}
    assert by_line[("mlp.py", first)].flops >= matmul(128, 784, 256)
    assert dict(by_line[("mlp.py", first)].opcodes) == {"dot": 1, "add": 1}
    assert by_line[("mlp.py", second)].flops >= matmul(128, 256, 10)
    assert report.by_line[0].line == first  # the costliest line comes first
    # The bias add is fused with relu's max; each keeps its own line and function.
    relu = next(g for g in report.by_function if g.function == "relu")
    assert relu.flops == 128 * 256 and dict(relu.opcodes) == {"maximum": 1}
    assert by_line[("mlp.py", first)].flops == matmul(128, 784, 256) + 128 * 256

    assert all(
        "jaxinspect" not in (g.file or "") and "/jax/" not in (g.file or "") for g in report.by_line
    )


@pytest.mark.parametrize("key", ["mlp", "rnn", "transformer"])
def test_groupings_add_up_to_the_loop_aware_totals(key):
    source, program, _ = inspected(key)
    report = build_cost_report(source, program, "flops", None)
    total = program.loop_aware
    for groups in (report.by_line, report.by_function, report.by_scope):
        assert sum(g.flops for g in groups) == pytest.approx(total.flops, rel=1e-9)
        assert sum(g.transcendentals for g in groups) == pytest.approx(total.transcendentals)
        assert sum(g.bytes_accessed for g in groups) == pytest.approx(total.bytes_accessed)
    files = {g.file for g in report.by_line if g.file}
    assert files == {sample(SAMPLES[key][0].split(":")[0])}  # no JAX or jaxinspect frames


def test_custom_call_is_flagged_not_counted():
    report, program, _ = inspected("cholesky")
    (flag,) = program.flags
    assert flag.kind == "custom-call"
    (op,) = [op for op in program.ops if op.name == flag.instruction]
    assert op.opcode == "custom-call" and "potrf" in (op.custom_call_target or "")
    assert op.per_run is None and op.total is None
    assert program.lower_bound
    assert report.cost.loop_aware.lower_bound
    assert report.cost.loop_aware.not_counted == (f"{flag.instruction} (custom-call)",)


def test_host_callback_is_flagged_not_counted():
    def f(x):
        y = jax.pure_callback(lambda a: a * 2, S(x.shape, x.dtype), x)
        return y @ x

    program = analyse_compiled(compiled_of(f, S((8, 8), F32)))
    (flag,) = program.flags
    assert flag.kind == "custom-call" and "callback" in flag.detail
    assert program.lower_bound
    assert program.loop_aware.flops == matmul(8, 8, 8)  # the matmul is still counted


def test_unknown_trip_count_is_flagged_and_counted_once():
    def f(x, n):
        return jax.lax.fori_loop(0, n, lambda i, x: jnp.sin(x) @ x, x)

    program = analyse_compiled(compiled_of(f, S((8, 8), F32), S((), jnp.int32)))
    (loop,) = program.loops
    assert loop.trip_count is None
    assert [f.kind for f in program.flags] == ["unknown-trip-count"]
    assert program.lower_bound
    assert program.loop_aware == program.counted_once


def test_nested_loops_multiply_and_conditionals_are_flagged():
    def f(x):
        def inner(c, _):
            c = jax.lax.cond(c.sum() > 0, lambda c: jnp.sin(c) @ c, lambda c: c * 2.0, c)
            return c, None

        def outer(c, _):
            return jax.lax.scan(inner, c, None, length=3)[0], None

        return jax.lax.scan(outer, x, None, length=5)[0]

    program = analyse_compiled(compiled_of(f, S((8, 8), F32)))
    assert sorted((loop.trip_count, loop.runs) for loop in program.loops) == [(3, 5), (5, 1)]
    conditional = next(op for op in program.ops if op.opcode == "conditional")
    assert conditional.runs == 15
    assert [f.kind for f in program.flags] == ["conditional"]
    assert not program.lower_bound  # XLA costs the costliest branch: not a lower bound


def test_partitioned_modules_are_marked_per_device():
    from jaxinspect.xla.breakdown import analyse_module

    _, single, compiled = inspected("axpy")
    assert single.partitions == 1
    text = compiled.as_text()
    header, rest = text.split("\n", 1)
    client = compiled.runtime_executable().client
    program, _ = analyse_module(f"{header}, num_partitions=8\n{rest}", client, UserCode(()))
    assert program.partitions == 8
    assert program.counted_once == single.counted_once


def test_parser_agrees_with_the_hlo_object_api():
    _, _, compiled = inspected("transformer")
    module = compiled.runtime_executable().hlo_modules()[0]
    hlo = parse_module(module.to_string())
    fused = {i.callee("calls") for c in hlo.computations for i in c.instructions}
    counts: dict[str, int] = {}
    for comp in hlo.computations:
        if comp.name not in fused:
            for instr in comp.instructions:
                counts[instr.opcode] = counts.get(instr.opcode, 0) + 1
    assert counts == dict(hlo_op_counts(module))


def test_frame_table_rebuilds_the_call_chain():
    _, _, compiled = inspected("rnn")
    text = compiled.as_text()
    frames = parse_frame_table(text)
    hlo = parse_module(text)
    lines = Path(sample("rnn.py")).read_text().splitlines()
    step_line = 1 + next(i for i, line in enumerate(lines) if "h = jnp.tanh(h @" in line)
    dots = [i for c in hlo.computations for i in c.instructions if i.opcode == "dot"]
    assert len(dots) == 2
    for dot in dots:
        chain = frames.chain(dot.stack_frame_id)
        assert chain[0].function == "run.<locals>.step" and chain[0].line == step_line
        assert any(loc.function == "run" for loc in chain[1:])


def test_instruction_parser_handles_tuples_comments_and_literals():
    instr = parse_instruction(
        "  ROOT %t = (s32[], f32[8,64]{1,0}, /*index=2*/f32[2]{0}) tuple(%a, %b, /*index=2*/%c)"
    )
    assert (instr.opcode, instr.operands, instr.is_root) == ("tuple", ("a", "b", "c"), True)
    constant = parse_instruction('  %c.1 = f32[2]{0} constant({1, 2}), metadata={op_name="x"}')
    assert constant.operands == () and constant.literal == "{1, 2}"
    assert constant.op_name == "x"
    with pytest.raises(ValueError, match="not an HLO instruction"):
        parse_instruction("FileNames")


def test_one_match_parse_agrees_with_the_general_walk():
    # A leading comment sends a line down the general walk (it is removed before matching),
    # so each line is parsed both ways: every field must agree.
    _, _, compiled = inspected("transformer")
    text = jaxapi.compiled_module_text(compiled, "the test")
    lines = [line for line in text.splitlines() if " = " in line and line.startswith("  ")]
    lines += [
        "  %p = f32[8]{0:T(8)} parameter(0)",  # a parenthesis in the layout
        "  %g = f32[2]{0} get-tuple-element((f32[2]{0}, s32[]) %t), index=0",
        "  %a = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %y)",  # operands printed with shapes
        "  %e = () tuple()",
        "  ROOT %c = s32[] constant(3)",
    ]
    fields = ("name", "opcode", "shape", "operands", "attributes", "literal", "is_root", "text")
    for line in lines:
        one, general = parse_instruction(line), parse_instruction("/**/" + line)
        assert [getattr(one, f) for f in fields] == [getattr(general, f) for f in fields], line
    assert parse_instruction(lines[-2]).shape == "()"
    assert parse_instruction(lines[-3]).operands == ("x", "y")
    assert parse_instruction(lines[-4]).operands == ("t",)


def test_sample_formulas_are_written_beside_each_sample():
    for target, _, _, _ in SAMPLES.values():
        text = Path(sample(target.split(":")[0])).read_text()
        assert re.search(r"FLOPs", text), f"{target}: no analytic FLOP formula in the file"
