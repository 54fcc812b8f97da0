"""A small run of ``tests/benchmarks/bench_snapshot_reliability.py`` for CI (real processes)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

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
