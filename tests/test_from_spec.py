"""``from:`` nodes: grammar, abstract evaluation, errors, ``jaxinspect spec`` and the fixture."""

from __future__ import annotations

import json
import resource
import textwrap
from pathlib import Path

import jax  # noqa: F401  (pytester's in-process runs unload what they import; jaxlib can't reload)
import pytest
import yaml

from conftest import sample
from jaxinspect.errors import SpecError
from jaxinspect.inputs.fromnode import FromNode
from jaxinspect.inputs.spec import parse_spec_text

pytest_plugins = ["pytester"]

FACTORIES = """
import dataclasses
import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Layer:
    w: jax.Array
    b: jax.Array
    act: object = dataclasses.field(default=jnp.tanh)  # a function-valued leaf: static
    scale: int = 2  # a Python number in the pytree: static


def make_layer(n=4):
    return Layer(jnp.ones((n, n)), jnp.zeros(n))


def apply(layer, x):
    return layer.act(x @ layer.w + layer.b) * layer.scale


def example_args(n=4, batch=3):
    return {"layer": make_layer(n), "x": jnp.ones((batch, n))}


def as_tuple(n=4):
    return (make_layer(n), jax.ShapeDtypeStruct((2, n), jnp.float32))


def huge():
    # 25e9 float32 = 100 GB: fine abstractly, fatal if anything allocated it.
    return jax.random.normal(jax.random.key(0), (50_000, 500_000))


def total(w):
    return w.sum()


def broken(n=4):
    return jnp.ones(n) @ jnp.ones(n + 1)


def reads_values():
    x = jnp.ones(3)
    return x if float(x.sum()) > 0 else -x


def not_args():
    return jnp.ones(3)


@dataclasses.dataclass  # eq=True without frozen=True: no __hash__
class Scaler:
    factor: float = 2.0

    def __call__(self, x):
        return x * self.factor


scaler = Scaler()
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "fac.py").write_text(FACTORIES)
    return tmp_path


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_from_nodes_parse_anywhere_under_args_with_kwargs_path_and_the_file_folder():
    spec = parse_spec_text(
        "args:\n"
        "  layer: {from: fac.py:make_layer, kwargs: {n: 8}}\n"
        "  batch: {x: 'f32[2]', extra: [{from: pkg.mod:make, path: [a, 0]}]}\n",
        source="s.yaml",
        folder="/specs",
    )
    layer = spec.args[0][1]
    assert layer == FromNode("fac.py:make_layer", (("n", 8),), folder="/specs")
    assert layer.where == "s.yaml: args.layer"
    nested = spec.args[1][1].items[1][1].items[0]
    assert (nested.ref, nested.path, nested.where) == (
        "pkg.mod:make",
        ("a", 0),
        "s.yaml: args.batch.extra[0]",
    )
    assert spec.has_factories and spec.input_bytes == 8  # only the YAML leaf is known here
    whole = parse_spec_text("args: {from: fac.py:example_args}", source="s.yaml")
    assert whole.args == () and whole.args_from is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("args: {x: {from: 3}}", "s.yaml: args.x.from: expected FILE.py:NAME"),
        ("args: {x: {from: fac.py}}", "s.yaml: args.x.from: 'fac.py': expected FILE.py:NAME"),
        ("args: {x: {from: fac.py:f, kwarg: {}}}", "unknown key `kwarg` in a `from:` node"),
        ("args: {x: {from: fac.py:f, kwargs: [1]}}", "s.yaml: args.x.kwargs: expected a mapping"),
        ("args: {x: {from: fac.py:f, path: [1.5]}}", "s.yaml: args.x.path: 1.5 is not a key"),
    ],
)
def test_malformed_from_nodes_name_the_key(text, message):
    with pytest.raises(SpecError) as info:
        parse_spec_text(text, source="s.yaml")
    assert message in info.value.message


def test_stages_traces_array_leaves_and_keeps_functions_and_numbers_static(run_cli, project):
    spec = write(project, "s.yaml", "args:\n  layer: {from: fac.py:make_layer}\n  x: f32[3,4]\n")
    result = run_cli("stages", f"{project}/fac.py:apply", "--shapes", spec, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    args = {a["path"]: a for a in doc["args"]}
    assert args["layer.w"]["shape"] == [4, 4] and args["layer.b"]["kind"] == "array"
    assert args["layer.act"] == {"kind": "static", "path": "layer.act", "value": "jax.numpy.tanh"}
    assert args["layer.scale"]["value"] == "2"
    assert doc["memory"]["argument_bytes"] == 4 * (16 + 4 + 12)  # w, b, x: nothing baked in
    jaxpr = doc["stages"]["jaxpr"]["text"]
    assert "a:f32[4,4] b:f32[4] c:f32[3,4]" in jaxpr and "mul" in jaxpr
    assert doc["timings"]["cached_call_s"] > 0  # executed with seeded arrays for the leaves


def test_a_factory_of_all_arguments_by_name_or_in_order(run_cli, project):
    for text in (
        "args: {from: fac.py:example_args}",
        "args: {from: fac.py:as_tuple, kwargs: {n: 4}}",
    ):
        spec = write(project, "s.yaml", text)
        out = run_cli("stages", f"{project}/fac.py:apply", "--shapes", spec, "--format", "json")
        assert out.exit_code == 0, out.stderr
        doc = json.loads(out.stdout)
        paths = [a["path"] for a in doc["args"]]
        assert paths[:2] == ["layer.w", "layer.b"] and paths[-1] == "x", paths


def test_a_factory_that_would_need_100_gb_is_evaluated_without_allocating(run_cli, project):
    spec = write(project, "s.yaml", "args:\n  w: {from: fac.py:huge}\n")
    result = run_cli("jaxpr", f"{project}/fac.py:total", "--shapes", spec)
    assert result.exit_code == 0, result.stderr
    assert "a:f32[50000,500000]" in result.stdout
    # ru_maxrss is in KiB on Linux: the process never came near 100 GB.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 16 * 2**20
    # Executing it would allocate: the input-size guard counts the factory's arrays.
    refused = run_cli("stages", f"{project}/fac.py:total", "--shapes", spec)
    assert refused.exit_code == 2
    assert "need 100,000,000,000 bytes" in refused.stderr


def test_a_flax_init_of_300_gb_is_evaluated_abstractly(run_cli, tmp_path):
    spec = write(
        tmp_path,
        "big.yaml",
        f"""\
        args:
          state:
            from: {sample("train_flax.py")}:init_state
            kwargs: {{features: 50000, hidden: 500000}}
          x: f32[8,50000]
          labels: i32[8]
        """,
    )
    result = run_cli("jaxpr", sample("train_flax.py") + ":train_step", "--shapes", spec)
    assert result.exit_code == 0, result.stderr
    assert "f32[50000,500000]" in result.stdout
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 16 * 2**20


@pytest.mark.parametrize(
    ("spec_text", "code", "expected"),
    [
        (  # the factory's own exception: exit 3, the key, the user's frame
            "args: {w: {from: fac.py:broken}}",
            3,
            ["s.yaml: args.w: factory fac.py:broken failed: TypeError", "fac.py:", "in broken"],
        ),
        (  # reading a traced value: exit 3 with the abstract-evaluation hint
            "args: {w: {from: fac.py:reads_values}}",
            3,
            ["factory fac.py:reads_values failed", "it cannot read array values"],
        ),
        (
            "args: {w: {from: nope.py:huge}}",
            2,
            ["s.yaml: args.w.from: nope.py:huge: file", "nope.py' not found"],
        ),
        (
            "args: {w: {from: fac.py:hug}}",
            2,
            ["s.yaml: args.w.from: fac.py:hug: module", "has no attribute 'hug'", "huge?"],
        ),
        (
            "args: {w: {from: fac.py:huge, kwargs: {n: 3}}}",
            2,
            ["s.yaml: args.w.kwargs: fac.py:huge() cannot take n"],
        ),
        (
            "args: {w: {from: fac.py:example_args, path: [nope]}}",
            2,
            ["s.yaml: args.w.path: the result of fac.py:example_args (dict) has no 'nope'"],
        ),
        (
            "args: {from: fac.py:example_args}",
            2,
            ["s.yaml: args (from: fac.py:example_args): the result does not fit", "`layer`"],
        ),
        (
            "args: {from: fac.py:not_args}",
            2,
            ["returns a mapping by parameter name or a tuple", "not an array"],
        ),
    ],
)
def test_factory_errors(run_cli, project, spec_text, code, expected):
    spec = write(project, "s.yaml", spec_text)
    result = run_cli("stages", f"{project}/fac.py:total", "--shapes", spec)
    assert result.exit_code == code, result.stderr
    for text in expected:
        assert text in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unhashable_target_is_a_clear_usage_error(run_cli, project):
    result = run_cli("stages", f"{project}/fac.py:scaler", "--arg", "x=f32[3]")
    assert result.exit_code == 2
    assert "jax.jit keys its cache on the function" in result.stderr
    assert "a Scaler is not hashable" in result.stderr and "frozen=True" in result.stderr
    assert "Register its class as a pytree" in result.stderr


def test_cases_built_by_the_same_factory_call_share_one_compile(run_cli, project):
    spec = write(
        project,
        "sweep.yaml",
        """\
        cases:
          a: {args: {layer: {from: fac.py:make_layer}, x: 'f32[3,4]'}}
          b: {args: {layer: {from: fac.py:make_layer}, x: 'f32[3,4]'}}
          wide: {args: {layer: {from: fac.py:make_layer, kwargs: {n: 8}}, x: 'f32[3,8]'}}
        """,
    )
    result = run_cli("recompile", f"{project}/fac.py:apply", "--shapes", spec, "--format", "json")
    assert result.exit_code == 0, result.stderr
    cases = {c["name"]: c for c in json.loads(result.stdout)["cases"]}
    assert cases["a"]["compiled"] and not cases["b"]["compiled"]
    assert cases["b"]["shares_executable_with"] == "a" and cases["wide"]["compiled"]


def test_spec_command_prints_leaves_and_from_nodes_that_reproduce_the_call(
    run_cli, project, monkeypatch
):
    monkeypatch.chdir(project)  # --from paths as written are relative to the current folder
    result = run_cli("spec", f"{project}/fac.py:apply", "--from", "fac.py:example_args")
    assert result.exit_code == 0, result.stderr
    document = yaml.safe_load(result.stdout)
    assert document == {
        "args": {
            "layer": {"from": "fac.py:example_args", "path": ["layer"]},
            "x": "f32[3,4]",
        }
    }
    out = project / "sub" / "generated.yaml"
    out.parent.mkdir()
    written = run_cli(
        "spec",
        f"{project}/fac.py:apply",
        "--from",
        f"{project}/fac.py:as_tuple",
        "--kwarg",
        "n=8",
        "-o",
        out,
    )
    assert written.exit_code == 0, written.stderr
    generated = yaml.safe_load(out.read_text())
    assert generated["args"]["layer"] == {
        "from": "../fac.py:as_tuple",
        "kwargs": {"n": 8},
        "path": [0],
    }
    assert generated["args"]["x"] == "f32[2,8]"
    run = run_cli("stages", f"{project}/fac.py:apply", "--shapes", out, "--format", "json")
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["memory"]["argument_bytes"] == 4 * (64 + 8 + 16)


def test_spec_command_errors(run_cli, project):
    not_args = run_cli("spec", f"{project}/fac.py:apply", "--from", f"{project}/fac.py:not_args")
    assert not_args.exit_code == 2 and "needs a mapping by parameter name" in not_args.stderr
    misfit = run_cli("spec", f"{project}/fac.py:total", "--from", f"{project}/fac.py:example_args")
    assert misfit.exit_code == 2 and "has no parameter `layer`" in misfit.stderr
    bad = run_cli("spec", f"{project}/fac.py:apply", "--from", "fac.py:as_tuple", "--kwarg", "n")
    assert bad.exit_code == 2 and "expected NAME=VALUE" in bad.stderr
    broken = run_cli("spec", f"{project}/fac.py:total", "--from", f"{project}/fac.py:broken")
    assert broken.exit_code == 3 and "in broken" in broken.stderr


FIXTURE_TEST = """
import jax
import jax.numpy as jnp
import equinox as eqx


def step(model, x):
    return jax.vmap(model)(x).sum()


def test_args_given_as_values(jaxinspect_snapshot):
    model = eqx.nn.MLP(4, 2, 8, 1, activation=jax.nn.gelu, key=jax.random.key(0))
    jaxinspect_snapshot(step, args=(model, jnp.ones((3, 4))), name="arrays")
    abstract = jax.ShapeDtypeStruct((3, 4), jnp.float32)
    jaxinspect_snapshot(step, args={"model": model, "x": abstract}, name="mixed")
"""


def test_the_pytest_fixture_takes_arguments_directly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=FIXTURE_TEST)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1)
    root = pytester.path / "__jaxinspect__" / "test_model"
    folders = sorted(p.name for p in root.iterdir())
    assert len(folders) == 2
    for folder in folders:
        summary = json.loads((root / folder / "summary.json").read_text())
        assert summary["memory"]["argument_bytes"] == 4 * (8 * 4 + 8 + 2 * 8 + 2 + 12)
    pytester.runpytest().assert_outcomes(passed=1)  # the same arguments: no difference


def test_a_check_manifest_snapshots_a_target_whose_spec_uses_from(run_cli, project, monkeypatch):
    monkeypatch.chdir(project)
    write(project, "layer.yaml", "args:\n  layer: {from: fac.py:make_layer}\n  x: f32[3,4]\n")
    (project / "jaxinspect.yaml").write_text(
        "snapshot_dir: snaps\ntargets:\n  - target: fac.py:apply\n    shapes: layer.yaml\n"
    )
    first = run_cli("check", "--update")
    assert first.exit_code == 0, first.stderr
    summary = json.loads((project / "snaps" / "fac_apply" / "summary.json").read_text())
    assert summary["memory"]["argument_bytes"] == 4 * (16 + 4 + 12)
    again = run_cli("check")
    assert again.exit_code == 0, again.stdout + again.stderr


GRAD_PROGRAM = """
import jax
import jax.numpy as jnp
import equinox as eqx


def make():
    return eqx.nn.MLP(4, 1, 8, 2, key=jax.random.PRNGKey(0))


def loss(model, x):
    return jnp.sum(jax.vmap(model)(x) ** 2)
"""


def test_transforms_see_only_the_arrays_of_a_from_argument(run_cli, tmp_path):
    """``--transform grad`` over an Equinox module (its activation a function) from ``from:``."""
    eqx = pytest.importorskip("equinox")
    import jax.numpy as jnp

    (tmp_path / "eq.py").write_text(GRAD_PROGRAM)
    spec = tmp_path / "eq.yaml"
    spec.write_text("args:\n  model: {from: eq.py:make}\n  x: f32[16,4]\n")
    result = run_cli(
        "stages", f"{tmp_path}/eq.py:loss", "-s", spec, "-t", "grad", "--format", "json"
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["composition"] == "jit(grad(loss, argnums=0))"

    model = eqx.nn.MLP(4, 1, 8, 2, key=jax.random.PRNGKey(0))
    arrays, static = eqx.partition(model, eqx.is_array)

    def loss(arrays, x):
        return jnp.sum(jax.vmap(eqx.combine(arrays, static))(x) ** 2)

    abstract = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), arrays)
    x = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    plain = jax.jit(jax.grad(loss)).lower(abstract, x).compile().cost_analysis()
    assert report["cost"]["flops"] == plain["flops"]
