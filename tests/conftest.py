"""Shared fixtures: CPU-only JAX, a CLI runner with separate stdout/stderr, sample paths.

Test modules import its helpers as ``from conftest import ...``: the module pytest loaded
(``tests/`` has no ``__init__.py``); ``tests.conftest`` would run this file a second time.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Before anything imports jax: the suite runs on the CPU backend, one device, 32-bit mode.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.pop("JAX_ENABLE_X64", None)
# Nor do the caller's terminal, rich or jaxinspect settings change results: tests that need
# one set it (run_cli: COLUMNS and NO_COLOR). JAXINSPECT_UPDATE_GOLDEN is the suite's own.
for _name in [n for n in os.environ if n.startswith("JAXINSPECT_")]:
    if _name != "JAXINSPECT_UPDATE_GOLDEN":
        del os.environ[_name]
for _name in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
    os.environ.pop(_name, None)

import jax  # noqa: E402

# Eight CPU devices, set before the backend starts, so sharded programs compile and run in
# process; single-device runs still use device 0 alone.
jax.config.update("jax_num_cpu_devices", 8)

from hypothesis import HealthCheck, settings  # noqa: E402
from typer.testing import CliRunner, Result  # noqa: E402

from jaxinspect.cli.app import app  # noqa: E402

# Hypothesis's per-example deadline (200 ms) and its too-slow health check measure wall time:
# on a loaded machine, or beside other pytest-xdist workers, they fail tests that are fine.
settings.register_profile("jaxinspect", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("jaxinspect")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_programs"


@pytest.fixture
def run_cli() -> Callable[..., Result]:
    """Invoke the CLI in-process; ``result.stdout`` and ``result.stderr`` are kept apart."""
    runner = CliRunner()

    def invoke(*args: str, catch_exceptions: bool = False) -> Result:
        return runner.invoke(
            app,
            [str(a) for a in args],
            catch_exceptions=catch_exceptions,
            env={"COLUMNS": "100", "NO_COLOR": "1"},
        )

    return invoke


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, with inner runs that write no bytecode and keep the file order.

    The tests rewrite a test file between two runs, often with its size unchanged
    (``2.0`` -> ``3.0``); pytest's rewritten ``.pyc`` from the first run, keyed on the source's
    mtime in whole seconds and its size, would then run the old test (see ``edit_module``).
    """
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    # Inner runs in file order (pytest-randomly would shuffle them too): tests match their
    # output line by line. pytester cleared PYTEST_ADDOPTS when it was created.
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    return pytester


def edit_module(path: Path, source: str) -> None:
    """Rewrite a module the test already imported, so that the next import sees the edit.

    Python trusts a ``.pyc`` whose recorded source mtime (whole seconds) and size match the
    source; an edit that keeps the size and lands in the second of the first import (a fast
    machine, or simply luck) would run the old code. The bytecode goes with the edit.
    """
    path.write_text(source)
    Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)


def fork_free_python(code: str, *args: object) -> subprocess.CompletedProcess[str]:
    """``code`` run in a fresh Python process with ``args``, its output captured: no jax is
    loaded there, so ``diff``'s work may fork (``snapshot.background``)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env
    )


def sample(name: str) -> str:
    """Path of a file in sample_programs/, as a string for CLI arguments."""
    return str(SAMPLES / name)


def validate_document(document: object, schema_file: str) -> None:
    """Validate ``document`` against ``jaxinspect/schemas/<schema_file>``, resolving its
    references to the other schema files (a case's ``report`` is a stages document)."""
    import json

    import jsonschema
    from referencing import Registry, Resource

    folder = ROOT / "jaxinspect" / "schemas"
    schemas = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in schemas if "$id" in s
    )
    schema = json.loads((folder / schema_file).read_text())
    jsonschema.Draft202012Validator(schema, registry=registry).validate(document)


#: A program of two targets and the ``jaxinspect.yaml`` manifest that snapshots both, for the
#: ``check`` and snapshot-store tests.
CHECK_PROGRAM = """
import jax.numpy as jnp


def double(x):
    return x * 2.0


def shifted(x):
    return x + 1.0
"""
CHECK_MANIFEST = """
snapshot_dir: snaps
targets:
  - target: prog.py:double
    args: ["x=f32[4]"]
  - target: prog.py:shifted
    name: shift
    args: ["x=f32[4]"]
"""


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """The seed of the random test order, also under ``-q`` (which hides pytest-randomly's)."""
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.hasplugin("randomly") and isinstance(seed, int):
        terminalreporter.write_line(
            f"random order: --randomly-seed={seed} repeats it; -p no:randomly keeps file order"
        )
