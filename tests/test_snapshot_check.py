"""``jaxinspect check`` with manifests, statuses, --update, formats; store safety; pytest plugin."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import jax  # noqa: F401  (pytester's in-process runs unload what they import; jaxlib can't reload)
import jsonschema
import pytest

from conftest import CHECK_MANIFEST, CHECK_PROGRAM, edit_module
from jaxinspect.errors import UsageError
from jaxinspect.snapshot.manifest import find_manifest, load_manifest
from jaxinspect.snapshot.model import SNAPSHOT_FILES
from jaxinspect.snapshot.store import (
    STAGING_DIR,
    read_snapshot,
    recover,
    safe_name,
    write_snapshot,
)

pytest_plugins = ["pytester"]

SCHEMAS = Path(__file__).resolve().parent.parent / "jaxinspect" / "schemas"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "prog.py").write_text(textwrap.dedent(CHECK_PROGRAM))
    (tmp_path / "jaxinspect.yaml").write_text(CHECK_MANIFEST)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_check_lifecycle(
    run_cli: Callable[..., object], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = run_cli("check", "--format", "json")
    assert missing.exit_code == 1
    assert [t["status"] for t in json.loads(missing.stdout)["targets"]] == ["missing", "missing"]
    assert not (project / "snaps").exists()  # check alone writes nothing

    created = run_cli("check", "--update")
    assert created.exit_code == 0, created.stderr
    assert sorted(p.name for p in (project / "snaps").iterdir()) == ["prog_double", "shift"]
    assert sorted(p.name for p in (project / "snaps" / "shift").iterdir()) == sorted(SNAPSHOT_FILES)

    clean = run_cli("check")
    assert clean.exit_code == 0 and "2 unchanged" in clean.stdout

    edit_module(project / "prog.py", textwrap.dedent(CHECK_PROGRAM).replace("x * 2.0", "x * 3.0"))
    for name, module in list(sys.modules.items()):  # as in a fresh process: import the edit
        if getattr(module, "__file__", None) == str((project / "prog.py").resolve()):
            monkeypatch.delitem(sys.modules, name)
    (project / "snaps" / "old_target").mkdir()
    write_snapshot(project / "snaps" / "old_target", read_snapshot(project / "snaps" / "shift"))
    changed = run_cli("check", "--format", "markdown")
    assert changed.exit_code == 1
    assert "| `prog_double` | ⚠️ changed |" in changed.stdout
    assert "| `old_target` | 🗑️ stale |" in changed.stdout
    assert "constant(2)" in changed.stdout and "constant(3)" in changed.stdout

    table = run_cli("check")
    assert table.exit_code == 1 and "prog_double" in table.stdout
    assert "constant(3)" not in table.stdout  # the summary only, unless --text
    texty = run_cli("check", "--text", "--color", "never")
    assert texty.exit_code == 1 and "+  %constant.0 = f32[] constant(3)" in texty.stdout

    gated = run_cli("check", "--fail-on", "flops>+50%", "--format", "json")
    doc = json.loads(gated.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "snapshot-check.schema.json").read_text()))
    assert doc["counts"] == {
        "error": 0,
        "changed": 1,
        "missing": 0,
        "stale": 1,
        "new": 0,
        "unchanged": 1,
    }
    assert gated.exit_code == 1  # the stale snapshot still fails
    diff_schema = json.loads((SCHEMAS / "snapshot-diff.schema.json").read_text())
    for target in doc["targets"]:
        if target["diff"] is not None:
            jsonschema.validate(target["diff"], diff_schema)

    updated = run_cli("check", "--update")
    assert updated.exit_code == 0
    assert not (project / "snaps" / "old_target").exists()
    assert run_cli("check").exit_code == 0


def test_pyproject_manifest(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.jaxinspect]\nsnapshot_dir = "s"\nfail_on = "flops>+5%"\n'
        '[[tool.jaxinspect.targets]]\ntarget = "src/m.py:f"\nshapes = "f.yaml"\n'
    )
    (tmp_path / "sub").mkdir()
    found = find_manifest(tmp_path / "sub")
    assert found == tmp_path / "pyproject.toml"
    manifest = load_manifest(found)
    assert manifest.snapshot_dir == tmp_path / "s"
    assert manifest.fail_on == "flops>+5%"
    (target,) = manifest.targets
    assert (target.name, target.target) == ("m_f", f"{tmp_path}/src/m.py:f")
    assert target.shapes == tmp_path / "f.yaml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("targets: []\n", "non-empty list"),
        ("targetz: []\n", "did you mean targets?"),
        ("targets:\n  - {target: a.py:f, nme: x}\n", "unknown key 'nme'"),
        ("targets:\n  - {name: x}\n", "missing 'target'"),
        ("targets:\n  - {target: a.py:f, name: ../../etc}\n", "not a safe file name"),
        ("targets:\n  - a.py:f\n  - b/a.py:f\n", "share the snapshot name 'a_f'"),
        ("targets: [", "jaxinspect.yaml"),
    ],
)
def test_bad_manifests_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "jaxinspect.yaml").write_text(text)
    with pytest.raises(UsageError, match=None) as info:
        load_manifest(tmp_path / "jaxinspect.yaml")
    assert message in info.value.message


def test_no_manifest_exits_2(run_cli: Callable[..., object], tmp_path: Path) -> None:
    result = run_cli("check", "--manifest", tmp_path / "nope.yaml")
    assert result.exit_code == 2 and "file not found" in result.stderr


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("mlp.py:predict", "mlp.py_predict"),
        ("../../etc/passwd", "etc_passwd"),
        ("/abs/path", "abs_path"),
        ("..", None),
        ("a\\..\\b", "a_.._b"),
        (".hidden", "hidden"),
    ],
)
def test_safe_names_cannot_escape(name: str, safe: str | None) -> None:
    if safe is None:
        with pytest.raises(UsageError):
            safe_name(name)
    else:
        assert safe_name(name) == safe
        assert "/" not in safe and not safe.startswith(".")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from jaxinspect.inputs.spec import parse_arg_options
    from jaxinspect.inputs.target import load_target
    from jaxinspect.snapshot.capture import capture_snapshot

    root = tmp_path_factory.mktemp("store")
    (root / "prog.py").write_text(textwrap.dedent(CHECK_PROGRAM))
    for name in ("double", "shifted"):
        spec = parse_arg_options(["x=f32[4]"])
        write_snapshot(root / name, capture_snapshot(load_target(f"{root}/prog.py:{name}"), spec))
    return root


def _interrupted_write(stored: Path, dest: Path, commit: bool) -> None:
    """Stage the 'shifted' snapshot over 'double' as a writer killed mid-way would leave it."""
    staging = dest / STAGING_DIR
    staging.mkdir()
    for name in SNAPSHOT_FILES[:2]:
        (staging / name).write_bytes((stored / "shifted" / name).read_bytes())
    if commit:
        for name in SNAPSHOT_FILES[2:]:
            (staging / name).write_bytes((stored / "shifted" / name).read_bytes())
        (staging / "COMMIT").write_text("\n".join(SNAPSHOT_FILES) + "\n")
        os.replace(staging / SNAPSHOT_FILES[0], dest / SNAPSHOT_FILES[0])  # killed after one move


@pytest.mark.parametrize("commit", [False, True])
def test_interrupted_writes_read_as_old_or_new(stored: Path, tmp_path: Path, commit: bool) -> None:
    import shutil

    dest = tmp_path / "snap"
    shutil.copytree(stored / "double", dest)
    _interrupted_write(stored, dest, commit)
    expected = read_snapshot(stored / ("shifted" if commit else "double"))
    assert read_snapshot(dest).texts == expected.texts  # readers see a whole snapshot
    recover(dest)
    assert not (dest / STAGING_DIR).exists()
    assert read_snapshot(dest).texts == expected.texts
    for name in SNAPSHOT_FILES:
        source = stored / ("shifted" if commit else "double") / name
        assert (dest / name).read_bytes() == source.read_bytes()


def test_writes_stay_inside_the_named_folder(stored: Path, tmp_path: Path) -> None:
    outside = tmp_path / "neighbour.txt"
    outside.write_text("keep")
    dest = tmp_path / "snap"
    dest.mkdir()
    (dest / "notes.md").write_text("mine")
    before = sorted(p.name for p in tmp_path.iterdir())
    write_snapshot(dest, read_snapshot(stored / "double"))
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert sorted(p.name for p in dest.iterdir()) == sorted([*SNAPSHOT_FILES, "notes.md"])
    assert outside.read_text() == "keep"
    assert oct((dest / "hlo.txt").stat().st_mode & 0o777) != oct(0o600)


PLUGIN_TEST = """
import jax.numpy as jnp


def model(x):
    return jnp.tanh(x) * SCALE


def test_model(jaxinspect_snapshot):
    jaxinspect_snapshot(model, {"args": {"x": "f32[4,4]"}})
"""


def test_pytest_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=PLUGIN_TEST.replace("SCALE", "2.0"))
    missing = pytester.runpytest("-p", "no:cacheprovider")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no stored snapshot*--jaxinspect-update*"])

    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1)
    stored = pytester.path / "__jaxinspect__" / "test_model" / "test_model"
    assert (stored / "hlo.txt").is_file()
    pytester.runpytest().assert_outcomes(passed=1)

    pytester.makepyfile(test_model=PLUGIN_TEST.replace("SCALE", "3.0"))
    changed = pytester.runpytest()
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*snapshot*changed*", "*constant(2)*", "*constant(3)*"])
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1)
    pytester.runpytest().assert_outcomes(passed=1)
