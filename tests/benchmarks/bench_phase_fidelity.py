"""Phase fidelity: `stages` trace/lower/compile timings against a plain jax.stages script.

For each sample, runs `jaxinspect stages --format json` and a plain script that times the same
three steps with time.perf_counter (garbage collector left on, as a user's script has it), each
in a fresh process, in pairs whose order alternates. The plain script creates JAX's backend
before timing, as any script that has made an array has (and as `stages` has when it traces);
otherwise its `lower` would include creating the CPU client. Prints per phase the medians of
both and the median of the per-pair ratios (jaxinspect / plain). Goal: each within 0.8-1.25.
Run with `make bench` (or `--pairs N`); exits 1 when a ratio misses the goal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stages import CASES, ENV, SAMPLES  # noqa: E402  (the same samples and shapes)

PAIRS = 9
PHASES = ("trace", "lower", "compile")
GOAL = (0.8, 1.25)

# What a user writes to time the three steps of one function: nothing else in the process.
PLAIN = r"""
import importlib.util, json, sys, time
import jax, jax.numpy as jnp
path, name, shapes = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spec = importlib.util.spec_from_file_location("m", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

def tree(node):
    if isinstance(node, dict):
        return {k: tree(v) for k, v in node.items()}
    return jax.ShapeDtypeStruct(tuple(node), jnp.float32)

args, static = tree(shapes["args"]), shapes["static"]
jitted = jax.jit(getattr(mod, name), static_argnames=tuple(static))
jax.devices()  # the backend exists already in any script that has made an array
t0 = time.perf_counter()
traced = jitted.trace(**args, **static)
t1 = time.perf_counter()
lowered = traced.lower()
t2 = time.perf_counter()
lowered.compile()
t3 = time.perf_counter()
print(json.dumps({"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2}))
"""


def _phases(command: list[str], read: str) -> dict[str, float]:
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=ENV)
    document = json.loads(done.stdout)
    if read == "stages":
        return {p: float(document["timings"][f"{p}_s"]) for p in PHASES}
    return {p: float(document[p]) for p in PHASES}


def _pairs(ours: list[str], plain: list[str], pairs: int) -> dict[str, list[tuple[float, float]]]:
    """(jaxinspect, plain) seconds per phase for each pair; the order alternates to cancel drift."""
    _phases(ours, "stages"), _phases(plain, "plain")  # warm the OS file cache for both
    out: dict[str, list[tuple[float, float]]] = {p: [] for p in PHASES}
    for i in range(pairs):
        if i % 2:
            theirs, mine = _phases(plain, "plain"), _phases(ours, "stages")
        else:
            mine, theirs = _phases(ours, "stages"), _phases(plain, "plain")
        for phase in PHASES:
            out[phase].append((mine[phase], theirs[phase]))
    return out


def main() -> int:
    """Print the table; 0 when every median ratio is within the goal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    pairs = parser.parse_args().pairs
    exe = str(Path(sys.executable).parent / "jaxinspect")
    low, high = GOAL
    print(f"{'sample':<14}{'phase':<9}{'jaxinspect':>12}{'plain':>11}{'ratio':>8}   goal")
    ok = True
    for label, (file, name, spec, shapes) in CASES.items():
        target = str(SAMPLES / file) + ":" + name
        ours = [exe, "stages", target, "--shapes", str(SAMPLES / spec), "--format", "json"]
        plain = [sys.executable, "-c", PLAIN, str(SAMPLES / file), name, json.dumps(shapes)]
        for phase, samples in _pairs(ours + ["--no-execute"], plain, pairs).items():
            ratio = statistics.median(m / t for m, t in samples)
            mine = statistics.median(m for m, _ in samples)
            theirs = statistics.median(t for _, t in samples)
            verdict = "ok" if low <= ratio <= high else "MISS"
            ok = ok and verdict == "ok"
            print(
                f"{label:<14}{phase:<9}{mine * 1e3:>10.1f}ms{theirs * 1e3:>9.1f}ms"
                f"{ratio:>8.3f}   {low}-{high} {verdict}"
            )
    print(f"(median of {pairs} paired fresh-process runs per sample; ratio = jaxinspect / plain)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
