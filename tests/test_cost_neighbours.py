"""Instructions XLA left without metadata take their line from a neighbour (issue #26, 7)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from conftest import ROOT
from jaxinspect.xla.aggregate import XLA_CREATED
from jaxinspect.xla.hlotext import parse_module
from jaxinspect.xla.neighbours import NeighbourMetadata

COST_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/cost.schema.json").read_text())

#: The finding's minimal program: XLA strips the rewritten matrix-vector dot's metadata.
MATVEC = """\
import jax.numpy as jnp


def loss(X, w):
    return jnp.sum(jnp.tanh(X @ w))
"""


def test_a_matrix_vector_product_keeps_its_line(run_cli, tmp_path: Path) -> None:
    (tmp_path / "mv.py").write_text(MATVEC)
    args = (f"{tmp_path}/mv.py:loss", "--arg", "X=f32[256,64]", "--arg", "w=f32[64]")
    result = run_cli("cost", *args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, COST_SCHEMA)
    dot = next(op for op in doc["cost"]["ops"] if op["opcode"] == "dot")
    # The dot has no metadata; the bitcast reading it inside the tanh fusion says dot_general.
    assert dot["source_from"] is not None and not dot["created_by_xla"]
    assert dot["op_name"] == "jit(loss)/dot_general"
    assert (dot["source"]["line"], dot["source"]["column"]) == (5, 28)
    lines = {g["key"]: g for g in doc["cost"]["by_line"]}
    assert XLA_CREATED not in lines
    mv = next(g for key, g in lines.items() if key.endswith("mv.py:5"))
    assert mv["flops"] == doc["cost"]["loop_aware"]["flops"]  # 100% on the user's line
    table = run_cli("cost", *args, "--by", "line")
    assert table.exit_code == 0 and XLA_CREATED not in table.stdout


MODULE = """\
HloModule m

%fused (p0: f32[4], p1: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  %p1 = f32[4]{0} parameter(1)
  %neg = f32[4]{0} negate(%p1)
  ROOT %add = f32[4]{0} add(%p0, %neg), metadata={op_name="jit(f)/add" stack_frame_id=3}
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0), metadata={op_name="a"}
  %lonely = f32[4]{0} copy(%a)
  %exp = f32[4]{0} exponential(%a), metadata={op_name="jit(f)/exp" stack_frame_id=1}
  %copy = f32[4]{0} copy(%exp)
  %copy.2 = f32[4]{0} copy(%copy)
  %dot = f32[4]{0} multiply(%a, %a)
  %log = f32[4]{0} log(%dot), metadata={op_name="jit(f)/log" stack_frame_id=2}
  %mul = f32[4]{0} multiply(%a, %a)
  ROOT %fusion = f32[4]{0} fusion(%log, %mul), kind=kLoop, calls=%fused, FUSION_METADATA
}
""".replace("FUSION_METADATA", 'metadata={op_name="jit(f)/sub" stack_frame_id=4}')


def test_the_neighbour_rule_operand_first_then_user_then_nothing() -> None:
    hlo = parse_module(MODULE)
    rule = NeighbourMetadata(hlo)
    entry = hlo.entry
    placed = {i.name: rule.of(entry, i) for i in entry.instructions}
    # Own metadata stays; a parameter's op_name without a frame lends nothing.
    assert (placed["exp"].frame_id, placed["exp"].borrowed_from) == (1, None)
    # Operand first: the copy of exp is exp's; a copy of that copy too (transitively).
    assert (placed["copy"].frame_id, placed["copy"].borrowed_from) == (1, "exp")
    assert (placed["copy.2"].frame_id, placed["copy.2"].borrowed_from) == (1, "exp")
    # No operand with a frame: its user, log.
    assert (placed["dot"].op_name, placed["dot"].borrowed_from) == ("jit(f)/log", "log")
    # A user that is a fusion answers with the instruction reading that parameter inside it
    # (the negate has no frame, so its reader is none: the fusion's own metadata is used).
    assert (placed["mul"].frame_id, placed["mul"].borrowed_from) == (4, "fusion")
    # Nobody around has a frame: still XLA's.
    assert placed["lonely"].created_by_xla and placed["lonely"].borrowed_from is None
    fused = hlo.computation("fused")
    negate = fused.instruction("neg")
    # Inside a fusion: the neighbour (its user, the add) first...
    assert rule.of(fused, negate, placed["fusion"]).borrowed_from == "add"


def test_a_fused_instruction_with_no_neighbour_takes_the_fusion_s() -> None:
    hlo = parse_module(MODULE.replace(', metadata={op_name="jit(f)/add" stack_frame_id=3}', ""))
    rule = NeighbourMetadata(hlo)
    fusion = rule.of(hlo.entry, hlo.entry.instruction("fusion"))
    negate = rule.of(hlo.computation("fused"), hlo.computation("fused").instruction("neg"), fusion)
    assert (negate.frame_id, negate.op_name) == (4, "jit(f)/sub")
    # The reader of parameter 1 is now gone: mul takes the fusion's own metadata.
    assert rule.of(hlo.entry, hlo.entry.instruction("mul")).borrowed_from == "fusion"
