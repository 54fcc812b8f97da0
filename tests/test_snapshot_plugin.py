"""The pytest plugin's snapshot folder names: one folder per test id and name, never shared."""

from __future__ import annotations

import jax  # noqa: F401  (pytester's in-process runs unload what they import; jaxlib can't reload)
import pytest

from jaxinspect.snapshot.foldernames import owns, snapshot_folder_name

pytest_plugins = ["pytester"]

COLLIDING = """
import jax.numpy as jnp
import pytest


def model(x):
    return jnp.tanh(x) * SCALE


@pytest.mark.parametrize("case", ["a/b", "a_b"], ids=["a/b", "a_b"])
def test_ids(jaxinspect_snapshot, case):
    jaxinspect_snapshot(model, {"args": {"x": "f32[4]" if case == "a/b" else "f32[8]"}})


def test_names(jaxinspect_snapshot):
    jaxinspect_snapshot(model, {"args": {"x": "f32[2]"}}, name="../x")
    jaxinspect_snapshot(model, {"args": {"x": "f32[3]"}}, name="x")
"""


def test_distinct_ids_and_names_get_distinct_folders(pytester: pytest.Pytester) -> None:
    """Issue #11 item 10: ids ``a/b`` and ``a_b``, names ``../x`` and ``x`` shared a folder."""
    pytester.makepyfile(test_model=COLLIDING.replace("SCALE", "2.0"))
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=3)
    root = pytester.path / "__jaxinspect__" / "test_model"
    assert sorted(p.name for p in root.iterdir()) == [
        "test_ids[a%2Fb]",
        "test_ids[a_b]",
        "test_names+%2E.%2Fx",
        "test_names+x",
    ]
    assert all((p / "hlo.txt").is_file() for p in root.iterdir())
    # Each compares with its own snapshot: a shared folder holds the other test's shapes.
    pytester.runpytest().assert_outcomes(passed=3)


CASE_ONLY = """
import jax.numpy as jnp
import pytest


@pytest.mark.parametrize("case", ["A", "a"])
def test_case(jaxinspect_snapshot, case):
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}})


def test_twice(jaxinspect_snapshot):
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}}, name="2")
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}})
"""


def test_true_collisions_are_clear_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=CASE_ONLY)
    result = pytester.runpytest("--jaxinspect-update")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "name='2' is taken twice in this test" in out
    # Whichever of the two ran first owns the folder (pytest-randomly may shuffle them).
    assert "would share the snapshot folder" in out and "only in letter case" in out


@pytest.mark.parametrize(
    ("test", "name", "folder"),
    [
        ("test_x", "", "test_x"),
        ("test_x[float32-4]", "", "test_x[float32-4]"),
        ("test_x", "batch1", "test_x+batch1"),
        ("test_x[a+b]", "", "test_x[a%2Bb]"),
        ("test_x", "a+b", "test_x+a%2Bb"),
        ("..", "", "%2E."),
        ("test_é", "%", "test_%C3%A9+%25"),
    ],
)
def test_folder_names_escape_every_other_character(test: str, name: str, folder: str) -> None:
    assert snapshot_folder_name(test, name) == folder


def test_long_names_end_with_a_hash_of_the_whole_id() -> None:
    one, two = (snapshot_folder_name("test_x[" + "a" * 300 + tail + "]", "") for tail in "bc")
    assert one != two and len(one) == len(two) == 200
    assert (
        one[174] == "~" and one[183] == "-" and "~" not in snapshot_folder_name("test_x[a~b]", "")
    )
    # The test's own hash comes first, so a cut folder maps back to its test whatever its name.
    assert owns("test_x[" + "a" * 300 + "b]", one) and not owns("test_x[" + "a" * 300 + "c]", one)


DAMAGED = """
import jax.numpy as jnp


def test_sin(jaxinspect_snapshot):
    jaxinspect_snapshot(jnp.sin, {"args": {"x": "f32[4]"}})
"""


def test_a_damaged_stored_snapshot_fails_clearly_and_update_rewrites_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_model=DAMAGED)
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1)
    summary = pytester.path / "__jaxinspect__" / "test_model" / "test_sin" / "summary.json"
    good = summary.read_text()
    summary.write_text(good.replace('"flops": ', '"flops": "x", "was": ', 1))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*summary.json*--jaxinspect-update to rewrite it*"])
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1)
    assert summary.read_text() == good
    pytester.runpytest().assert_outcomes(passed=1)


SHARDED = """
import jax.numpy as jnp


def matmul(x, w):
    return x @ w


def test_sharded(jaxinspect_snapshot):
    jaxinspect_snapshot(
        matmul,
        {"mesh": {"data": 4, "model": 2}, "args": {"x": "f32[256@data,512@model]", "w": "W"}},
        fail_on="new-op:all-gather",
    )
"""


def test_the_fixture_snapshots_a_sharded_program(pytester: pytest.Pytester) -> None:
    """A mesh in the fixture's spec (the test process has 8 CPU devices): a change of
    sharding that makes the partitioner gather fails the test."""
    pytester.makepyfile(test_model=SHARDED.replace("W", "f32[512@model,1024]"))
    pytester.runpytest("--jaxinspect-update").assert_outcomes(passed=1)
    hlo = next((pytester.path / "__jaxinspect__").rglob("hlo.txt")).read_text()
    assert "all-reduce" in hlo and "num_partitions=8" in hlo
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.makepyfile(test_model=SHARDED.replace("W", "f32[512,1024@model]"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*new-op:all-gather*"])
