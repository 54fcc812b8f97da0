"""Benchmark: does `jaxinspect bench` report the cached latency an independent timeit measures?

In one process, for the same compiled executable and inputs, pairs of
  (a) the cached median of jaxinspect's steady-state measurement (what `bench` reports), and
  (b) `timeit` of `jax.block_until_ready(compiled(*args))`, median over repeats of batch/number,
are interleaved, and the median of the paired ratios a/b is printed.
  - MLP sample (mlp.py:predict, mlp.yaml): the accuracy ratio; goal 0.85 <= ratio <= 1.15.
  - tiny function (simple.py:scale_shift on f32[8]): the harness overhead over the raw
    dispatch time; goal ratio < 1.3.
Run with `make bench` (or `.venv/bin/python tests/benchmarks/bench_bench_accuracy.py`).
"""

from __future__ import annotations

import os
import statistics
import sys
import timeit
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

from jaxinspect.bench.steady import (  # noqa: E402
    Budget,
    CallInputs,
    measure_per_call,
    split_donated,
)
from jaxinspect.inputs.spec import Spec, load_spec, parse_arg_options  # noqa: E402
from jaxinspect.inputs.target import load_target  # noqa: E402
from jaxinspect.pipeline.stages import run_pipeline  # noqa: E402
from jaxinspect.stages.runner import prepare_call, x64_mode  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_programs"
PAIRS = 7
BUDGET_S = 0.3
REPEATS = 5


def _compiled(target: str, spec: Spec) -> tuple[Any, CallInputs]:
    loaded = load_target(target)
    with x64_mode(spec):
        call = prepare_call(loaded, spec, None)
        art = run_pipeline(loaded.function, call.plan, call.args, call.kwargs, target=target)
        args, kwargs = call.concrete_inputs(0, 2**31)
        return art.compiled, split_donated(call.plan, args, kwargs)


def _paired_ratio(name: str, target: str, spec: Spec) -> float:
    compiled, inputs = _compiled(target, spec)
    args, kwargs = inputs.args, inputs.kwargs
    ratios: list[float] = []
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(PAIRS):
        stats = measure_per_call(compiled, inputs, Budget(None, BUDGET_S, None), target=target)
        number = max(1, int(BUDGET_S / REPEATS / stats.median_s))
        batches = timeit.repeat(
            lambda: jax.block_until_ready(compiled(*args, **kwargs)), number=number, repeat=REPEATS
        )
        reference = statistics.median(b / number for b in batches)
        ours.append(stats.median_s)
        theirs.append(reference)
        ratios.append(stats.median_s / reference)
    ratio = statistics.median(ratios)
    print(
        f"{name:6s} jaxinspect median {statistics.median(ours) * 1e6:9.2f} us   "
        f"timeit {statistics.median(theirs) * 1e6:9.2f} us   ratio {ratio:.3f}   "
        f"(pairs: {', '.join(f'{r:.2f}' for r in ratios)})"
    )
    return ratio


def main() -> int:
    mlp = _paired_ratio(
        "mlp", str(SAMPLES / "mlp.py") + ":predict", load_spec(SAMPLES / "mlp.yaml")
    )
    tiny = _paired_ratio(
        "tiny", str(SAMPLES / "simple.py") + ":scale_shift", parse_arg_options(["x=f32[8]"])
    )
    ok = 0.85 <= mlp <= 1.15 and tiny < 1.3
    print(
        f"accuracy (mlp) goal 0.85-1.15: {mlp:.3f}; harness overhead (tiny) goal < 1.3: {tiny:.3f}"
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
