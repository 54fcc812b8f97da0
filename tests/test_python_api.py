"""The Python API: ``jaxinspect.inspect``, ``Inspection``, ``jaxinspect.diff`` on real JAX.

The examples of docs/python.md run here too (``test_docs_python_examples_run``).
"""

from __future__ import annotations

import html
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jsonschema
import pytest

import jaxinspect
from conftest import ROOT, SAMPLES
from jaxinspect.errors import SpecError, StageError, UsageError

SCHEMAS = ROOT / "jaxinspect" / "schemas"


def _schema(name: str) -> Any:
    return json.loads((SCHEMAS / name).read_text())


def _masked(document: dict[str, Any]) -> dict[str, Any]:
    """The document without what differs from run to run: the timings."""
    out = dict(document)
    out.pop("timings")
    return out


def test_import_jaxinspect_imports_no_jax_until_the_api_is_called() -> None:
    code = (
        "import sys\nimport jaxinspect\n"
        "print('IMPORT', 'jax' in sys.modules)\n"
        "print(jaxinspect.inspect.__name__, jaxinspect.diff.__name__)\n"
        "print('READ', 'jax' in sys.modules)\n"
    )
    assert _python("-c", code).split() == ["IMPORT", "False", "inspect", "diff", "READ", "False"]


def test_unknown_attribute_of_the_package_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'inspekt'"):
        _ = jaxinspect.inspekt


#: A notebook cell's worth: the API's JSON and texts of simple.py:scale_shift for f32[1000].
_API_SCRIPT = """
import json, sys
import jax, jax.numpy as jnp
import jaxinspect, simple
inspection = jaxinspect.inspect(simple.scale_shift, jax.ShapeDtypeStruct((1000,), jnp.float32))
texts = {name: getattr(inspection, name) for name in ("jaxpr", "stablehlo", "hlo")}
json.dump({"document": json.loads(inspection.to_json()), "texts": texts}, sys.stdout)
"""


#: The ``jaxinspect`` command beside this Python.
_CLI = str(Path(sys.executable).parent / "jaxinspect")


def _python(*argv: str) -> str:
    """stdout of ``python ARGV`` with sample_programs importable (``simple:scale_shift``)."""
    # In processes of their own: in the test's, the HLO's frame tables would hold its frames.
    proc = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(SAMPLES)])},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_json_and_texts_equal_the_clis_for_the_same_function_and_shapes(tmp_path: Path) -> None:
    script = tmp_path / "cell.py"
    script.write_text(_API_SCRIPT)
    api = json.loads(_python(str(script)))
    document = api["document"]
    jsonschema.validate(document, _schema("stages.schema.json"))
    spec = str(SAMPLES / "simple.yaml")
    cli = json.loads(_python(_CLI, "stages", "simple:scale_shift", "--shapes", spec, "-f", "json"))
    assert _masked(document) == _masked(cli)
    for name in ("jaxpr", "stablehlo", "hlo"):
        assert api["texts"][name] == cli["stages"][name]["text"]


def test_arrays_shape_dtype_structs_and_pytrees_compile_the_same_program() -> None:
    def f(params: dict[str, Any], x: Any) -> Any:
        return jnp.tanh(x @ params["w"] + params["b"])

    arrays = {"w": jnp.ones((8, 4)), "b": jnp.zeros((4,))}
    shapes = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), arrays)
    x = jnp.ones((2, 8))
    calls = [(arrays, x), (shapes, jax.ShapeDtypeStruct((2, 8), jnp.float32))]
    # From one line: the HLO's source locations hold the caller's line.
    from_arrays, from_shapes = (jaxinspect.inspect(f, *call) for call in calls)
    assert from_arrays.jaxpr == from_shapes.jaxpr
    assert from_arrays.hlo == from_shapes.hlo
    assert "tanh" in from_arrays.jaxpr
    paths = [a.path for a in from_arrays.stages_report.args]
    assert paths == ["params['b']", "params['w']", "x"]
    assert from_arrays.cost.program.ops  # per-op cost of the one compilation
    assert from_arrays.memory is not None and from_arrays.memory.peak is not None


def test_keyword_arguments_and_static_values() -> None:
    def f(x: Any, y: Any, *, power: int, mesh: str = "") -> Any:
        return (x + y) ** power

    x = jnp.ones((3,))
    inspection = jaxinspect.inspect(f, x, kwargs={"y": x, "mesh": "m"}, static={"power": 3})
    kinds = {a.path: a.kind for a in inspection.stages_report.args}
    assert kinds["x"] == "array" and kinds["y"] == "array" and kinds["power"] == "static"
    assert "integer_pow[y=3]" in inspection.jaxpr


def test_non_array_leaves_are_static_as_jit_makes_them() -> None:
    def f(x: Any, config: dict[str, Any]) -> Any:
        return x * config["scale"] if config["kind"] == "scaled" else x

    inspection = jaxinspect.inspect(f, jnp.ones((3,)), {"kind": "scaled", "scale": 2.0})
    assert "mul" in inspection.jaxpr


def test_transforms_compose_innermost_first() -> None:
    def loss(x: Any) -> Any:
        return jnp.sum(jnp.sin(x))

    grad = jaxinspect.inspect(loss, jnp.ones((4,)), transform="grad", execute=False)
    assert grad.stages_report.composition == "jit(grad(loss, argnums=0))"
    assert "cos" in grad.jaxpr
    batched = jaxinspect.inspect(loss, jnp.ones((3, 4)), transform=["grad", "vmap"], execute=False)
    assert batched.stages_report.composition == "jit(vmap(grad(loss, argnums=0)))"


def test_a_mesh_compiles_for_its_devices() -> None:
    def total(x: Any) -> Any:
        return x.sum()

    x = jax.ShapeDtypeStruct((8, 4), jnp.float32)
    inspection = jaxinspect.inspect(total, x, mesh={"data": 2}, execute=False)
    assert len(inspection.stages_report.devices) == 2
    assert inspection.stages_report.mesh == (("data", 2),)
    assert {inspection, inspection} == {inspection}  # hashable: one compilation is itself


def test_an_equinox_module_has_its_arrays_traced() -> None:
    eqx = pytest.importorskip("equinox")
    model = eqx.nn.Linear(4, 3, key=jax.random.key(0))
    inspection = jaxinspect.inspect(model, jnp.ones((4,)))
    paths = [a.path for a in inspection.stages_report.args if a.kind == "array"]
    assert len(paths) == 3  # weight, bias and x: traced, not constants
    assert "dot_general" in inspection.jaxpr


def test_a_flax_apply_with_its_params_pytree() -> None:
    nn = pytest.importorskip("flax.linen")
    model = nn.Dense(5)
    x = jnp.ones((2, 3))
    params = model.init(jax.random.key(0), x)
    inspection = jaxinspect.inspect(model.apply, params, x)
    assert "dot_general" in inspection.jaxpr
    assert inspection.cost.program.ops


def test_wrong_arguments_raise_spec_errors_with_the_clis_message() -> None:
    def f(x: Any, y: Any) -> Any:
        return x + y

    with pytest.raises(SpecError) as missing:
        jaxinspect.inspect(f, jnp.ones((3,)))
    assert missing.value.message.startswith("jaxinspect.inspect: args lists 1 argument but ")
    assert "also needs `y`" in missing.value.message
    with pytest.raises(SpecError, match="given positionally and by name"):
        jaxinspect.inspect(f, jnp.ones((3,)), kwargs={"x": jnp.ones((3,))})
    with pytest.raises(SpecError, match="mesh.data: the size must be a positive integer"):
        jaxinspect.inspect(f, jnp.ones((3,)), jnp.ones((3,)), mesh={"data": "two"})


def test_tool_errors_are_the_projects_error_types() -> None:
    def f(x: Any) -> Any:
        return x

    def broken(x: Any) -> Any:
        raise ValueError("nope")

    with pytest.raises(UsageError, match="transform"):
        jaxinspect.inspect(f, jnp.ones((3,)), transform="gard")
    with pytest.raises(UsageError, match="h1000"):
        jaxinspect.inspect(f, jnp.ones((3,)), device="h1000")
    with pytest.raises(StageError, match="nope"):
        jaxinspect.inspect(broken, jnp.ones((3,)))


def test_inspection_is_immutable_and_measure_returns_a_new_report() -> None:
    def f(x: Any) -> Any:
        return jnp.sin(x) @ x.T

    inspection = jaxinspect.inspect(f, jnp.ones((16, 16)))
    with pytest.raises(AttributeError):
        inspection.data = None  # type: ignore[misc, assignment]
    measured = inspection.measure(runs=3)
    assert measured.measured is not None
    assert len(measured.measured.op_seconds) == len(measured.program.ops)
    assert inspection.cost.measured is None


def test_passes_from_the_same_compilation_or_one_more() -> None:
    def f(x: Any) -> Any:
        return jnp.exp(x) * 2 + 1

    x = jnp.ones((8,))
    dumped = jaxinspect.inspect(f, x, passes=True)
    assert dumped.passes() is dumped.data.passes
    again = jaxinspect.inspect(f, x).passes()
    assert [s.name for s in again.steps or ()] == [s.name for s in dumped.passes().steps or ()]
    assert again.steps


def test_inputs_factory_times_the_arrays_passed_not_random_ones() -> None:
    seen: list[float] = []

    def f(x: Any) -> Any:
        jax.debug.callback(lambda v: seen.append(float(v[0])), x)
        return x * 2

    given = jnp.full((4,), 7.0)
    mine = jaxinspect.inspect(f, given, inputs="factory")
    assert seen and set(seen) == {7.0}
    assert mine.timings.inputs is not None and mine.timings.inputs.source == "factory"
    seen.clear()
    drawn = jaxinspect.inspect(f, given)
    assert seen and 7.0 not in seen
    assert drawn.timings.inputs is not None and drawn.timings.inputs.random == ("x",)
    with pytest.raises(SpecError, match="inputs"):
        jaxinspect.inspect(f, given, inputs="mine")


def test_passes_time_profiles_the_one_compilation() -> None:
    def f(x: Any) -> Any:
        return jnp.tanh(x @ x.T).sum()

    x = jnp.ones((32, 32))
    timed = jaxinspect.inspect(f, x, passes_time=True, execute=False)
    times = timed.pass_times
    assert times is not None and times.steps
    assert [s.name for s in times.steps if s.depth == 0] == ["trace", "lower", "compile"]
    assert times.compile_s == timed.timings.compile_s
    assert times.top_pass is not None
    assert jaxinspect.inspect(f, x, execute=False).pass_times is None


def test_report_writes_the_html_report(tmp_path: Path) -> None:
    def f(x: Any) -> Any:
        return jnp.cos(x).sum()

    inspection = jaxinspect.inspect(f, jnp.ones((8,)))
    path = inspection.report(tmp_path / "f.html")
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert html.escape(inspection.target) in page
    assert "cosine" in page  # the stage texts are in it


def test_rich_and_pretty_print_the_console_tables() -> None:
    from rich.console import Console

    def f(x: Any) -> Any:
        return x * 2.0

    inspection = jaxinspect.inspect(f, jnp.ones((4,)))
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    console.print(inspection)
    text = console.export_text()
    assert "operations per stage" in text
    assert "loop-aware flops" in text
    printed: list[str] = []

    class Printer:
        def text(self, value: str) -> None:
            printed.append(value)

    inspection._repr_pretty_(Printer(), False)
    assert printed == [text]
    assert repr(inspection).startswith("<Inspection of test_python_api:")


def test_diff_of_two_versions() -> None:
    def v1(x: Any) -> Any:
        return x * 2.0

    def v2(x: Any) -> Any:
        return jnp.sin(x) * 2.0

    x = jnp.ones((4,))
    first = jaxinspect.inspect(v1, x)
    same = jaxinspect.diff(first, jaxinspect.inspect(v1, x))
    assert not same and not same.changed
    changed = jaxinspect.diff(first, jaxinspect.inspect(v2, x), labels=("v1", "v2"))
    assert changed and changed.changed
    document = json.loads(changed.to_json())
    jsonschema.validate(document, _schema("snapshot-diff.schema.json"))
    assert document["identical"] is False
    assert any(op["op"] == "sin" for op in document["ops"])
    from jaxinspect.api.inspection import plain_text

    shown = plain_text(changed)
    assert "+" in shown and "sine" in shown
    within = jaxinspect.diff(first, jaxinspect.inspect(v2, x), fail_on="flops>+1000%")
    assert within.changed and not within.verdict.failed  # changed, within the rule
    with pytest.raises(UsageError):
        jaxinspect.diff(first, first, fail_on="flops>>1")


def _python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in path.read_text().splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_docs_python_examples_run(tmp_path: Path) -> None:
    blocks = _python_blocks(ROOT / "docs" / "python.md")
    assert len(blocks) >= 6
    script = tmp_path / "examples.py"
    script.write_text("\n\n".join(blocks) + "\n")
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "True" in lines  # the static power, the diff of two versions ...
    expected = "jaxinspect.inspect: args lists 1 argument but __main__:add(x, y) also needs `y`"
    assert lines[-1] == expected  # the doc's last example, as its comment shows
