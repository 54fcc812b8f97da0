"""``jax.random`` programs: threefry loops with control predecessors are costed, not flagged."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from typer.testing import CliRunner

from jaxinspect.cli.app import app
from jaxinspect.pipeline.opcost import analyse_compiled
from jaxinspect.xla.breakdown import analyse_module
from jaxinspect.xla.hlotext import join_attributes, parse_module
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.xlacost import module_cost, wrap_instruction

N = 64


def noisy(key, x):
    return x + jax.random.normal(key, x.shape)


@pytest.fixture(scope="module")
def noisy_compiled():
    return jax.jit(noisy).lower(jax.random.key(0), jnp.zeros(N)).compile()


def _text_with_control_dependencies(compiled) -> str:
    """The optimized module as ``to_string`` prints it by default: control deps included."""
    return compiled.runtime_executable().hlo_modules()[0].to_string()


def test_threefry_loop_has_control_predecessors_in_real_output(noisy_compiled):
    # The premise of the fix: XLA orders the loop's copies with control predecessors.
    assert "control-predecessors={" in _text_with_control_dependencies(noisy_compiled)


def test_random_program_is_fully_counted(noisy_compiled):
    program = analyse_compiled(noisy_compiled)
    xla = noisy_compiled.cost_analysis()
    assert program.flags == () and not program.lower_bound
    assert all(op.per_run is not None for op in program.ops)
    # Every op once: XLA's own figures, exactly; the threefry loop runs 5 times.
    assert program.counted_once.flops == xla["flops"]
    assert program.counted_once.bytes_accessed == xla["bytes accessed"]
    assert [(loop.trip_count, loop.runs) for loop in program.loops] == [(5, 1)]
    assert program.loop_aware.flops > 2 * program.counted_once.flops


def test_wrapper_drops_control_predecessors_from_text_that_has_them(noisy_compiled):
    text = _text_with_control_dependencies(noisy_compiled)
    hlo = parse_module(text)
    client = noisy_compiled.runtime_executable().client
    ordered = [
        (comp, instr)
        for comp in hlo.computations
        for instr in comp.instructions
        if any(key == "control-predecessors" for key, _ in instr.attribute_items)
    ]
    assert ordered
    for comp, instr in ordered:
        wrapped = wrap_instruction(hlo, comp, instr)
        assert "control-predecessors" not in wrapped
        assert module_cost(client, wrapped).bytes_accessed > 0
    program, _ = analyse_module(text, client, UserCode(()))
    assert program.flags == ()


def test_attribute_split_round_trips_real_compiler_output(noisy_compiled):
    # Metadata strings, JSON backend configs and brace lists all hold commas.
    options_text = noisy_compiled.as_text()
    for text in (_text_with_control_dependencies(noisy_compiled), options_text):
        for comp in parse_module(text).computations:
            for instr in comp.instructions:
                assert join_attributes(instr.attribute_items) == instr.attributes
                assert all(key and " " not in key for key, _ in instr.attribute_items)


def test_loop_aware_threefry_equals_the_analytic_and_unrolled_figures():
    """threefry2x32 rolled (CPU's lowering) against its unrolled lowering (GPU's and TPU's).

    Fusion is switched off so that XLA duplicates no element-wise work into several fusions:
    each op is then counted once and the figures are exact. Per lane: 2 key adds, 20 rounds
    of 5 ops (add, two shifts, or, xor) and 5 key injections of 3 adds: 117 ops. Scalars: the
    rolled loop carries its rotations and counters, so each of the 5 trips also does 4
    ``32 - rotation`` subtracts, the injection counter's add and the loop counter's add, and
    the condition compares 6 times; the unrolled program folds these into constants. Both
    compute ``k1 ^ k2 ^ C`` (2 xors).
    """
    from jax._src.random.threefry2x32 import _threefry2x32_lowering

    u32, lanes = jax.ShapeDtypeStruct((), np.uint32), jax.ShapeDtypeStruct((N,), np.uint32)
    options = {"xla_disable_hlo_passes": "fusion"}

    def compiled(rolled: bool):
        def hash_(k1, k2, x1, x2):
            return _threefry2x32_lowering(k1, k2, x1, x2, use_rolled_loops=rolled)

        return jax.jit(hash_).lower(u32, u32, lanes, lanes).compile(compiler_options=options)

    rolled = analyse_compiled(compiled(True))
    unrolled = compiled(False).cost_analysis()["flops"]
    loop_scalars = 5 * (4 + 1 + 1) + 6
    assert [loop.trip_count for loop in rolled.loops] == [5]
    assert unrolled == 117 * N + 2
    assert rolled.loop_aware.flops == 117 * N + 2 + loop_scalars
    assert rolled.flags == ()


def test_cost_of_a_jax_random_program_is_short_and_complete(run_cli, tmp_path):
    program = tmp_path / "noisy.py"
    program.write_text(
        "import jax\n\n\ndef noisy(key, x):\n    return x + jax.random.normal(key, x.shape)\n"
    )
    args = ("cost", f"{program}:noisy", "--arg", "key=key[]", "--arg", "x=f32[1024]")
    # 120 columns: what the command prints when its output is not a terminal.
    result = CliRunner().invoke(app, args, env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "LOWER BOUND" not in result.stdout and "not counted" not in result.stdout
    assert "while loops" in result.stdout and "noisy.py:5" in result.stdout
    # 62 lines today: the memory table holds the peak, the constants and XLA's own figure
    # with its note (#21).
    assert len(lines) < 70, f"{len(lines)} lines\n{result.stdout}"
    doc = json.loads(run_cli(*args, "--format", "json").stdout)
    assert doc["cost"]["not_counted"] == [] and doc["cost"]["not_counted_groups"] == []
    assert doc["cost"]["loop_aware"]["lower_bound"] is False
    stages = run_cli("stages", *args[1:], "--stage", "cost")
    assert stages.exit_code == 0 and "LOWER BOUND" not in stages.stdout
