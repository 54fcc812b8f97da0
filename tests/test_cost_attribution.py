"""Per-line attribution: ``--user-code`` chooses whose frames count; XLA's own instructions."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT
from jaxinspect.xla.aggregate import NO_SOURCE, XLA_CREATED, group_flags
from jaxinspect.xla.breakdown import CostFlag
from jaxinspect.xla.ownership import UserCode, resolve_user_code

COST_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/cost.schema.json").read_text())

MAIN = """\
import numpy as np

import mathlib


def predict(w, x):
    y = mathlib.dense(w, x)
    return np.float32(2) * y
"""
LIBRARY = """\
def dense(w, x):
    return x @ w
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """``app/main.py`` (the target) calls ``libs/mathlib.py``, a helper outside its folder."""
    (tmp_path / "app").mkdir()
    (tmp_path / "libs").mkdir()
    (tmp_path / "app/main.py").write_text(MAIN)
    (tmp_path / "libs/mathlib.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path / "libs"))
    return tmp_path


ARGS = ("--arg", "w=f32[8,4]", "--arg", "x=f32[2,8]")


def cost_doc(run_cli, *args: str) -> dict:
    """``cost ARGS -f json``, checked against the schema."""
    result = run_cli("cost", *args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, COST_SCHEMA)
    return doc


def by_line(doc: dict) -> dict[str, dict]:
    """``cost.by_line`` keyed ``file.py:line`` (base names), or by the special keys."""
    return {
        (f"{Path(g['file']).name}:{g['line']}" if g["file"] else g["key"]): g
        for g in doc["cost"]["by_line"]
    }


def test_default_user_code_is_the_target_folder(run_cli, project):
    doc = cost_doc(run_cli, f"{project}/app/main.py:predict", *ARGS)
    groups = by_line(doc)
    assert groups["main.py:7"]["opcodes"] == {"dot": 1}
    assert groups["main.py:7"]["flops"] == 2 * 2 * 8 * 4
    assert not any(key.startswith("mathlib.py") for key in groups)
    user = doc["cost"]["user_code"]
    assert user == {"roots": [str((project / "app").resolve()) + "/"], "chosen": False}


@pytest.mark.parametrize("choice", ["folder", "module"])
def test_user_code_selects_the_helper_library_frames(run_cli, project, choice):
    value = str(project / "libs") if choice == "folder" else "mathlib"
    doc = cost_doc(run_cli, f"{project}/app/main.py:predict", *ARGS, "--user-code", value)
    groups = by_line(doc)
    assert groups["mathlib.py:2"]["opcodes"] == {"dot": 1}
    # The multiply has no frame in mathlib: it falls back to the innermost non-JAX frame.
    assert "main.py:8" in groups and "main.py:7" not in groups
    assert doc["cost"]["user_code"]["chosen"] is True


def test_user_code_repeated_takes_the_innermost_chosen_frame(run_cli, project):
    target = f"{project}/app/main.py:predict"
    chosen = ("--user-code", str(project / "app"), "--user-code", "mathlib")
    groups = by_line(cost_doc(run_cli, target, *ARGS, *chosen))
    assert "mathlib.py:2" in groups and "main.py:8" in groups


def test_unknown_user_code_is_a_usage_error(run_cli, project):
    result = run_cli(
        "cost",
        f"{project}/app/main.py:predict",
        "--arg",
        "w=f32[8,4]",
        "--arg",
        "x=f32[2,8]",
        "--user-code",
        "no_such_package_xyz",
    )
    assert result.exit_code == 2
    assert "--user-code 'no_such_package_xyz'" in result.stderr
    assert "Traceback" not in result.stderr


def test_libraries_inside_the_user_folder_stay_libraries(tmp_path):
    site = tmp_path / "proj/.venv/lib/python3.11/site-packages/vendored"
    site.mkdir(parents=True)
    (site / "layer.py").write_text("")
    (tmp_path / "proj/model.py").write_text("")
    tool = tmp_path / "proj/tool"
    tool.mkdir()
    (tool / "x.py").write_text("")
    user = UserCode((str((tmp_path / "proj").resolve()) + "/",), (str(tool.resolve()) + "/",))
    assert user.owns(str(tmp_path / "proj/model.py"))
    assert not user.owns(str(site / "layer.py"))
    assert not user.owns(str(tool / "x.py"))  # a library folder nested in the user's one
    assert not user.owns("<frozen runpy>")
    # Naming the installed package makes it the user's.
    chosen = UserCode((str(site.resolve()) + "/",))
    assert chosen.owns(str(site / "layer.py"))


def test_resolve_user_code_accepts_files_folders_and_modules(tmp_path):
    (tmp_path / "one.py").write_text("")
    user = resolve_user_code([str(tmp_path / "one.py"), str(tmp_path), "json"], None)
    json_folder = str(Path(json.__file__).resolve().parent) + "/"
    assert user.roots == (
        str((tmp_path / "one.py").resolve()),
        str(tmp_path.resolve()) + "/",
        json_folder,
    )
    assert user.chosen
    assert resolve_user_code([], str(tmp_path / "one.py")).roots == (str(tmp_path.resolve()) + "/",)


STAX = """\
from jax.example_libraries import stax

init_fun, apply_fun = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(4))


def predict(params, x):
    return apply_fun(params, x)
"""
STAX_SPEC = """\
args:
  params:
    - ["f32[8,16]", "f32[16]"]
    - []
    - ["f32[16,4]", "f32[4]"]
  x: "f32[2,8]"
"""


def test_user_code_inside_jax_reaches_the_hlo_metadata(run_cli, tmp_path):
    """stax lives under jax/, whose frames JAX leaves out of the metadata unless included."""
    from jax._src import source_info_util

    (tmp_path / "net.py").write_text(STAX)
    (tmp_path / "net.yaml").write_text(STAX_SPEC)
    args = (f"{tmp_path}/net.py:predict", "--shapes", str(tmp_path / "net.yaml"))
    default = by_line(cost_doc(run_cli, *args))
    assert list(default) == ["net.py:7"]  # everything on the caller's line
    before = list(source_info_util._include_paths)
    doc = cost_doc(run_cli, *args, "--user-code", "jax.example_libraries.stax")
    chosen = by_line(doc)
    assert source_info_util._include_paths == before  # JAX's inclusions are put back
    lines = {k: g for k, g in chosen.items() if k.startswith("stax.py")}
    assert len(lines) == 2  # Dense's apply_fun (dots and adds) and Relu's lambda
    assert sum(g["flops"] for g in lines.values()) == doc["cost"]["loop_aware"]["flops"]


CONV = """\
import jax
import jax.numpy as jnp


def loss(w, x):
    dims = ("NHWC", "HWIO", "NHWC")
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dims)
    return jnp.sum(y * y)


grad = jax.grad(loss)
"""


def test_instructions_without_metadata_take_a_neighbour_s_line(run_cli, tmp_path):
    (tmp_path / "conv.py").write_text(CONV)
    args = (f"{tmp_path}/conv.py:grad", "--arg", "w=f32[3,3,2,4]", "--arg", "x=f32[1,6,6,2]")
    doc = cost_doc(run_cli, *args)
    # XLA makes the weight gradient's convolution without metadata; it takes the line of
    # the forward convolution it reads (xla/neighbours.py), not "(created by XLA)".
    borrowed = [op for op in doc["cost"]["ops"] if op["source_from"] is not None]
    conv = next(op for op in borrowed if op["opcode"] == "convolution")
    assert conv["source"]["line"] == 7 and not conv["created_by_xla"]
    assert conv["op_name"].endswith("conv_general_dilated")
    groups = by_line(doc)
    assert groups["conv.py:7"]["opcodes"].get("convolution") == 2
    assert XLA_CREATED not in groups and NO_SOURCE not in groups


def test_flags_group_by_kind_and_reason():
    flags = [
        CostFlag("custom-call", f"potrf.{i}", "main", "target 'potrf': no model", "")
        for i in range(3)
    ] + [CostFlag("conditional", "cond.1", "main", "branch", "branch")]
    groups = group_flags(flags)
    assert [(g.kind, g.count, g.lower_bound) for g in groups] == [
        ("custom-call", 3, True),
        ("conditional", 1, False),
    ]
    assert groups[0].instructions == ("potrf.0", "potrf.1", "potrf.2")


CHOLESKY = """\
import jax.numpy as jnp


def factors(a, b, c):
    return jnp.linalg.cholesky(a), jnp.linalg.cholesky(b), jnp.linalg.cholesky(c)
"""


def test_not_counted_table_has_one_row_per_group(run_cli, tmp_path):
    (tmp_path / "chol.py").write_text(CHOLESKY)
    args = ["cost", f"{tmp_path}/chol.py:factors"]
    args += [f"--arg={n}=f32[4,4]" for n in "abc"]
    result = run_cli(*args, "--top", "1")
    assert result.exit_code == 0, result.stderr
    section = result.stdout.split("not counted / lower bound")[1].split("ops by")[0]
    rows = [line for line in section.splitlines() if line.lstrip().startswith("custom-call")]
    assert len(rows) == 1 and " 3 " in rows[0] and "… +2 more" in rows[0]
    doc = json.loads(run_cli(*args, "-f", "json").stdout)
    jsonschema.validate(doc, COST_SCHEMA)
    (group,) = doc["cost"]["not_counted_groups"]
    assert group["count"] == 3 and len(doc["cost"]["not_counted"]) == 3
    assert group["reason"] == doc["cost"]["not_counted"][0]["reason"]


def test_xla_refusals_are_a_short_reason_not_the_parser_dump():
    import jax

    from jaxinspect.xla.xlacost import NOT_PARSED, UncostedError, module_cost

    client = jax.devices("cpu")[0].client
    bad = "HloModule m\n\nENTRY e {\n  ROOT %c = f32[] copy(%x), control-predecessors={%y}\n}\n"
    with pytest.raises(UncostedError) as caught:
        module_cost(client, bad)
    assert caught.value.reason == NOT_PARSED
    assert "\n" not in caught.value.detail and len(caught.value.detail) <= 200


FLAX_MODEL = """\
import flax.linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(16)(x)
        x = nn.relu(x)
        return nn.Dense(4)(x)


def predict(params, x):
    return MLP().apply(params, x)
"""
FLAX_SPEC = """\
args:
  params:
    params:
      Dense_0: {bias: "f32[16]", kernel: "f32[8,16]"}
      Dense_1: {bias: "f32[4]", kernel: "f32[16,4]"}
  x: "f32[2,8]"
"""


def test_flax_dense_flops_go_to_the_user_s_lines(run_cli, tmp_path):
    pytest.importorskip("flax")
    (tmp_path / "model.py").write_text(FLAX_MODEL)
    (tmp_path / "model.yaml").write_text(FLAX_SPEC)
    args = (f"{tmp_path}/model.py:predict", "--shapes", str(tmp_path / "model.yaml"))
    groups = by_line(cost_doc(run_cli, *args))
    # Each nn.Dense(...)(x) line gets its own matmul and bias add; flax's files get nothing.
    assert groups["model.py:7"]["flops"] == 2 * 2 * 8 * 16 + 2 * 16
    assert groups["model.py:9"]["flops"] == 2 * 2 * 16 * 4 + 2 * 4
    assert groups["model.py:8"]["opcodes"] == {"maximum": 1}
    assert all(key.startswith("model.py:") for key in groups)
    flax_lines = by_line(cost_doc(run_cli, *args, "--user-code", "flax"))
    assert {k.split(":")[0] for k in flax_lines} == {"linear.py", "model.py"}
