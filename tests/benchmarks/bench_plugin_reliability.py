"""Benchmark: the pytest plugin's snapshots under pytest-xdist and sessions that run a part.

A generated suite of 30 snapshot tests over 3 modules (each test its own shapes) is written
once. Then each trial runs, in a fresh process, either ``pytest -n 2`` or ``pytest -n 4
--jaxinspect-update`` (pytest-randomly shuffles the order when installed) with one unused
snapshot planted, and counts the suite's snapshots still on disk and whole afterwards
(*lost*, goal 0) and whether the planted one was deleted by the update (goal: every time).
Last, with a planted unused snapshot and one test failing in the cache, ``--collect-only``,
``--setup-plan`` and ``--lf`` sessions run with ``--jaxinspect-update``: snapshots *deleted*
by them, the planted one included, goal 0.

Run: .venv/bin/python tests/benchmarks/bench_plugin_reliability.py [--trials 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

MODULES = ("test_alpha", "test_beta", "test_gamma")
TESTS_PER_MODULE = 10
TEST = """
def test_{name}(jaxinspect_snapshot):
    if os.environ.get("BENCH_FAIL") == "{name}":
        raise AssertionError("made to fail by the benchmark")
    jaxinspect_snapshot(jnp.sin, {{"args": {{"x": "f32[{size}]"}}}})
"""
CONFTEST = 'import os\n\nos.environ.setdefault("JAX_PLATFORMS", "cpu")\n'
PARTIAL_SESSIONS = (("--collect-only",), ("--setup-plan",), ("--lf",))


@dataclass
class Tally:
    """What the trials found."""

    trials: int = 0
    lost: int = 0  # suite snapshots missing or not readable after a run
    failed_runs: int = 0
    planted_deleted: int = 0  # update runs that deleted the planted unused snapshot
    partial_deleted: int = 0  # snapshots deleted by a partial session
    problems: list[str] = field(default_factory=list)


class Suite:
    """The generated test suite in ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.joinpath("conftest.py").write_text(CONFTEST)
        self.names: dict[str, list[str]] = {}
        for index, module in enumerate(MODULES):
            names = [f"{module[5:]}{i}" for i in range(TESTS_PER_MODULE)]
            body = "import os\n\nimport jax.numpy as jnp\n" + "".join(
                TEST.format(name=n, size=index * TESTS_PER_MODULE + i + 1)
                for i, n in enumerate(names)
            )
            root.joinpath(f"{module}.py").write_text(body)
            self.names[module] = names
        self.pytest("--jaxinspect-update", "-p", "no:xdist")

    def pytest(self, *args: str, fail: str | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, BENCH_FAIL=fail or "")
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    def folders(self) -> list[Path]:
        return [
            self.root / "__jaxinspect__" / module / f"test_{name}"
            for module, names in self.names.items()
            for name in names
        ]

    def missing(self) -> list[Path]:
        from jaxinspect.errors import JaxInspectError
        from jaxinspect.snapshot.store import read_snapshot

        gone = []
        for folder in self.folders():
            try:
                read_snapshot(folder)
            except JaxInspectError:
                gone.append(folder)
        return gone

    def plant(self, index: int) -> Path:
        """An unused snapshot: a copy of one test's under a name no test has."""
        source = self.folders()[index % len(self.folders())]
        planted = source.parent / "test_unused"
        if not planted.exists():
            shutil.copytree(source, planted)
        return planted


def xdist_trial(suite: Suite, index: int, update: bool, tally: Tally) -> None:
    planted = suite.plant(index)
    args = ("-n", "4", "--jaxinspect-update") if update else ("-n", "2")
    result = suite.pytest(*args)
    tally.trials += 1
    expected_ret = 0 if update else 1  # without update the planted snapshot fails the session
    if result.returncode != expected_ret:
        tally.failed_runs += 1
        tally.problems.append(f"pytest {' '.join(args)}: exit {result.returncode}")
        tally.problems.append(result.stdout[-2000:])
    missing = suite.missing()
    tally.lost += len(missing)
    tally.problems += [f"pytest {' '.join(args)} lost {m}" for m in missing]
    if update and not planted.exists():
        tally.planted_deleted += 1


def partial_trials(suite: Suite, tally: Tally) -> None:
    planted = suite.plant(0)
    suite.pytest("-p", "no:xdist", fail=suite.names[MODULES[0]][3])  # the cache notes it
    for session in PARTIAL_SESSIONS:
        result = suite.pytest(*session, "--jaxinspect-update", "-p", "no:xdist")
        tally.trials += 1
        deleted = len(suite.missing()) + (0 if planted.exists() else 1)
        tally.partial_deleted += deleted
        if deleted:
            tally.problems.append(f"pytest {session[0]} --jaxinspect-update deleted {deleted}")
            tally.problems.append(result.stdout[-2000:])
            suite.pytest("--jaxinspect-update", "-p", "no:xdist")  # rewrite for the next one
            planted = suite.plant(0)


def run(trials: int, root: Path | None = None) -> tuple[Tally, Tally, Tally]:
    """``trials`` runs of each xdist session, then the partial sessions."""
    with tempfile.TemporaryDirectory(prefix="jaxinspect-plugin-") as tmp:
        suite = Suite(root or Path(tmp))
        plain, updating, partial = Tally(), Tally(), Tally()
        for index in range(trials):
            xdist_trial(suite, index, False, plain)
            xdist_trial(suite, index, True, updating)
            print(f"  trial {index + 1}/{trials}: lost {plain.lost + updating.lost}", flush=True)
        partial_trials(suite, partial)
    return plain, updating, partial


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="trials of each (default 20)")
    args = parser.parse_args()
    started = time.perf_counter()
    plain, updating, partial = run(args.trials)
    suite_size = len(MODULES) * TESTS_PER_MODULE
    print(f"suite: {suite_size} snapshot tests over {len(MODULES)} modules")
    print(f"pytest -n 2 trials:                          {plain.trials}")
    print(f"  snapshots lost:                            {plain.lost}")
    print(f"  runs with an unexpected exit code:         {plain.failed_runs}")
    print(f"pytest -n 4 --jaxinspect-update trials:      {updating.trials}")
    print(f"  snapshots lost:                            {updating.lost}")
    print(f"  runs with an unexpected exit code:         {updating.failed_runs}")
    print(f"  planted unused snapshot deleted:           {updating.planted_deleted}")
    print("--collect-only, --setup-plan, --lf sessions with --jaxinspect-update:")
    print(f"  sessions:                                  {partial.trials}")
    print(f"  snapshots deleted:                         {partial.partial_deleted}")
    print(f"({time.perf_counter() - started:.0f} s)")
    for problem in (*plain.problems, *updating.problems, *partial.problems):
        print(f"  ! {problem}")
    bad = plain.lost + updating.lost + plain.failed_runs + updating.failed_runs
    bad += partial.partial_deleted + (updating.trials - updating.planted_deleted)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
