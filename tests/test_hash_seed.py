"""Issue #26 finding 1: compiled forms do not depend on Python's hash seed.

numpyro orders its ELBO terms by iterating a set of site names, so the traced program changed
with ``PYTHONHASHSEED`` and ``check`` failed at random right after ``check --update``. The CLI
now runs the user's code under a fixed seed; the pytest fixture, which cannot choose its
process's seed, names the seed as the cause of such a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax  # noqa: F401  (pytester's in-process runs unload what they import; jaxlib can't reload)
import pytest

from jaxinspect.process.hashseed import DEFAULT_SEED, SEED_VARIABLE, hash_seed, needs_reexec

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent

#: The issue's minimal program: the sum's order follows the set's, which follows the seed.
SET_ORDERED = """
import jax.numpy as jnp


def elbo(x):
    sites = {
        "tau": jnp.sum(x),
        "beta": jnp.sum(x**2),
        "bias": jnp.sum(jnp.sin(x)),
        "obs": jnp.sum(jnp.exp(x)),
    }
    total = 0.0
    for name in set(sites):
        total = total + sites[name]
    return total
"""

MANIFEST = """
targets:
  - target: elbo.py:elbo
    args: ["x=f32[8]"]
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "elbo.py").write_text(SET_ORDERED)
    (tmp_path / "jaxinspect.yaml").write_text(MANIFEST)
    return tmp_path


def _jaxinspect(folder: Path, *args: str, seed: str | None, **extra: str) -> int:
    """Exit code of ``python -m jaxinspect ARGS`` run from a shell whose seed is ``seed``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", SEED_VARIABLE)}
    env.update(extra, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    done = subprocess.run(
        [sys.executable, "-m", "jaxinspect", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode


def test_the_set_ordered_program_depends_on_the_seed(tmp_path: Path) -> None:
    """The control: under two seeds the program compiles differently, so check can fail."""
    folder = _project(tmp_path)
    assert _jaxinspect(folder, "check", "--update", seed=None, **{SEED_VARIABLE: "1"}) == 0
    assert _jaxinspect(folder, "check", seed=None, **{SEED_VARIABLE: "2"}) == 1


def test_check_passes_after_update_whatever_the_callers_seed(tmp_path: Path) -> None:
    """Ten ``check --update`` + ``check`` pairs, each under other seeds of the calling shell."""
    folder = _project(tmp_path)
    pairs = [(None, "1"), ("1", "2"), ("2", None), ("random", "3"), ("3", "random")]
    pairs += [("4", "5"), ("0", "6"), ("6", "0"), ("7", "8"), (None, None)]
    for update_seed, check_seed in pairs:
        assert _jaxinspect(folder, "check", "--update", seed=update_seed) == 0
        assert _jaxinspect(folder, "check", seed=check_seed) == 0, (update_seed, check_seed)


def test_which_invocations_start_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SEED_VARIABLE, raising=False)
    monkeypatch.setenv("PYTHONHASHSEED", "5")
    assert hash_seed() == DEFAULT_SEED
    assert needs_reexec(["check"]) and needs_reexec(["stages", "prog.py:f"])
    # No user code, or no user code yet: help, commands without targets, no command at all.
    assert not needs_reexec(["check", "--help"]) and not needs_reexec(["topologies"])
    assert not needs_reexec([]) and not needs_reexec(["--version"])
    monkeypatch.setenv("PYTHONHASHSEED", DEFAULT_SEED)
    assert not needs_reexec(["check"])  # already under the fixed seed: no second start
    monkeypatch.setenv(SEED_VARIABLE, "random")
    assert hash_seed() == "random" and needs_reexec(["check"])


SEED_CHECKING = """
import os

import jax.numpy as jnp

SEED = os.environ.get("PYTHONHASHSEED")


def f(x):
    if SEED != "0":
        raise RuntimeError(f"traced under PYTHONHASHSEED={SEED}")
    return jnp.sin(x)
"""


def test_bench_cold_processes_run_under_the_fixed_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real cold-run process, started from a process under another seed."""
    from jaxinspect.bench.cold import ColdConfig, run_cold_sample
    from jaxinspect.bench.jobs import SpecSource

    (tmp_path / "prog.py").write_text(SEED_CHECKING)
    monkeypatch.setenv("PYTHONHASHSEED", "9")
    monkeypatch.delenv(SEED_VARIABLE, raising=False)
    source = SpecSource(None, ("x=f32[4]",), (), None, None, None)
    config = ColdConfig(f"{tmp_path}/prog.py:f", source, None, 0, 1 << 20)
    sample = run_cold_sample(config, None)  # the function raises under any other seed
    assert sample.phases


FIXTURE_TEST = f"""
{SET_ORDERED}

def test_elbo(jaxinspect_snapshot):
    jaxinspect_snapshot(elbo, {{"args": {{"x": "f32[8]"}}}})
"""


def test_the_fixture_names_the_hash_seed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot taken under one seed fails under another, and the failure says why."""
    pytester.makepyfile(test_elbo=FIXTURE_TEST)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    pytester.runpytest_subprocess("--jaxinspect-update").assert_outcomes(passed=1)
    monkeypatch.setenv("PYTHONHASHSEED", "2")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "depends on Python's hash seed" in out
    assert "PYTHONHASHSEED=1 and 2, its jaxpr, stablehlo, hlo differ" in out
    assert "(this run: PYTHONHASHSEED=2)" in out


SEED_FREE_TEST = """
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * SCALE


def test_f(jaxinspect_snapshot):
    jaxinspect_snapshot(f, {"args": {"x": "f32[8]"}})
"""


def test_a_real_change_is_not_blamed_on_the_seed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_f=SEED_FREE_TEST.replace("SCALE", "2.0"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.runpytest_subprocess("--jaxinspect-update").assert_outcomes(passed=1)
    pytester.makepyfile(test_f=SEED_FREE_TEST.replace("SCALE", "3.0"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "changed:" in out and "hash seed" not in out
