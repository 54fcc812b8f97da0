"""Benchmark: whole-process wall time of ``jaxinspect diff`` against GNU ``diff -u``.

Builds two normalized HLO texts from a real compiled program (the sample transformer block,
its computations repeated with per-copy instruction names, as a deeper stack would print),
of 200,000 and 400,000 lines, with about 300 scattered changes (edited, deleted and inserted
lines); then times both tools on the same files, interleaved, and prints the ratios, for
jaxinspect's default structural diff and for ``--text-diff lines``. Besides wall time it
prints the ratio of CPU time (user + system, the forked counting child included), which a
machine shared with other work disturbs far less.

With ``--renumber N`` every Nth copy is also renamed throughout in the new text (names only),
so the structural pass has renamings to undo (``make bench`` runs both).

Run: .venv/bin/python tests/benchmarks/bench_snapdiff.py [--repeats 5] [--renumber 20]
Goals (issue #21): jaxinspect/GNU <= 2x, or <= 3x with ``--renumber`` (renamings to undo); and
jaxinspect(400k)/jaxinspect(200k) <= 2.3x.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"%([\w.\-]+)")


def real_hlo() -> str:
    """The normalized optimized HLO of sample_programs/transformer.py:block."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jaxinspect.inputs.spec import load_spec
    from jaxinspect.inputs.target import load_target
    from jaxinspect.snapshot.capture import capture_snapshot

    target = load_target(str(ROOT / "sample_programs" / "transformer.py") + ":block")
    snap = capture_snapshot(target, load_spec(ROOT / "sample_programs" / "transformer.yaml"))
    text = snap.text("hlo")
    assert text is not None
    return text


def build(hlo: str, lines: int) -> list[str]:
    """Copies of the module's body, each with its own instruction and computation names."""
    body = [line for line in hlo.splitlines() if not line.startswith("HloModule")]
    out = [hlo.splitlines()[0]]
    copy = 0
    while len(out) < lines:
        out.extend(_NAME.sub(lambda m, c=copy: f"%{m.group(1)}_L{c}", line) for line in body)
        copy += 1
    return out[:lines]


def mutate(lines: list[str], changes: int, seed: int) -> list[str]:
    """About ``changes`` scattered edits: 80% edited lines, 10% deletions, 10% insertions."""
    rng = random.Random(seed)
    out = list(lines)
    for index in sorted(rng.sample(range(1, len(lines) - 1), changes), reverse=True):
        roll = rng.random()
        if roll < 0.8:
            out[index] = out[index].replace("f32", "bf16", 1) + " /*edited*/"
        elif roll < 0.9:
            del out[index]
        else:
            out.insert(index, f"  %inserted.{index} = f32[] constant({index})")
    return out


def renumber(lines: list[str], every: int) -> list[str]:
    """Every ``every``-th copy of the module renamed throughout (``_L7`` -> ``_M7``): what XLA's
    renumbering after one added instruction looks like, a change in names only."""
    pattern = re.compile(r"_L(\d+)\b")

    def rename(match: re.Match[str]) -> str:
        copy = int(match.group(1))
        return f"_M{copy}" if copy % every == 0 else match.group(0)

    return [pattern.sub(rename, line) for line in lines]


# Measure an installed tool as users run it: with bytecode caching on (pip compiles .pyc
# files at install time); some sandboxes set PYTHONDONTWRITEBYTECODE, which would make every
# run recompile jaxinspect's sources.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, of the command and what it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} failed: {result.stderr.decode()}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--changes", type=int, default=300)
    parser.add_argument(
        "--renumber",
        type=int,
        default=0,
        help="Also rename every Nth copy of the module (names-only changes) in the new text.",
    )
    args = parser.parse_args()
    goal = 3.0 if args.renumber else 2.0
    gnu = shutil.which("diff")
    if gnu is None:
        raise SystemExit("GNU diff is needed for the reference timing")
    hlo = real_hlo()
    base = [sys.executable, "-m", "jaxinspect", "diff", "--color", "never"]
    modes = {"structural": [*base], "lines": [*base, "--text-diff", "lines"]}
    medians: dict[tuple[str, int], float] = {}
    cpus: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (200_000, 400_000):
            a = build(hlo, size)
            b = mutate(a, args.changes * size // 200_000, seed=size)
            if args.renumber:
                b = renumber(b, args.renumber)
            pa, pb = Path(tmp) / f"a{size}.txt", Path(tmp) / f"b{size}.txt"
            pa.write_text("\n".join(a) + "\n")
            pb.write_text("\n".join(b) + "\n")
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in (*modes, "gnu")}
            for _ in range(args.repeats):  # interleaved, so load affects all alike
                for name, command in modes.items():
                    times[name].append(timed([*command, str(pa), str(pb)]))
                times["gnu"].append(timed([gnu, "-u", str(pa), str(pb)]))
            gnu_s = statistics.median(wall for wall, _ in times["gnu"])
            gnu_cpu = statistics.median(cpu for _, cpu in times["gnu"])
            for name in modes:
                medians[name, size] = statistics.median(wall for wall, _ in times[name])
                cpus[name, size] = statistics.median(cpu for _, cpu in times[name])
                print(
                    f"{size:>7} lines, {args.changes * size // 200_000} changes, "
                    f"--text-diff {name}: jaxinspect diff {medians[name, size]:.3f} s, "
                    f"GNU diff -u {gnu_s:.3f} s, ratio {medians[name, size] / gnu_s:.2f}x "
                    f"(goal <= {goal:g}x); CPU {cpus[name, size]:.3f} s against "
                    f"{gnu_cpu:.3f} s, ratio {cpus[name, size] / gnu_cpu:.2f}x"
                )
    for name in modes:
        growth = medians[name, 400_000] / medians[name, 200_000]
        cpu_growth = cpus[name, 400_000] / cpus[name, 200_000]
        print(
            f"--text-diff {name}: 400k/200k time {growth:.2f}x (goal <= 2.3x), "
            f"CPU {cpu_growth:.2f}x"
        )


if __name__ == "__main__":
    main()
