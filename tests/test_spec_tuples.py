"""Issue #26 finding 5: ``jaxinspect spec`` writes tuples in a form that loads back as tuples.

A pytree's structure tells a tuple from a list, so diffrax's ``y0=(prey, predator)`` printed as
a YAML list failed (``pytree structure error … list … tuple``). The grammar has a tuple form,
``{tuple: [a, b]}``, and every sample's factory round-trips through ``jaxinspect spec``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from jaxinspect.errors import SpecError
from jaxinspect.inputs.spec import ListNode, parse_spec_document

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_programs"

#: The finding's minimal program: ``cond`` needs both branches to return the same structure.
LOTKA = """
import jax
import jax.numpy as jnp


def solve(y0, ts):
    prey, predator = y0
    swapped = jax.lax.cond(ts[0] > 0, lambda y: y, lambda y: (y[0], y[1]), y0)
    return swapped[0] * prey + predator * ts


def example_args():
    return {"y0": (jnp.float32(10.0), jnp.float32(5.0)), "ts": jnp.linspace(0.0, 1.0, 4)}
"""


def test_the_tuple_form_loads_as_a_tuple() -> None:
    spec = parse_spec_document({"args": {"y0": {"tuple": ["f32[]", "f32[]"]}}}, source="t")
    node = dict(spec.args)["y0"]
    assert isinstance(node, ListNode) and node.is_tuple and len(node.items) == 2
    assert node.pack([1, 2]) == (1, 2)
    plain = dict(parse_spec_document({"args": {"y0": ["f32[]"]}}, source="t").args)["y0"]
    assert isinstance(plain, ListNode) and plain.pack([1]) == [1]
    # With another key beside it, `tuple` is an ordinary dict entry.
    both = dict(
        parse_spec_document({"args": {"d": {"tuple": "f32[]", "n": "i32[]"}}}, source="t").args
    )
    assert not isinstance(both["d"], ListNode)
    with pytest.raises(SpecError, match=r"args.y0.tuple: a tuple is written \{tuple: \[item"):
        parse_spec_document({"args": {"y0": {"tuple": "f32[]"}}}, source="t")


def test_spec_prints_a_tuple_that_runs(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "lotka.py").write_text(LOTKA)
    out = tmp_path / "lotka.yaml"
    target = f"{tmp_path}/lotka.py:solve"
    written = run_cli("spec", target, "--from", f"{tmp_path}/lotka.py:example_args", "-o", out)
    assert written.exit_code == 0, written.stderr
    document = yaml.safe_load(out.read_text())
    assert document["args"]["y0"] == {"tuple": ["f32[]", "f32[]"]}
    ran = run_cli("stages", target, "--shapes", out, "--no-execute", "--format", "json")
    assert ran.exit_code == 0, ran.stderr
    # The control: the list the old spec printed fails on the structure, as the finding says.
    document["args"]["y0"] = ["f32[]", "f32[]"]
    out.write_text(yaml.safe_dump(document))
    failed = run_cli("stages", target, "--shapes", out, "--no-execute")
    assert failed.exit_code == 3 and "tuple" in failed.stderr


#: A target that writes the kinds of the pytree nodes it receives; its factory wraps a sample's.
ROUND_TRIP = """
import importlib.util
import json
from pathlib import Path

import jax

_spec = importlib.util.spec_from_file_location("sample_{stem}", {sample!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)


def kinds(tree):
    def walk(node):
        data = node.node_data()
        name = None if data is None else data[0].__qualname__
        return [name, [walk(child) for child in node.children()]]

    return walk(jax.tree_util.tree_structure(tree))


def args():
    return {{"value": _module.{factory}()}}


def target(value):
    Path({out!r}).write_text(json.dumps(kinds(value)))
    return jax.numpy.float32(0.0)
"""

SAMPLE_FACTORIES = [
    ("train_flax.py", "init_state"),
    ("train_flax.py", "example_args"),
    ("train_equinox.py", "make_model"),
    ("train_equinox.py", "init_opt_state"),
    ("train_equinox.py", "example_args"),
    ("train_nnx.py", "make_model"),
    ("train_nnx.py", "make_optimizer"),
]


@pytest.mark.parametrize(("sample", "factory"), SAMPLE_FACTORIES)
def test_every_sample_factory_round_trips(
    run_cli: Any, tmp_path: Path, sample: str, factory: str
) -> None:
    """``spec --from`` → load → the target receives the factory's pytree structure."""
    seen = tmp_path / "seen.json"
    source = ROUND_TRIP.format(
        stem=Path(sample).stem, sample=str(SAMPLES / sample), factory=factory, out=str(seen)
    )
    (tmp_path / "wrap.py").write_text(source)
    target, spec = f"{tmp_path}/wrap.py:target", tmp_path / "spec.yaml"
    written = run_cli("spec", target, "--from", f"{tmp_path}/wrap.py:args", "-o", spec)
    assert written.exit_code == 0, written.stderr
    ran = run_cli("stages", target, "--shapes", spec, "--no-execute", "--format", "json")
    assert ran.exit_code == 0, ran.stderr
    namespace: dict[str, Any] = {"__name__": "expected"}
    exec(compile(source, "wrap.py", "exec"), namespace)  # noqa: S102  (the same module, here)
    assert json.loads(seen.read_text()) == namespace["kinds"](namespace["args"]()["value"])
