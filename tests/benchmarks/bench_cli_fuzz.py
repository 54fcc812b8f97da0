"""Reliability benchmark: a property-based fuzz of the whole CLI, 2,000+ examples (#11, #22).

Random target files (that print, from threads too, ``sys.exit``, raise ``KeyboardInterrupt``
or other ``BaseException``s, fail to trace...), random specs (malformed, aliased, nested,
tagged), random ``--baseline`` files (broken, hostile, for another target), random meshes and
device counts, random argv of every command (``bench`` against those baselines), run in this
process through the console script's ``jaxinspect.cli.entry.run`` (see tests/clifuzz.py).
Every example must exit 0-3, print no traceback, keep the target's prints and terminal escapes
off stdout, give parseable stdout with --format json, and end within ``HANG_S``.

Run: .venv/bin/python tests/benchmarks/bench_cli_fuzz.py [--examples 2000] [--seed N]
Prints: examples run, exit codes seen, tracebacks, exit 4 and hangs (goal: 0); exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for clifuzz
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from clifuzz import HANG_S, Example, examples, run_example, violations  # noqa: E402


def main() -> int:
    """Run the fuzz and print its figures; 1 when any example broke an invariant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=None, help="default: a random one")
    options = parser.parse_args()
    chosen_seed = options.seed if options.seed is not None else random.randrange(2**32)
    codes: collections.Counter[int] = collections.Counter()
    commands: collections.Counter[str] = collections.Counter()
    broken: list[tuple[list[str], Example, str]] = []

    @seed(chosen_seed)
    @settings(
        max_examples=options.examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],  # count every example; no shrinking
        suppress_health_check=list(HealthCheck),
    )
    @given(examples())
    def one(example: Example) -> None:
        outcome = run_example(example)
        codes[outcome.code] += 1
        commands[example.argv[0]] += 1
        found = violations(example, outcome)
        if found:
            broken.append((found, example, outcome.stderr[-2000:]))

    start = time.perf_counter()
    one()
    elapsed = time.perf_counter() - start
    total = sum(codes.values())
    tracebacks = sum(1 for found, _, _ in broken if "traceback on stderr" in found)
    exit4 = codes.get(4, 0)
    hangs = sum(1 for found, _, _ in broken if any(f.startswith("hang") for f in found))
    print(f"CLI fuzz (seed {chosen_seed}): {total} examples in {elapsed:.0f} s")
    print("  exit codes: " + ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())))
    print("  commands:   " + ", ".join(f"{c} {n}" for c, n in sorted(commands.items())))
    print(f"  tracebacks or exit 4: {len({id(b) for b in broken if _is_crash(b[0])})}")
    print(f"    (tracebacks {tracebacks}, exit 4 {exit4}; goal 0)")
    print(f"  hangs (over {HANG_S:.0f} s): {hangs} (goal 0)")
    print(
        f"RESULT: {total} examples, {tracebacks} tracebacks, {exit4} exit 4, {hangs} hangs, "
        f"{len(broken)} breaking any invariant"
    )
    print(f"  examples breaking any invariant: {len(broken)} (goal 0)")
    for found, example, stderr in broken[:5]:
        print(f"\n  {found}: {' '.join(example.argv)}\n    " + stderr.replace("\n", "\n    "))
    return 1 if broken else 0


def _is_crash(found: list[str]) -> bool:
    return any(f == "traceback on stderr" or f.startswith("exit code 4") for f in found)


if __name__ == "__main__":
    sys.exit(main())
