"""The optimized module is printed once per run: what every printing answers alike (the header's
aliases, whether a collective is spelt) is read off the printing the run already made, and
``cost``/``memory`` runs (``InspectOptions.stage_texts=False``) print no IR text at all."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from conftest import sample
from jaxinspect import jaxapi
from jaxinspect.inputs.spec import load_spec, parse_spec_text
from jaxinspect.inputs.target import load_target
from jaxinspect.pipeline import analyses
from jaxinspect.stages.runner import InspectOptions, run_inspection
from jaxinspect.xla.collectives import compiled_collectives, spells_no_collective

DONATING = """
args:
  params: {w: 'f32[16]', b: 'f32[]'}
  x: f32[64,16]
donate: [params]
"""


def _donating(tmp_path: Any) -> tuple[str, Any]:
    program = tmp_path / "donating.py"
    program.write_text(
        "def update(params, x):\n    return {k: v - x.sum() for k, v in params.items()}, x.mean()\n"
    )
    return f"{program}:update", parse_spec_text(DONATING, source="d.yaml")


# A donating program (its header carries input_output_alias), a data-parallel one (all-reduce
# on 8 devices) and a shard_map psum: aliases and collectives read from either printing.
CASES = ["donating", "sharded.py:train_step", "sharded.py:column_sums"]
SPECS = {"sharded.py:train_step": "sharded_dp.yaml", "sharded.py:column_sums": "sharded_psum.yaml"}


def _run(case: str, tmp_path: Any, **options: Any) -> tuple[Any, Any]:
    if case == "donating":
        target, spec = _donating(tmp_path)
    else:
        target, spec = sample(case), load_spec(sample(SPECS[case]))
    return run_inspection(load_target(target), spec, InspectOptions(execute=False, **options))


@pytest.mark.parametrize("case", CASES)
def test_a_run_without_stage_texts_differs_only_in_them(case: str, tmp_path: Any) -> None:
    full, _ = _run(case, tmp_path)
    bare, artifacts = _run(case, tmp_path, stage_texts=False)
    assert bare.stages == ()
    assert [s.name for s in full.stages] == ["jaxpr", "stablehlo", "hlo"]
    # Everything else is the same report: aliases, collectives, cost, memory, reasons.
    assert replace(bare, stages=full.stages, timings=full.timings) == full
    # The aliases were read off the analyses' printing, which that run made and keeps.
    assert jaxapi.printed_module(artifacts.compiled, "a test") is jaxapi.compiled_module_text(
        artifacts.compiled, "a test"
    )


@pytest.mark.parametrize("case", CASES)
def test_both_printings_have_one_header_and_spell_the_same_collectives(
    case: str, tmp_path: Any
) -> None:
    report, artifacts = _run(case, tmp_path)
    compiled = artifacts.compiled
    as_text, full = compiled.as_text(), jaxapi.compiled_module_text(compiled, "a test")
    assert as_text.partition("\n")[0] == full.partition("\n")[0]
    assert jaxapi.compiled_module_header(compiled) == full.partition("\n")[0]
    assert spells_no_collective(as_text) == spells_no_collective(full)
    assert spells_no_collective(as_text) == (not compiled_collectives(compiled).items)
    assert (case == "donating") == (not report.collectives.items)
    assert (case == "donating") == bool(report.memory and report.memory.aliases)


def test_the_as_text_printing_is_made_once_per_executable() -> None:
    compiled = jax.jit(lambda x: jnp.sin(x) * 2).lower(jnp.ones(8)).compile()
    first = jaxapi.optimized_hlo_text(compiled)
    assert first == compiled.as_text()
    assert jaxapi.optimized_hlo_text(compiled) is first
    assert jaxapi.printed_module(compiled, "a test") is first


@pytest.mark.parametrize(
    ("target", "spec"),
    [
        ("rnn.py:run", "rnn.yaml"),  # a while loop
        ("cholesky.py:factor", "cholesky.yaml"),  # LAPACK custom calls on CPU
        ("mlp.py:predict", "mlp.yaml"),  # none
        ("transformer.py:block", "transformer.yaml"),
    ],
)
def test_the_control_flow_found_in_the_text_is_the_walk_s(target: str, spec: str) -> None:
    _, artifacts = run_inspection(
        load_target(sample(target)), load_spec(sample(spec)), InspectOptions(execute=False)
    )
    compiled = artifacts.compiled
    walked = any(
        instruction.opcode.name in analyses._CONTROL_FLOW
        for module in jaxapi.optimized_hlo_modules(compiled) or ()
        for computation in module.computations()
        for instruction in computation.instructions()
    )
    assert analyses._has_control_flow(compiled) == walked
    assert walked == (target in ("rnn.py:run", "cholesky.py:factor"))
