"""The report graph's folding and layout (htmlreport/folding.py, graph.py) and the source in
context (htmlreport/sources.py), on hand-written HLO and files: no JAX compile here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jaxinspect.htmlreport.folding import best_repeat
from jaxinspect.htmlreport.graph import entry_graph
from jaxinspect.htmlreport.sources import source_contexts, user_stacks
from jaxinspect.xla.hlotext import parse_module
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.sourcemap import parse_frame_table


def test_the_longest_tandem_repeat_is_found_with_the_shortest_period() -> None:
    assert best_repeat(list("abcabcabcx")) == (0, 3, 3)
    assert best_repeat(list("xyabcdabcdabcdz")) == (2, 4, 3)
    assert best_repeat(list("aaaaaa")) == (0, 1, 6)  # not (0, 2, 3) or (0, 3, 2)
    assert best_repeat(list("abab")) is None  # covers 4 < 6 instructions: not worth a group
    assert best_repeat(list("abcdefgh")) is None
    assert best_repeat([]) is None


def _layers_module(layers: int) -> str:
    """An entry computation of ``layers`` identical blocks (each: a parameter w_k, a
    ``dense`` name scope of two ops, then a tanh), made by function ``block`` of f.py."""
    lines = [
        "HloModule m, entry_computation_layout={()->f32[4]{0}}",
        "",
        "ENTRY %main (x: f32[4]) -> f32[4] {",
        '  %x = f32[4]{0} parameter(0), metadata={op_name="x"}',
    ]
    previous = "x"
    for k in range(layers):
        dense = 'op_name="jit(f)/dense/{}" stack_frame_id=2'
        lines += [
            f'  %w{k} = f32[4]{{0}} parameter({k + 1}), metadata={{op_name="w[{k}]"}}',
            f"  %mul{k} = f32[4]{{0}} multiply(f32[4]{{0}} %{previous}, f32[4]{{0}} %w{k}), "
            f"metadata={{{dense.format('mul')}}}",
            f"  %add{k} = f32[4]{{0}} add(f32[4]{{0}} %mul{k}, f32[4]{{0}} %w{k}), "
            f"metadata={{{dense.format('add')}}}",
            f"  %tanh{k} = f32[4]{{0}} tanh(f32[4]{{0}} %add{k}), "
            'metadata={op_name="jit(f)/tanh" stack_frame_id=2}',
        ]
        previous = f"tanh{k}"
    lines[-1] = lines[-1].replace(f"  %tanh{layers - 1}", f"  ROOT %tanh{layers - 1}")
    return "\n".join([*lines, "}", ""])


def test_identical_layers_fold_into_one_repeat_laid_out_once() -> None:
    hlo = parse_module(_layers_module(5))
    scopes = {x.name: ("f", "block") for x in hlo.entry.instructions if x.opcode != "parameter"}
    flops = {f"mul{k}": (None, 4.0 * (k + 1), 32.0) for k in range(5)}
    graph = entry_graph(hlo, flops, {}, "flops", scopes)
    kinds = [(g.kind, g.label, g.count) for g in graph.groups]
    assert kinds[:2] == [("root", "", 0), ("repeat", "block ×5", 5)]
    members = [g for g in graph.groups if g.kind == "member"]
    assert [g.label for g in members] == [f"block #{k}" for k in range(5)]
    # Each member: its name scope, `dense`, as a group of two ops with the parameters only
    # they read (its own weight; x for the first), then the tanh.
    n = len(graph.nodes)
    names = {i: node.name for i, node in enumerate(graph.nodes)}
    first = members[0].children
    assert [names[c] for c in first if c < n] == ["tanh0"]
    dense = graph.groups[next(c for c in first if c >= n) - n]
    assert (dense.kind, dense.label, [names[c] for c in dense.children]) == (
        "scope",
        "dense",
        ["x", "w0", "mul0", "add0"],
    )
    # x only feeds block #0, so that member differs; the other four share one layout.
    assert len({g.layout for g in members[1:]}) == 1 and members[0].layout != members[1].layout
    assert graph.groups[1].values == (0.0, 60.0, 160.0)  # sums of what is inside
    assert members[4].values == (0.0, 20.0, 32.0)


def test_a_fusion_opens_onto_one_body_per_distinct_fused_computation() -> None:
    fused = (
        "%fused_{k} (p0: f32[4], p1: f32[4]) -> f32[4] {{\n"
        "  %p0 = f32[4]{{0}} parameter(0)\n  %p1 = f32[4]{{0}} parameter(1)\n"
        "  %m = f32[4]{{0}} multiply(f32[4]{{0}} %p0, f32[4]{{0}} %p1)\n"
        "  ROOT %e = f32[4]{{0}} exponential(f32[4]{{0}} %m)\n}}\n\n"
    )
    text = (
        "HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n"
        + fused.format(k=0)
        + fused.format(k=1)
        + "ENTRY %main (x: f32[4]) -> f32[4] {\n"
        "  %x = f32[4]{0} parameter(0)\n"
        "  %f0 = f32[4]{0} fusion(f32[4]{0} %x, f32[4]{0} %x), kind=kLoop, calls=%fused_0\n"
        "  ROOT %f1 = f32[4]{0} fusion(f32[4]{0} %f0, f32[4]{0} %x), kind=kLoop, "
        "calls=%fused_1\n}\n"
    )
    graph = entry_graph(parse_module(text), {}, {}, "flops")
    nodes = {node.name: node for node in graph.nodes}
    assert nodes["f0"].body == nodes["f1"].body == 0 and nodes["x"].body is None
    (body,) = graph.bodies
    assert body.labels == ("param 0", "param 1", "multiply", "exponential")
    assert set(body.edges) == {(0, 2), (1, 2), (2, 3)}
    assert [row for row, _ in body.layout] == [0, 0, 1, 2]


_FRAMES = """FileNames
1 "{user}"
2 "/usr/lib/python3/site-packages/jax/_src/numpy.py"

FunctionNames
1 "step"
2 "block"
3 "dot"

FileLocations
1 {{file_name_id=1 function_name_id=1 line=3}}
2 {{file_name_id=1 function_name_id=2 line=6}}
3 {{file_name_id=2 function_name_id=3 line=99}}

StackFrames
1 {{file_location_id=1 parent_frame_id=0}}
2 {{file_location_id=2 parent_frame_id=2}}
3 {{file_location_id=3 parent_frame_id=3}}
"""


def test_the_source_in_context_is_read_relative_to_here_with_the_user_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file = tmp_path / "model.py"
    user_file.write_text("".join(f"line {n}\n" for n in range(1, 8)), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    text = (
        "HloModule m, entry_computation_layout={()->f32[4]{0}}\n\n"
        "ENTRY %main (x: f32[4]) -> f32[4] {\n"
        "  ROOT %x = f32[4]{0} parameter(0), metadata={stack_frame_id=3}\n}\n\n"
        + _FRAMES.format(user=user_file)
    )
    frames = parse_frame_table(text)
    stacks = user_stacks(parse_module(text), frames, UserCode((str(tmp_path) + "/",)))
    # JAX's own frame left out; the user's, innermost first, named relative to here.
    assert stacks.labels == {"x": ("model.py:6 block", "model.py:3 step")}
    assert stacks.scopes(parse_module(text).entry.instructions) == {"x": ("step", "block")}
    contexts = source_contexts(stacks.frames_used())
    six = contexts["model.py:6"]
    assert (six.first, six.line, six.lines) == (4, 6, ("line 4", "line 5", "line 6", "line 7"))
    assert contexts["model.py:3"].lines == ("line 1", "line 2", "line 3", "line 4", "line 5")
    os.remove(user_file)  # a file gone by now: no context, no error
    assert source_contexts(stacks.frames_used()) == {}


def test_an_op_without_a_scope_does_not_split_the_run_around_it() -> None:
    from jaxinspect.htmlreport.folding import Folder, Ref

    # f's loss_of, an op XLA made (no frames), loss_of again, then two of f's own ops.
    scopes = [
        ("f", "f.<locals>.loss_of"),
        ("f", "f.<locals>.loss_of"),
        (),
        ("f", "f.<locals>.loss_of"),
        ("f",),
        ("f",),
        (),
    ]
    folder = Folder(list(range(len(scopes))), scopes)  # all tokens differ: no repeats
    folder.fold_root(list(range(len(scopes))))
    root, loss = folder.groups
    assert root.children == [Ref(1), 4, 5, 6]  # one f-wide scope makes no group
    assert (loss.label, loss.kind, loss.children) == ("loss_of", "scope", [0, 1, 2, 3])
