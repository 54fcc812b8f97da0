"""The mesh and sharding grammar of the spec: long and short forms, and the errors."""

from __future__ import annotations

import pytest

from jaxinspect.errors import SpecError
from jaxinspect.inputs.leaves import parse_leaf
from jaxinspect.inputs.shardspec import format_sharding, parse_mesh_option
from jaxinspect.inputs.spec import (
    check_placement,
    parse_arg_options,
    parse_spec_text,
    with_placement,
)


def test_long_and_short_forms_give_the_same_leaf() -> None:
    spec = parse_spec_text(
        "mesh: {data: 4, model: 2}\n"
        "args:\n"
        "  a: {shape: [256, 64], dtype: float32, sharding: [[data, model], null]}\n"
        "  b: f32[256@(data,model),64]\n"
        "  c: {shape: [8, 16], dtype: bf16, sharding: [null, model]}\n"
        "  d: bf16[8,16@model]\n",
        source="s.yaml",
    )
    leaves = dict(spec.args)
    assert leaves["a"] == leaves["b"]
    assert leaves["a"].sharding == (("data", "model"),)  # the unsplit last dim is implied
    assert leaves["c"] == leaves["d"]
    assert leaves["c"].sharding == ((), ("model",))
    assert spec.mesh is not None and spec.mesh.axes == (("data", 4), ("model", 2))
    assert spec.mesh.size == 8


def test_a_sharded_leaf_prints_as_jax_prints_it() -> None:
    leaf = parse_leaf("f32[256@(data,model),64@x,3]", where="x")
    assert str(leaf) == "float32[256@(data,model),64@x,3]"
    assert format_sharding(leaf.sharding or ()) == "P(('data', 'model'), 'x')"


def test_devices_topology_and_out_shardings() -> None:
    spec = parse_spec_text(
        "mesh: {data: 8}\ndevices: 8\nargs: {x: 'f32[64@data,4]'}\nout_shardings: [[data], null]\n",
        source="s.yaml",
    )
    assert spec.devices == 8
    assert spec.out_shardings == ((("data",),), None)
    topo = parse_spec_text("topology: v5e:2x2\nargs: {x: 'f32[4]'}", source="t.yaml")
    assert topo.topology == "v5e:2x2"


def test_command_line_mesh_meets_arg_leaves() -> None:
    spec = parse_arg_options(["x=f32[64@data,8]"])
    placed = with_placement(spec, mesh=parse_mesh_option("data=4"), devices=4)
    assert placed.mesh is not None and placed.mesh.axes == (("data", 4),)
    assert placed.devices == 4
    # --devices replaces a spec's topology, and the other way round.
    topo = with_placement(placed, topology="v5e:2x2")
    assert topo.devices is None and topo.topology == "v5e:2x2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("args: {x: 'f32[8@data]'}", "s.yaml: args.x.sharding: a sharding needs a mesh"),
        (
            "mesh: {data: 4}\nargs: {x: 'f32[8@dta]'}",
            "args.x.sharding: axis `dta` is not in the mesh (data=4) (did you mean data?)",
        ),
        (
            "mesh: {data: 3}\nargs: {x: 'f32[8@data]'}",
            "args.x.sharding: dimension 0 of size 8 does not divide by 3 (data=3)",
        ),
        (
            "mesh: {a: 2, b: 2}\nargs: {x: 'f32[8@(a,b),6@a]'}",
            "args.x.sharding: axis `a` shards two dimensions",
        ),
        (
            "mesh: {data: 2}\nargs: {p: {w: {shape: [4], dtype: f32, sharding: [null, data]}}}",
            "args.p.w.sharding: the sharding has 2 entries for a leaf of rank 1",
        ),
        ("mesh: {data: 2}\nargs: {x: {shape: [4], dtype: f32, sharding: [3]}}", "sharding[0]"),
        ("mesh: [data, 4]\nargs: {x: 'f32[4]'}", "mesh: expected a mapping of axis names"),
        ("mesh: {data: two}\nargs: {x: 'f32[4]'}", "mesh.data: the size must be a positive"),
        ("devices: 0\nargs: {x: 'f32[4]'}", "devices: expected a positive number of devices"),
        ("topology: v5e\nargs: {x: 'f32[4]'}", "topology: expected a TPU slice name"),
        ("devices: 4\ntopology: v5e:2x2\nargs: {x: 'f32[4]'}", "give one"),
        ("out_shardings: [[data]]\nargs: {x: 'f32[4]'}", "out_shardings[0]: a sharding needs"),
        ("out_shardings: {data: 1}\nargs: {x: 'f32[4]'}", "one entry per output leaf"),
        ("shardings: {x: [data]}\nargs: {x: 'f32[4]'}", "write `sharding:` on each leaf"),
        ("mesh: {data: 2}\nargs: {x: 'f32[4@(data]'}", "unbalanced '('"),
    ],
)
def test_placement_errors_name_the_key(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        # A sharding without a mesh parses (--mesh may bring one) and fails the full check.
        check_placement(parse_spec_text(text, source="s.yaml"))
    assert message in str(info.value)


def test_mesh_option_errors() -> None:
    with pytest.raises(SpecError, match="expected NAME=SIZE"):
        parse_mesh_option("data:4")
    with pytest.raises(SpecError, match="given twice"):
        parse_mesh_option("data=2,data=2")
