"""Benchmark: snapshot folders after SIGKILLed and concurrent ``jaxinspect check --update`` runs.

A project of three targets alternates between two versions of its program, so that every
update rewrites every snapshot. Each kill trial starts ``check --update`` on the other version
and SIGKILLs it: half the trials at a random moment of the whole run, half at a random moment
of its write phase (from the first staged file on; writes are slowed with the test-only
``JAXINSPECT_TEST_STEP_DELAY`` so that kills land between renames). Then it runs
``check --update`` again, unkilled. Each concurrent trial starts two ``check --update`` at once.

A folder is *whole* when its snapshot files are byte-identical to one version's, with no
staging folder or lock file left. Goals (all 0): snapshots read as a mix right after a kill;
folders not whole after the next update; failed runs; snapshots lost or torn by concurrency.

Run: .venv/bin/python tests/benchmarks/bench_snapshot_reliability.py [--kills 100] [--concurrent 20]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PROGRAM = """
import jax.numpy as jnp


def scale(x):
    return x * SCALE


def shift(x):
    return jnp.tanh(x) + SCALE


def mix(x, y):
    return (x @ y) * SCALE
"""
MANIFEST = """
snapshot_dir: snaps
targets:
  - {target: prog.py:scale, args: ["x=f32[8]"]}
  - {target: prog.py:shift, args: ["x=f32[8]"]}
  - {target: prog.py:mix, args: ["x=f32[4,4]", "y=f32[4,4]"]}
"""
NAMES = ("prog_scale", "prog_shift", "prog_mix")
SCALES = ("2.0", "3.0")
STEP_DELAY = "0.01"
_LEFTOVERS = (".jaxinspect-staging", ".jaxinspect-lock")

Files = dict[str, bytes]


@dataclass
class Tally:
    """What the trials found; every count but ``trials`` and ``on_disk_mixed`` should be 0."""

    trials: int = 0
    kills_in_write_phase: int = 0
    #: Folders whose files were a mix of both versions on disk right after a kill (allowed:
    #: readers see the committed view, and the next update finishes the write).
    on_disk_mixed: int = 0
    read_as_mix: int = 0
    not_whole_after_update: int = 0
    failed_runs: int = 0
    lost_or_torn: int = 0
    problems: list[str] = field(default_factory=list)


class Project:
    """A temporary project whose program can be switched between the two versions."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "jaxinspect.yaml").write_text(MANIFEST)
        self.version = 0
        self.expected: list[dict[str, Files]] = []
        self.run_seconds = 0.0  # of an update with slowed writes, for kill times
        for version in (0, 1):
            self.switch(version)
            started = time.perf_counter()
            self.update(check=True, delay=STEP_DELAY)
            self.run_seconds = time.perf_counter() - started
            self.expected.append({name: self.files(name) for name in NAMES})

    def switch(self, version: int) -> None:
        self.version = version
        (self.root / "prog.py").write_text(PROGRAM.replace("SCALE", SCALES[version]))

    def start(self, delay: str | None = None) -> subprocess.Popen[bytes]:
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        if delay is not None:
            env["JAXINSPECT_TEST_STEP_DELAY"] = delay
        return subprocess.Popen(
            [sys.executable, "-m", "jaxinspect", "check", "--update", "--format", "json"],
            cwd=self.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def update(self, *, check: bool = False, delay: str | None = None) -> tuple[int, str]:
        process = self.start(delay)
        _, err = process.communicate()
        if check and process.returncode != 0:
            raise RuntimeError(f"check --update exited {process.returncode}: {err.decode()}")
        return process.returncode, err.decode()

    def files(self, name: str) -> Files:
        folder = self.root / "snaps" / name
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}

    def whole(self, name: str) -> int | None:
        """The version ``name``'s folder wholly holds on disk, or ``None``."""
        folder = self.root / "snaps" / name
        if any(os.path.lexists(folder / leftover) for leftover in _LEFTOVERS):
            return None
        found = self.files(name) if folder.is_dir() else {}
        for version, expected in enumerate(self.expected):
            if found == expected[name]:
                return version
        return None

    def describe(self, name: str) -> str:
        """What ``name``'s folder holds, for a problem report."""
        folder = self.root / "snaps" / name
        if not folder.is_dir():
            return "no folder"
        found = self.files(name)
        parts = [f"{n} left behind" for n in _LEFTOVERS if os.path.lexists(folder / n)]
        for file, content in sorted(found.items()):
            versions = [v for v, e in enumerate(self.expected) if e[name].get(file) == content]
            parts.append(f"{file}={'/'.join(map(str, versions)) or '?'}")
        return ", ".join(parts)

    def reads_whole(self, name: str) -> bool:
        """Whether a reader sees one version's snapshot in ``name``'s folder."""
        from jaxinspect.snapshot.view import read_committed

        seen = read_committed(self.root / "snaps" / name)
        return any(seen == expected[name] for expected in self.expected)


def kill_trial(project: Project, rng: random.Random, in_write_phase: bool, tally: Tally) -> None:
    """Kill one ``check --update`` to the other version, then update again and inspect."""
    new = 1 - project.version
    project.switch(new)
    process = project.start(STEP_DELAY)
    if in_write_phase:
        _wait_for_write_phase(project, process)
        time.sleep(rng.uniform(0.0, 12 * len(NAMES) * float(STEP_DELAY)))
    else:
        time.sleep(rng.uniform(0.0, project.run_seconds))
    process.send_signal(signal.SIGKILL)
    process.communicate()  # reaps it and closes its pipe
    tally.trials += 1
    tally.kills_in_write_phase += in_write_phase
    for name in NAMES:
        if project.whole(name) is None:
            tally.on_disk_mixed += 1
        if not project.reads_whole(name):
            tally.read_as_mix += 1
            tally.problems.append(f"trial {tally.trials}: {name} read as a mix after the kill")
    code, err = project.update()
    if code != 0:
        tally.failed_runs += 1
        tally.problems.append(f"trial {tally.trials}: next update exited {code}: {err.strip()}")
    for name in NAMES:
        if project.whole(name) != new:
            tally.not_whole_after_update += 1
            tally.problems.append(
                f"trial {tally.trials}: {name} not wholly version {new} after the update: "
                + project.describe(name)
            )


def concurrent_trial(project: Project, tally: Tally) -> None:
    """Two ``check --update`` to the other version at once: both succeed, nothing torn."""
    new = 1 - project.version
    project.switch(new)
    processes = [project.start(STEP_DELAY) for _ in range(2)]
    tally.trials += 1
    for process in processes:
        _, err = process.communicate()
        if process.returncode != 0:
            tally.failed_runs += 1
            tally.problems.append(
                f"trial {tally.trials}: exited {process.returncode}: {err.decode().strip()}"
            )
    for name in NAMES:
        if project.whole(name) != new:
            tally.lost_or_torn += 1
            tally.problems.append(
                f"trial {tally.trials}: {name} lost or torn: {project.describe(name)}"
            )


def _wait_for_write_phase(project: Project, process: subprocess.Popen[bytes]) -> None:
    stagings = [project.root / "snaps" / name / ".jaxinspect-staging" for name in NAMES]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if any(os.path.lexists(s) for s in stagings):
            return
        time.sleep(0.0005)


def run(kills: int, concurrent: int, seed: int = 0) -> tuple[Tally, Tally]:
    """Run the trials in a fresh temporary project; returns the kill and concurrent tallies."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="jaxinspect-reliability-") as tmp:
        project = Project(Path(tmp))
        killed = Tally()
        for index in range(kills):
            kill_trial(project, rng, in_write_phase=index % 2 == 0, tally=killed)
        raced = Tally()
        for _ in range(concurrent):
            concurrent_trial(project, raced)
    return killed, raced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100, help="SIGKILL trials (default 100)")
    parser.add_argument("--concurrent", type=int, default=20, help="concurrent-update trials")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    killed, raced = run(args.kills, args.concurrent, args.seed)
    print(f"SIGKILLed check --update trials:               {killed.trials}")
    print(f"  killed during the write phase:               {killed.kills_in_write_phase}")
    print(f"  folders mixed on disk right after the kill:  {killed.on_disk_mixed} (allowed)")
    print(f"  snapshots read as a mix after the kill:      {killed.read_as_mix}")
    print(f"  folders not fully old or new after next run: {killed.not_whole_after_update}")
    print(f"  next check --update runs that failed:        {killed.failed_runs}")
    print(f"concurrent-update trials (2 at once):          {raced.trials}")
    print(f"  snapshots lost or torn:                      {raced.lost_or_torn}")
    print(f"  runs that failed:                            {raced.failed_runs}")
    print(f"({time.perf_counter() - started:.0f} s)")
    for problem in (*killed.problems, *raced.problems):
        print(f"  ! {problem}")
    bad = killed.read_as_mix + killed.not_whole_after_update + killed.failed_runs
    return 1 if bad + raced.lost_or_torn + raced.failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
