"""Issue #22, the pytest plugin: unused snapshots deleted only after a complete judgement.

One test per defect number of the issue (d02: ``--collect-only`` deleted every snapshot, …).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import jax
import pytest

pytest_plugins = ["pytester"]

TESTS = """
import jax.numpy as jnp


def test_sin(jaxinspect_snapshot):
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}})


def test_cos(jaxinspect_snapshot):
    jaxinspect_snapshot(jnp.cos, {"args": {"x": "f32[4]"}})
"""

FAILING_COS = TESTS.replace(
    "def test_cos(jaxinspect_snapshot):\n", "def test_cos(jaxinspect_snapshot):\n    1 / 0\n"
)


def folders(pytester: pytest.Pytester, module: str = "test_model") -> list[str]:
    root = pytester.path / "__jaxinspect__" / module
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def written_with_a_stale_one(pytester: pytest.Pytester, module: str = "test_model") -> Path:
    """Both snapshots written, plus ``test_gone``: a snapshot no test claims (unused)."""
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    root = pytester.path / "__jaxinspect__" / module
    shutil.copytree(root / "test_sin", root / "test_gone")
    return root / "test_gone"


@pytest.mark.parametrize("update", [[], ["--jaxinspect-update"]])
def test_d02_collect_only_setup_only_setup_plan_judge_nothing(
    pytester: pytest.Pytester, update: list[str]
) -> None:
    """``--collect-only`` failed the session with "N unused" and with update deleted all."""
    pytester.makepyfile(test_model=TESTS)
    written_with_a_stale_one(pytester)
    for option in ("--collect-only", "--setup-only", "--setup-plan"):
        result = pytester.runpytest(option, *update)
        assert result.ret == 0, (option, result.stdout.str())
        assert "unused:" not in result.stdout.str() and "deleted" not in result.stdout.str()
        result.stdout.fnmatch_lines([f"jaxinspect: unused snapshots not judged: {option} runs no*"])
        assert folders(pytester) == ["test_cos", "test_gone", "test_sin"], option


def test_d03_xdist_workers_send_their_records_and_the_controller_judges_once(
    pytester: pytest.Pytester,
) -> None:
    """``pytest -n 2 --jaxinspect-update`` deleted each worker's view of the other's tests;
    and a lost worker (its record with it) means nothing is judged, saying so."""
    pytest.importorskip("xdist")
    pytester.makepyfile(test_model=TESTS, test_other=TESTS.replace("f32[4]", "f32[8]"))
    pytester.runpytest_subprocess("-n", "2", "--jaxinspect-update").assert_outcomes(passed=4)
    stale = pytester.path / "__jaxinspect__" / "test_model" / "test_gone"
    shutil.copytree(stale.parent / "test_sin", stale)
    result = pytester.runpytest_subprocess("-n", "2", "--jaxinspect-update")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["jaxinspect snapshots: 4 unchanged, 0 written, 0 failed, 0 unused, 1 deleted"]
    )
    assert folders(pytester) == folders(pytester, "test_other") == ["test_cos", "test_sin"]
    # A worker that dies takes its record (which snapshots its tests used) with it.
    shutil.copytree(stale.parent / "test_sin", stale)
    pytester.makepyfile(test_crash="import os\n\ndef test_crash():\n    os._exit(3)\n")
    lost = pytester.runpytest_subprocess("-n", "2", "--jaxinspect-update")
    lost.stdout.fnmatch_lines(["*unused snapshots not judged: pytest-xdist worker gw* was lost*"])
    assert "test_gone" in folders(pytester) and "deleted" not in lost.stdout.str()


@pytest.mark.parametrize("option", ["--lf", "--ff", "--sw", "--sw-skip"])
def test_d04_last_failed_and_stepwise_are_partial(pytester: pytest.Pytester, option: str) -> None:
    """``--lf`` filters a module's tests while collecting, without pytest_deselected: the
    module looked complete, and update deleted the snapshots of the tests it left out."""
    pytester.makepyfile(test_model=TESTS)
    written_with_a_stale_one(pytester)
    pytester.makepyfile(test_model=FAILING_COS)
    pytester.runpytest().assert_outcomes(passed=1, failed=1)  # the cache notes test_cos
    result = pytester.runpytest(option, "--jaxinspect-update")
    assert "deleted" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"*unused snapshots not judged: {option} picks tests"])
    assert folders(pytester) == ["test_cos", "test_gone", "test_sin"]


def test_d04_any_filter_that_drops_tests_silently_makes_the_module_partial(
    pytester: pytest.Pytester,
) -> None:
    """A plugin that drops tests while collecting without telling pytest_deselected."""
    pytester.makepyfile(test_model=TESTS)
    stale = written_with_a_stale_one(pytester)
    pytester.makeconftest(
        "def pytest_collection_modifyitems(items):\n"
        "    items[:] = [i for i in items if 'cos' not in i.name]\n"
    )
    result = pytester.runpytest("--jaxinspect-update")
    result.assert_outcomes(passed=1)
    assert result.ret == 0 and stale.is_dir()
    assert folders(pytester) == ["test_cos", "test_gone", "test_sin"]


def test_d05_deleting_keeps_and_names_what_is_not_jaxinspects(pytester: pytest.Pytester) -> None:
    """The plugin deleted an unused folder whole, a user's ``NOTES.md`` inside included."""
    pytester.makepyfile(test_model=TESTS)
    stale = written_with_a_stale_one(pytester)
    (stale / "NOTES.md").write_text("why this program compiles as it does\n")
    (stale / "extra").mkdir()
    (stale / "extra" / "keep.txt").write_text("mine\n")
    result = pytester.runpytest("--jaxinspect-update")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"*deleted: {stale} (kept NOTES.md, extra/: not jaxinspect's)"])
    assert sorted(p.name for p in stale.iterdir()) == ["NOTES.md", "extra"]
    assert (stale / "extra" / "keep.txt").read_text() == "mine\n"
    pytester.runpytest().assert_outcomes(passed=2)  # no longer a snapshot: not unused again


def test_d06_a_long_module_name_maps_back_to_its_file(pytester: pytest.Pytester) -> None:
    """A module whose escaped name passes 200 characters was judged orphaned (and deleted)
    whenever another module ran."""
    long_name = "test_" + "模" * 30  # 5 + 30 * 9 escaped characters
    pytester.makepyfile(**{long_name: TESTS, "test_other": TESTS})
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=4)
    (folder,) = [p for p in (pytester.path / "__jaxinspect__").iterdir() if "~" in p.name]
    assert len(folder.name) == 200
    other = pytester.runpytest("test_other.py", "--jaxinspect-update")
    other.assert_outcomes(passed=2)
    assert "deleted" not in other.stdout.str()
    assert sorted(p.name for p in folder.iterdir()) == ["test_cos", "test_sin"]
    (pytester.path / f"{long_name}.py").unlink()  # now it is an orphan, and is judged one
    orphaned = pytester.runpytest()
    assert orphaned.ret == 1
    orphaned.stdout.fnmatch_lines(["*2 unchanged, 0 written, 0 failed, 2 unused"])


LONG_ID = """
import jax.numpy as jnp
import pytest


@pytest.mark.parametrize("case", ["c" * 250], ids=["c" * 250])
def test_long(jaxinspect_snapshot, case):
    SKIP
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}}, name="n" * 30)


def test_sin(jaxinspect_snapshot):
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}})
"""


@pytest.mark.parametrize("stop", ["pytest.skip('later')", "1 / 0"])
def test_d07_a_skipped_or_failed_test_with_a_long_id_keeps_its_snapshot(
    pytester: pytest.Pytester, stop: str
) -> None:
    """Over 200 characters, the cut folder name no longer matched the test's name."""
    pytester.makepyfile(test_model=LONG_ID.replace("SKIP", "pass"))
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    before = folders(pytester)
    assert len(before) == 2 and len(before[0]) == 200
    pytester.makepyfile(test_model=LONG_ID.replace("SKIP", stop))
    result = pytester.runpytest("--jaxinspect-update")
    assert "deleted" not in result.stdout.str() and folders(pytester) == before


CLASSES = """
import jax.numpy as jnp


class TestA:
    def test_x(self, jaxinspect_snapshot):
        jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}})


class TestB:
    def test_x(self, jaxinspect_snapshot):
        jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[8]"}})
"""


def test_d11_methods_of_two_classes_get_their_own_folders(pytester: pytest.Pytester) -> None:
    """``TestA.test_x`` and ``TestB.test_x`` shared a folder, the error said their names
    "differ only in letter case", and updating one overwrote the other."""
    pytester.makepyfile(test_model=CLASSES)
    result = pytester.runpytest("--jaxinspect-update")
    result.assert_outcomes(passed=2)
    assert folders(pytester) == ["TestA.test_x", "TestB.test_x"]
    pytester.runpytest().assert_outcomes(passed=2)  # each compares with its own shapes
    # A snapshot an older jaxinspect stored without the class: the failure says where it is.
    root = pytester.path / "__jaxinspect__" / "test_model"
    (root / "TestA.test_x").rename(root / "test_x")
    moved = pytester.runpytest()
    moved.stdout.fnmatch_lines([f"*an older jaxinspect stored it without its class, at {root}*"])
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    assert folders(pytester) == ["TestA.test_x", "TestB.test_x"]  # the old one deleted


def test_d26_a_symlinked_snapshot_folder_is_never_followed(pytester: pytest.Pytester) -> None:
    """A symlink under ``__jaxinspect__/<module>/`` crashed ``--jaxinspect-update``."""
    pytester.makepyfile(test_model=TESTS)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    root = pytester.path / "__jaxinspect__" / "test_model"
    elsewhere = pytester.path / "elsewhere"
    shutil.copytree(root / "test_sin", elsewhere / "test_gone")
    (root / "test_gone").symlink_to(elsewhere / "test_gone", target_is_directory=True)
    (root / "test_sin").rename(elsewhere / "test_sin")
    (root / "test_sin").symlink_to(elsewhere / "test_sin", target_is_directory=True)
    result = pytester.runpytest("--jaxinspect-update")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [f"*not judged: {root / 'test_gone'} (a symbolic link, which is never followed)"]
    )
    assert (root / "test_gone").is_symlink() and (elsewhere / "test_gone" / "hlo.txt").is_file()
    assert (elsewhere / "test_sin" / "hlo.txt").is_file()


LEAKING = """
import jax
import jax.numpy as jnp


def square(x):
    return x @ x


def test_1_leaves_a_setting_changed():
    jax.config.update("jax_default_matmul_precision", "highest")


def test_2_snapshot(jaxinspect_snapshot):
    before = jax.config.jax_default_matmul_precision
    jaxinspect_snapshot(square, {"args": {"x": "f32[4,4]"}})
    assert jax.config.jax_default_matmul_precision == before  # the test's own, put back
"""


def test_each_snapshot_runs_with_jax_configuration_as_the_session_began(
    pytester: pytest.Pytester,
) -> None:
    """A test that leaves ``jax.config`` changed does not change later snapshots."""
    assert jax.config.jax_default_matmul_precision is None
    pytester.makepyfile(test_model=LEAKING)
    alone = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-k", "snapshot", "--jaxinspect-update"
    )
    alone.assert_outcomes(passed=1, deselected=1)
    after_the_leak = pytester.runpytest_subprocess("-p", "no:randomly")
    after_the_leak.assert_outcomes(passed=2)
    after_the_leak.stdout.fnmatch_lines(["*1 unchanged, 0 written, 0 failed, 0 unused"])
    assert os.environ.get("JAX_DEFAULT_MATMUL_PRECISION") is None
