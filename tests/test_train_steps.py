"""Real training steps (flax Linen, flax NNX, Equinox with optax) built with ``from:``, no adapter.

Each runs ``stages``, ``cost``, ``snapshot`` and ``bench --cold-runs 1`` through the CLI, and
its FLOPs and memory must equal what plain JAX reports for the same arguments, compiled here
the way each library's users compile them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
import yaml
from flax import nnx

from conftest import SAMPLES, sample

BATCH, FEATURES = 8, 16
BENCH = ("--cold-runs", "1", "--runs", "3", "--warmup", "1", "--time-budget", "0.01")


def _module(name: str) -> Any:
    """The sample imported as jaxinspect imports it (by path), so classes are the same."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _batch() -> tuple[jax.Array, jax.Array]:
    return jnp.zeros((BATCH, FEATURES)), jnp.zeros((BATCH,), jnp.int32)


def _filter_jit_figures(function: Callable[..., Any], *args: Any) -> dict[str, float]:
    """Plain ``jax.jit`` with equinox.filter_jit's split: arrays traced, everything else static."""
    dynamic, static = eqx.partition(args, eqx.is_array)

    def call(dynamic: Any) -> Any:
        return eqx.filter(function(*eqx.combine(dynamic, static)), eqx.is_array)

    return _figures(jax.jit(call).lower(dynamic).compile())


def _figures(compiled: Any) -> dict[str, float]:
    memory = compiled.memory_analysis()
    return {
        "flops": compiled.cost_analysis()["flops"],
        "argument_bytes": memory.argument_size_in_bytes,
        "output_bytes": memory.output_size_in_bytes,
        "temp_bytes": memory.temp_size_in_bytes,
    }


def flax_reference() -> dict[str, float]:
    # The sample's own jax.jit: it traces TrainState.step (a Python 0) as a weak int32[].
    module = _module("train_flax")
    return _figures(module.train_step.lower(module.init_state(), *_batch()).compile())


def equinox_reference() -> dict[str, float]:
    module = _module("train_equinox")
    state = module.init_opt_state()
    return _filter_jit_figures(module.train_step, module.make_model(), state, *_batch())


def nnx_reference() -> dict[str, float]:
    # nnx.jit in tree mode returns exactly the state the step wrote, as jaxinspect does.
    module = _module("train_nnx")
    jitted = nnx.jit(module.train_step, graph=False)
    model, optimizer = module.make_model(), module.make_optimizer()
    return _figures(jitted.lower(model, optimizer, *_batch()).compile())


def nnx_forward_reference() -> dict[str, float]:
    module = _module("train_nnx")
    jitted = nnx.jit(module.forward, graph=False)
    return _figures(jitted.lower(module.make_model(), _batch()[0]).compile())


STEPS = {
    "flax-linen": ("train_flax.py:train_step", "train_flax.yaml", flax_reference),
    "flax-linen-all-args": ("train_flax.py:train_step", "train_flax_args.yaml", flax_reference),
    "nnx": ("train_nnx.py:train_step", "train_nnx.yaml", nnx_reference),
    "nnx-forward": ("train_nnx.py:forward", "train_nnx_forward.yaml", nnx_forward_reference),
    "equinox": ("train_equinox.py:train_step", "train_equinox.yaml", equinox_reference),
}


def _stages(run_cli: Any, target: str, spec: str) -> dict[str, Any]:
    result = run_cli("stages", sample(target), "--shapes", sample(spec), "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", list(STEPS))
def test_stages_figures_equal_plain_jax(run_cli, name):
    target, spec, reference = STEPS[name]
    doc = _stages(run_cli, target, spec)
    expected = reference()
    memory = doc["memory"]
    got = {
        "flops": doc["cost"]["flops"],
        "argument_bytes": memory["argument_bytes"],
        "output_bytes": memory["output_bytes"],
        "temp_bytes": memory["temp_bytes"],
    }
    assert got == expected
    assert doc["timings"]["cached_call_s"] > 0  # it ran, on seeded inputs


def test_function_fields_and_python_numbers_are_static(run_cli):
    args = {a["path"]: a for a in _stages(run_cli, *STEPS["equinox"][:2])["args"]}
    assert args["model.activation"]["kind"] == "static"
    assert args["model.activation"]["value"] == "jax._src.nn.functions.gelu"
    assert args["model.layers[0].weight"]["shape"] == [32, FEATURES]
    flax_args = {a["path"]: a for a in _stages(run_cli, *STEPS["flax-linen"][:2])["args"]}
    assert flax_args["state.params['Dense_0']['kernel']"]["shape"] == [FEATURES, 32]
    # Issue #26 finding 14: the sample's jax.jit traces the Python number; so does jaxinspect.
    step = flax_args["state.step"]
    assert (step["kind"], step["dtype"], step["shape"], step["weak_type"]) == (
        "array",
        "int32",
        [],
        True,
    )


def test_python_numbers_follow_the_spec_key(run_cli, tmp_path):
    """``python_numbers: static`` keeps TrainState.step a constant (as before #26)."""
    spec = yaml.safe_load((SAMPLES / "train_flax.yaml").read_text())
    spec["args"]["state"]["from"] = sample(spec["args"]["state"]["from"])
    for key, kind in (("static", "static"), ("traced", "array")):
        spec["python_numbers"] = key
        path = tmp_path / f"{key}.yaml"
        path.write_text(yaml.safe_dump(spec))
        result = run_cli(
            "stages", sample("train_flax.py:train_step"), "--shapes", path, "--format", "json"
        )
        assert result.exit_code == 0, result.stderr
        args = {a["path"]: a for a in json.loads(result.stdout)["args"]}
        assert args["state.step"]["kind"] == kind
    spec["python_numbers"] = "sometimes"
    path.write_text(yaml.safe_dump(spec))
    bad = run_cli("stages", sample("train_flax.py:train_step"), "--shapes", path)
    assert bad.exit_code == 2 and "python_numbers: expected `traced`" in bad.stderr


def test_nnx_updates_are_outputs_not_dead_code(run_cli):
    doc = _stages(run_cli, *STEPS["nnx-forward"][:2])
    hlo = doc["stages"]["hlo"]["text"]
    # The forward pass wrote the batch statistics: they are outputs of the program.
    root = next(line for line in hlo.splitlines() if "ROOT" in line and "tuple" in line)
    assert root.count("f32[32]") >= 2


@pytest.mark.parametrize(
    ("target", "arg", "reference"),
    [
        ("train_equinox.py:model", "x=f32[16]", "equinox"),
        ("train_nnx.py:model", "x=f32[8,16]", "nnx"),
    ],
)
def test_a_module_instance_is_a_target_with_its_arrays_as_arguments(
    run_cli, target, arg, reference
):
    result = run_cli("stages", sample(target), "--arg", arg, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert any(a["path"].startswith("self.") and a["kind"] == "array" for a in doc["args"])
    if reference == "equinox":
        model = _module("train_equinox").model
        expected = _filter_jit_figures(lambda m, x: m(x), model, jnp.zeros(FEATURES))
    else:
        model = _module("train_nnx").model
        jitted = nnx.jit(lambda m, x: m(x), graph=False)
        expected = _figures(jitted.lower(model, _batch()[0]).compile())
    assert doc["cost"]["flops"] == expected["flops"]
    assert doc["memory"]["argument_bytes"] == expected["argument_bytes"]
    assert doc["memory"]["output_bytes"] == expected["output_bytes"]


@pytest.mark.parametrize("name", ["flax-linen", "nnx", "equinox"])
def test_cost_snapshot_and_bench_run_on_the_train_step(run_cli, tmp_path: Path, name):
    target, spec, reference = STEPS[name]
    expected = reference()
    common = (sample(target), "--shapes", sample(spec))

    cost = run_cli("cost", *common, "--format", "json")
    assert cost.exit_code == 0, cost.stderr
    cost_doc = json.loads(cost.stdout)
    assert cost_doc["memory"]["argument_bytes"] == expected["argument_bytes"]

    snapshot = run_cli("snapshot", *common, "-o", tmp_path / "snap")
    assert snapshot.exit_code == 0, snapshot.stderr
    summary = json.loads((tmp_path / "snap" / "summary.json").read_text())
    assert summary["cost"]["flops"] == expected["flops"]
    assert summary["memory"]["argument_bytes"] == expected["argument_bytes"]
    assert summary["memory"]["output_bytes"] == expected["output_bytes"]

    bench = run_cli("bench", *common, *BENCH, "--format", "json")
    assert bench.exit_code == 0, bench.stderr
    bench_doc = json.loads(bench.stdout)
    assert bench_doc["bench"]["input_bytes"] == expected["argument_bytes"]
    assert len(bench_doc["bench"]["cold"]["compile"]["samples_s"]) == 1  # the fresh process ran
    assert bench_doc["bench"]["cached"]["median_s"] > 0


def test_donating_a_state_built_by_a_factory_runs_with_timings(run_cli, tmp_path: Path):
    spec = tmp_path / "donate.yaml"
    spec.write_text(
        f"args:\n  state: {{from: {sample('train_flax.py')}:init_state}}\n"
        "  x: f32[8,16]\n  labels: i32[8]\ndonate: [state]\n"
    )
    result = run_cli(
        "stages", sample("train_flax.py:train_step"), "--shapes", spec, "--format", "json"
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["memory"]["donated"] == ["state"]
    aliased = {a["argument"] for a in doc["memory"]["input_output_aliases"]}
    assert "state.params['Dense_0']['kernel']" in aliased  # the new params reuse the old buffers
    assert doc["timings"]["cached_call_s"] > 0


def test_numbers_inside_modules_stay_static_under_jax_jit():
    """The rule's unit: numbers outside modules are traced, inside Equinox/NNX ones static."""
    from jaxinspect.inputs.numbers import is_module, number_mask, traces_numbers
    from jaxinspect.inputs.spec import Spec

    layer = eqx.nn.Dropout(0.5)  # its probability is a Python float field
    tree = {"step": 0, "lr": 0.1, "flag": True, "layer": layer, "w": jnp.zeros(2)}
    leaves = jax.tree_util.tree_leaves(tree)
    mask = dict(zip(map(id, leaves), number_mask(tree), strict=True))
    assert mask[id(tree["step"])] and mask[id(tree["lr"])]
    assert not mask[id(tree["flag"])] and not mask[id(tree["w"])]
    assert not mask[id(layer.p)]  # inside the module
    assert is_module(layer) and is_module(_module("train_nnx").make_model())
    spec = Spec(source="t", args=())
    assert traces_numbers(_module("train_flax").train_step, spec)  # @jax.jit
    assert not traces_numbers(_module("train_equinox").train_step, spec)  # @eqx.filter_jit
    assert not traces_numbers(lambda x: x, spec)  # a plain function: as before
