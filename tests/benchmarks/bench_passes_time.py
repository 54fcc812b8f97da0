"""Benchmark: what `passes --time` finds on the samples, and the profiler's cost on compile time.

For each sample (mlp.py:predict, transformer_stack.py:stack):
  - `passes --time` once (time_passes): the three slowest XLA passes, and how much of the
    compile the profiler's events account for (goal: 90% to 110%);
  - the profiler's overhead: one traced function lowered and compiled afresh PAIRS times
    outside a profile and PAIRS times inside one (`jax.profiler.trace`, the options
    `passes --time` uses), interleaved; the median of the paired ratios inside/outside is
    printed (1.00: no cost).
Run with `.venv/bin/python tests/benchmarks/bench_passes_time.py` (`make bench`).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

from jaxinspect import jaxapi  # noqa: E402
from jaxinspect.inputs.spec import load_spec  # noqa: E402
from jaxinspect.inputs.target import load_target  # noqa: E402
from jaxinspect.passes.timereport import PASS  # noqa: E402
from jaxinspect.passes.timing import time_passes  # noqa: E402
from jaxinspect.pipeline.stages import run_pipeline  # noqa: E402
from jaxinspect.stages.runner import InspectOptions, prepare_call  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_programs"
CASES = [("mlp.py:predict", "mlp.yaml"), ("transformer_stack.py:stack", "transformer_stack.yaml")]
PAIRS = 5


def _report(target: str, spec: str) -> None:
    report = time_passes(load_target(target), load_spec(SAMPLES / spec), InspectOptions())
    times = report.time
    assert times is not None and times.steps is not None and times.coverage is not None
    by_name: dict[str, float] = {}
    for step in times.steps:
        if step.kind == PASS and step.name != times.steps[0].name:
            by_name[step.name] = by_name.get(step.name, 0.0) + step.self_s
    top = sorted(by_name.items(), key=lambda item: -item[1])[:3]
    listed = ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in top)
    print(f"  compile {times.compile_s * 1e3:.0f} ms (profiled); events {times.coverage:.1%}")
    print(f"  top passes (own time): {listed}; top_pass: {times.top_pass}")


def _compile_s(traced: Any, profiled: bool) -> float:
    """One fresh compilation: JAX's caches cleared, the module lowered again."""
    jax.clear_caches()
    lowered = traced.lower()
    if not profiled:
        start = time.perf_counter()
        lowered.compile()
        return time.perf_counter() - start
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    folder = tempfile.mkdtemp(prefix="bench-passtime-")
    try:
        with jax.profiler.trace(folder, profiler_options=options):
            start = time.perf_counter()
            lowered.compile()
            return time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _overhead(target: str, spec: str) -> None:
    loaded = load_target(target)
    call = prepare_call(loaded, load_spec(SAMPLES / spec), None)
    traced = run_pipeline(
        call.function, call.plan, call.args, call.kwargs, target=target, until="trace"
    ).traced
    ratios, plain, inside = [], [], []
    with jaxapi.compilation_cache_disabled():
        _compile_s(traced, False)  # warm: the first compile in a process pays for set-up
        for _ in range(PAIRS):
            plain.append(_compile_s(traced, False))
            inside.append(_compile_s(traced, True))
            ratios.append(inside[-1] / plain[-1])
    print(
        f"  compile outside {statistics.median(plain) * 1e3:.0f} ms, inside the profiler "
        f"{statistics.median(inside) * 1e3:.0f} ms: ratio {statistics.median(ratios):.2f} "
        f"(median of {PAIRS} pairs)"
    )


def main() -> None:
    for target, spec in CASES:
        print(f"{target} ({spec})")
        _report(str(SAMPLES / target.split(":")[0]) + ":" + target.split(":")[1], spec)
        _overhead(str(SAMPLES / target.split(":")[0]) + ":" + target.split(":")[1], spec)


if __name__ == "__main__":
    main()
