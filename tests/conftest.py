"""Shared fixtures: CPU-only JAX, a CLI runner with separate stdout/stderr, sample paths.

Test modules import its helpers as ``from conftest import ...``: the module pytest loaded
(``tests/`` has no ``__init__.py``); ``tests.conftest`` would run this file a second time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

# Before anything imports jax: the suite runs on the CPU backend, one device, 32-bit mode.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.pop("JAX_ENABLE_X64", None)

import jax  # noqa: E402

# Eight CPU devices, set before the backend starts, so sharded programs compile and run in
# process; single-device runs still use device 0 alone.
jax.config.update("jax_num_cpu_devices", 8)

from typer.testing import CliRunner, Result  # noqa: E402

from jaxinspect.cli.app import app  # noqa: E402

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


def sample(name: str) -> str:
    """Path of a file in sample_programs/, as a string for CLI arguments."""
    return str(SAMPLES / name)


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
