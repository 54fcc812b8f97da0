"""A small run of ``tests/benchmarks/bench_snapshot_reliability.py`` for CI (real processes)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "benchmarks"))

import bench_snapshot_reliability as bench  # noqa: E402


def test_killed_and_concurrent_updates_leave_whole_snapshots(tmp_path: Path) -> None:
    """Issue #11 items 3 and 4: SIGKILLed and concurrent ``check --update`` runs, 3 trials."""
    project = bench.Project(tmp_path)
    rng = random.Random(11)
    killed = bench.Tally()
    bench.kill_trial(project, rng, in_write_phase=True, tally=killed)
    bench.kill_trial(project, rng, in_write_phase=False, tally=killed)
    raced = bench.Tally()
    bench.concurrent_trial(project, raced)
    assert killed.problems == [] and raced.problems == []
    assert (killed.trials, killed.kills_in_write_phase, raced.trials) == (2, 1, 1)


def test_plugin_under_xdist_and_partial_sessions_loses_and_deletes_nothing(tmp_path: Path) -> None:
    """Issue #22: one trial each of ``pytest -n 2`` and ``pytest -n 4 --jaxinspect-update`` on
    the benchmark's 30-test suite, then ``--collect-only``, ``--setup-plan`` and ``--lf``."""
    pytest.importorskip("xdist")
    import bench_plugin_reliability as plugin_bench

    plain, updating, partial = plugin_bench.run(1, tmp_path)
    assert plain.problems == updating.problems == partial.problems == []
    assert (plain.trials, updating.trials, partial.trials) == (1, 1, 3)
    assert plain.lost == updating.lost == partial.partial_deleted == 0
    assert updating.planted_deleted == 1
