"""Benchmark: ``jaxinspect check --jobs 2`` against ``--jobs 1`` on 20 targets.

Writes a project of 20 distinct targets (the sample transformer block at 20 sequence lengths,
so no compile is a cache hit), then times whole ``check`` processes, alternating ``--jobs 1``
and ``--jobs 2`` so that drift of a shared machine hits both alike, and prints the median wall
ratio, checking that both print the same report.

It also prints the floor no scheduling can beat: the CPU time of a ``--jobs 1`` run divided by
the cores, over its wall time. XLA's CPU compiler already runs more than one thread per
compile, so on a 2-core machine that floor is well above 0.5.

Run: .venv/bin/python tests/benchmarks/bench_check_jobs.py [--repeats 5]
Goal: median wall(--jobs 2) / wall(--jobs 1) <= 0.7 on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = 20

SAMPLES = ROOT / "sample_programs"


def write_project(folder: Path) -> None:
    (folder / "prog.py").write_text((SAMPLES / "transformer.py").read_text())
    spec = (SAMPLES / "transformer.yaml").read_text()
    rows = []
    for i in range(TARGETS):
        seq = 16 + 8 * i
        (folder / f"seq{seq}.yaml").write_text(spec.replace("f32[2,64,128]", f"f32[2,{seq},128]"))
        rows.append(
            f"  - target: prog.py:block\n    name: block_{seq}\n    shapes: seq{seq}.yaml\n"
        )
    (folder / "jaxinspect.yaml").write_text("snapshot_dir: snaps\ntargets:\n" + "".join(rows))


def run(folder: Path, jobs: int) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stdout of one ``check`` process."""
    command = [sys.executable, "-m", "jaxinspect", "check", "--jobs", str(jobs)]
    env = dict(os.environ, JAX_PLATFORMS="cpu", COLUMNS="120")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"check --jobs {jobs} failed ({done.returncode}):\n{done.stderr}")
    return wall, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder)
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        subprocess.run(
            [sys.executable, "-m", "jaxinspect", "check", "--update"],
            cwd=folder,
            env=env,
            check=True,
            capture_output=True,
        )
        ratios, floors = [], []
        walls: dict[int, list[float]] = {1: [], 2: []}
        cores = os.cpu_count() or 1
        for _ in range(repeats):
            one, cpu_one, out_one = run(folder, 1)
            two, _, out_two = run(folder, 2)
            if out_one != out_two:
                raise SystemExit("--jobs 2 printed a different report than --jobs 1")
            walls[1].append(one)
            walls[2].append(two)
            ratios.append(two / one)
            floors.append(max(cpu_one / cores, one / TARGETS) / one)
    print(f"check of {TARGETS} targets, {repeats} alternating pairs, {cores} CPUs")
    for jobs, values in walls.items():
        print(f"  --jobs {jobs}: median wall {statistics.median(values):.2f} s")
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= 0.7 else "ABOVE GOAL"
    print(f"  wall(--jobs 2) / wall(--jobs 1): median {ratio:.2f} (goal <= 0.7) {verdict}")
    print(
        f"  floor (CPU time of --jobs 1 / {cores} cores / its wall): "
        f"median {statistics.median(floors):.2f}"
    )


if __name__ == "__main__":
    main()
