"""Benchmark `jaxinspect stages --format json` against a plain jax.stages script doing the same.

Prints, per sample, the median ratio of paired wall times (jaxinspect / reference) over fresh
processes, and the same for `jaxinspect --help` against `python -c "import typer, rich"`.
Run with `make bench`. Goals: stages <= 1.10, --help <= 1.5.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_programs"
PAIRS = 7  # default; --pairs N for a steadier median on a noisy machine
RUNS = 20  # cached calls timed by both sides

# The reference: what a user would hand-write with jax.stages to get the same report.
REFERENCE = r"""
import importlib.util, json, statistics, sys, time
import jax, jax.numpy as jnp, numpy as np
path, name, shapes, runs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
spec = importlib.util.spec_from_file_location("m", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
fn = getattr(mod, name)

def tree(node, leaf):
    if isinstance(node, dict):
        return {k: tree(v, leaf) for k, v in node.items()}
    return leaf(node)

args = tree(shapes["args"], lambda s: jax.ShapeDtypeStruct(tuple(s), jnp.float32))
static = shapes["static"]
t0 = time.perf_counter()
traced = jax.jit(fn, static_argnames=tuple(static)).trace(**args, **static)
t1 = time.perf_counter()
lowered = traced.lower()
t2 = time.perf_counter()
compiled = lowered.compile()
t3 = time.perf_counter()
texts = [str(traced.jaxpr), lowered.as_text(), compiled.as_text()]
cost = compiled.cost_analysis()
mem = compiled.memory_analysis()
rng = np.random.default_rng(0)
inputs = tree(shapes["args"], lambda s: jax.device_put(rng.standard_normal(s).astype(np.float32)))
s = time.perf_counter()
jax.block_until_ready(compiled(**inputs))
first = time.perf_counter() - s
samples = []
for _ in range(runs):
    s = time.perf_counter()
    jax.block_until_ready(compiled(**inputs))
    samples.append(time.perf_counter() - s)
print(json.dumps({"flops": cost.get("flops"), "temp": mem.temp_size_in_bytes,
                  "chars": sum(map(len, texts)), "trace": t1 - t0, "lower": t2 - t1,
                  "compile": t3 - t2, "first": first, "cached": statistics.median(samples)}))
"""

CASES = {
    "mlp": (
        "mlp.py",
        "predict",
        "mlp.yaml",
        {
            "args": {
                "params": {"w1": [784, 256], "b1": [256], "w2": [256, 10], "b2": [10]},
                "x": [128, 784],
            },
            "static": {},
        },
    ),
    "transformer": (
        "transformer.py",
        "block",
        "transformer.yaml",
        {
            "args": {
                "params": {
                    "wq": [128, 128],
                    "wk": [128, 128],
                    "wv": [128, 128],
                    "wo": [128, 128],
                    "ln1": [128],
                    "ln2": [128],
                    "w1": [128, 512],
                    "w2": [512, 128],
                },
                "x": [2, 64, 128],
            },
            "static": {"num_heads": 4},
        },
    ),
}


# Measure an installed tool as users run it: with bytecode caching on (pip compiles .pyc
# files at install time). Some sandboxes set PYTHONDONTWRITEBYTECODE, which would make every
# run recompile jaxinspect's sources while jax's stay precompiled in site-packages.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - start


def paired_ratio(ours: list[str], reference: list[str], pairs: int) -> tuple[float, float, float]:
    """Median of per-pair ratios; the order within a pair alternates to cancel drift."""
    ratios, our_times, ref_times = [], [], []
    wall(ours), wall(reference)  # warm the OS file cache for both
    for i in range(pairs):
        if i % 2:
            r, o = wall(reference), wall(ours)
        else:
            o, r = wall(ours), wall(reference)
        ratios.append(o / r)
        our_times.append(o)
        ref_times.append(r)
    return statistics.median(ratios), statistics.median(our_times), statistics.median(ref_times)


def main() -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    pairs = parser.parse_args().pairs

    exe = str(Path(sys.executable).parent / "jaxinspect")
    print(f"{'benchmark':<28}{'jaxinspect':>12}{'reference':>12}{'ratio':>8}{'goal':>7}")
    for label, (file, name, spec, shapes) in CASES.items():
        ours = [
            exe,
            "stages",
            str(SAMPLES / file) + ":" + name,
            "--shapes",
            str(SAMPLES / spec),
            "--format",
            "json",
            "--runs",
            str(RUNS),
        ]
        ref = [
            sys.executable,
            "-c",
            REFERENCE,
            str(SAMPLES / file),
            name,
            json.dumps(shapes),
            str(RUNS),
        ]
        ratio, o, r = paired_ratio(ours, ref, pairs)
        print(f"{'stages ' + label:<28}{o:>11.3f}s{r:>11.3f}s{ratio:>8.3f}{'1.10':>7}")
    ratio, o, r = paired_ratio([exe, "--help"], [sys.executable, "-c", "import typer, rich"], pairs)
    print(f"{'--help vs import typer,rich':<28}{o:>11.3f}s{r:>11.3f}s{ratio:>8.3f}{'1.50':>7}")
    print(f"(median of {pairs} paired fresh-process runs each; {RUNS} cached calls per run;")
    print(" bytecode caching on, as after pip install)")


if __name__ == "__main__":
    main()
