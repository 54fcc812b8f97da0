"""The fixture beside syrupy, its session summary, and unused snapshots (judged only when sure)."""

from __future__ import annotations

import shutil

import jax  # noqa: F401  (pytester's in-process runs unload what they import; jaxlib can't reload)
import pytest

pytest_plugins = ["pytester"]

TESTS = """
import jax.numpy as jnp


def test_sin(jaxinspect_snapshot):
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}})


def test_cos(jaxinspect_snapshot):
    jaxinspect_snapshot(jnp.cos, {"args": {"x": "f32[4]"}})
"""

WITH_SYRUPY = (
    TESTS
    + """

def test_plain_value(snapshot):
    assert {"answer": 42} == snapshot
"""
)


def folders(pytester: pytest.Pytester, module: str = "test_model") -> list[str]:
    root = pytester.path / "__jaxinspect__" / module
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_syrupy_update_leaves_jaxinspect_snapshots_alone(pytester: pytest.Pytester) -> None:
    pytest.importorskip("syrupy")
    pytester.makepyfile(test_model=WITH_SYRUPY)
    first = pytester.runpytest("--jaxinspect-update", "--snapshot-update")
    first.assert_outcomes(passed=3)
    assert folders(pytester) == ["test_cos", "test_sin"]
    assert (pytester.path / "__snapshots__" / "test_model.ambr").is_file()  # syrupy's own
    # syrupy's update again: before #14 it deleted every jaxinspect folder as "unknown".
    again = pytester.runpytest("--snapshot-update")
    again.assert_outcomes(passed=3)
    assert "Deleted" not in again.stdout.str()
    assert folders(pytester) == ["test_cos", "test_sin"]
    pytester.runpytest().assert_outcomes(passed=3)


def test_session_line_counts_unchanged_written_and_failed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=TESTS)
    written = pytester.runpytest("--jaxinspect-update")
    written.stdout.fnmatch_lines(
        ["jaxinspect snapshots: 0 unchanged, 2 written, 0 failed, 0 unused"]
    )
    pytester.makepyfile(test_model=TESTS.replace("jnp.cos", "jnp.tan"))
    changed = pytester.runpytest()
    changed.assert_outcomes(passed=1, failed=1)
    changed.stdout.fnmatch_lines(
        ["jaxinspect snapshots: 1 unchanged, 0 written, 1 failed, 0 unused"]
    )


def test_a_renamed_test_leaves_an_unused_folder_that_fails_the_session(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_model=TESTS)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    pytester.makepyfile(test_model=TESTS.replace("def test_cos", "def test_cosine"))
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)  # writes test_cosine
    assert folders(pytester) == ["test_cosine", "test_sin"]  # update deleted test_cos


def test_unused_fails_then_warns_then_is_deleted_on_update(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=TESTS)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    stale = pytester.path / "__jaxinspect__" / "test_model" / "test_gone"
    shutil.copytree(stale.parent / "test_sin", stale)

    failing = pytester.runpytest()
    failing.assert_outcomes(passed=2)
    assert failing.ret == 1
    failing.stdout.fnmatch_lines(
        ["jaxinspect snapshots: 2 unchanged, 0 written, 0 failed, 1 unused", f"*unused: {stale}"]
    )
    warned = pytester.runpytest("--jaxinspect-warn-unused")
    assert warned.ret == 0 and stale.is_dir()
    deleted = pytester.runpytest("--jaxinspect-update")
    assert deleted.ret == 0 and not stale.exists()
    deleted.stdout.fnmatch_lines(["*0 unused, 1 deleted", f"*deleted: {stale}"])


@pytest.mark.parametrize(
    "selection",
    [["-k", "sin"], ["test_model.py::test_sin"], ["--deselect", "test_model.py::test_cos"]],
)
def test_a_partial_run_never_flags_or_deletes_other_tests(
    pytester: pytest.Pytester, selection: list[str]
) -> None:
    pytester.makepyfile(test_model=TESTS)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    partial = pytester.runpytest("--jaxinspect-update", *selection)
    partial.assert_outcomes(passed=1)
    assert partial.ret == 0
    assert folders(pytester) == ["test_cos", "test_sin"]


def test_a_failing_or_skipped_test_keeps_its_snapshot(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=TESTS)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    broken = TESTS.replace(
        "def test_cos(jaxinspect_snapshot):\n", "def test_cos(jaxinspect_snapshot):\n    1 / 0\n"
    )
    pytester.makepyfile(test_model=broken)
    result = pytester.runpytest("--jaxinspect-update")
    result.assert_outcomes(passed=1, failed=1)
    assert folders(pytester) == ["test_cos", "test_sin"]
    skipped = TESTS.replace("def test_cos", "@__import__('pytest').mark.skip\ndef test_cos")
    pytester.makepyfile(test_model=skipped)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1, skipped=1)
    assert folders(pytester) == ["test_cos", "test_sin"]


def test_a_deleted_test_file_leaves_an_orphan_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=TESTS, test_other=TESTS)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=4)
    (pytester.path / "test_other.py").unlink()
    result = pytester.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*2 unused"])
    pytester.runpytest("--jaxinspect-update")
    assert folders(pytester, "test_other") == []


def test_snapshots_in_the_old_folder_get_a_move_command(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=TESTS)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=2)
    new = pytester.path / "__jaxinspect__"
    old = pytester.path / "__snapshots__"
    new.rename(old)
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "it is in the old place" in out and "old place" in out
    assert f"mv {old / 'test_model'} {new}/" in out
    # Running the printed command is the whole migration.
    (new).mkdir()
    (old / "test_model").rename(new / "test_model")
    pytester.runpytest().assert_outcomes(passed=2)
