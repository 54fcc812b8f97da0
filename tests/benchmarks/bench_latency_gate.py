"""Benchmark: the latency gate's false alarms on identical code and detections of a 30 % slowdown.

One baseline is measured, in a fresh process, for a program doing ``K`` chained matmuls (a
``fori_loop``); then 20 fresh processes of the same program and 20 of one with more steps
(about 30 % slower; the run prints the measured slowdown) are each judged against it with a
+10 % rule, exactly as
``bench --baseline`` judges (``jaxinspect.bench.gate.measure_rounds`` and
``jaxinspect.bench.baseline.decide``), for both ``cached.min`` (the default) and
``cached.median``. The runs alternate, so the machine's drift over the
minutes hits both alike; the baseline is as old as the last run by the end. Fresh processes,
because a CI run never shares one with its baseline, and a process's memory layout and
threads make its fastest call differ from another's.

Run: .venv/bin/python tests/benchmarks/bench_latency_gate.py [--runs 20]
Goals: 0 false alarms of 20; at least 19 detections of 20 (for the default, cached.min).
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxinspect.bench.baseline import decide  # noqa: E402
from jaxinspect.bench.gate import measure_rounds  # noqa: E402
from jaxinspect.pipeline.timing.calls import CallInputs  # noqa: E402

K = 40
#: Steps of the slower program: chosen so that its calls take about 1.3x as long (the run
#: prints the slowdown measured by plain interleaved medians, to show it is honest).
SLOWER_STEPS = 52
THRESHOLD = 0.10
BUDGET_S = 1.0
WARM_S = 1.0
#: The rules judged, and the per-round samples each uses (as ``bench --baseline``).
METRICS = {"cached.min": "target_min_s", "cached.median": "target_median_s"}


def program(steps: int):
    def body(_, x):
        return jnp.tanh(x @ x) * 0.5

    def f(x):
        return jax.lax.fori_loop(0, steps, body, x)

    x = jnp.full((128, 128), 0.01, jnp.float32)
    compiled = jax.jit(f).lower(x).compile()
    inputs = CallInputs((x,), {}, frozenset(), frozenset())
    jax.block_until_ready(compiled(x))
    return compiled, inputs


def rounds(compiled, inputs):
    """The gate's rounds, after a second of calls as ``bench`` makes before its rounds."""
    import time

    end = time.perf_counter() + WARM_S
    while time.perf_counter() < end:
        jax.block_until_ready(compiled(*inputs.args))
    start = time.perf_counter()
    jax.block_until_ready(compiled(*inputs.args))
    call_s = time.perf_counter() - start
    device = jax.devices()[0]
    return measure_rounds(
        compiled, inputs, device, call_s=call_s, budget_s=BUDGET_S, target="bench"
    )


def plain_slowdown(same, slower, inputs, calls: int = 400) -> float:
    """Median call time of ``slower`` over ``same``, calls interleaved one by one."""
    import time

    a, b = [], []
    for _ in range(calls):
        for compiled, out in ((same, a), (slower, b)):
            start = time.perf_counter()
            jax.block_until_ready(compiled(*inputs.args))
            out.append(time.perf_counter() - start)
    return statistics.median(b) / statistics.median(a)


def child(steps: int) -> None:
    """Measure the gate's rounds of ``program(steps)`` and print them as JSON (one process)."""
    import json

    compiled, inputs = program(steps)
    gate = rounds(compiled, inputs)
    print(json.dumps({field: list(getattr(gate, field)) for field in METRICS.values()}))


def in_fresh_process(steps: int) -> dict[str, list[float]]:
    """The rounds measured by a new Python process, as CI runs are."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, __file__, "--child", str(steps)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        child(options.child)
        return
    runs = options.runs
    same, same_inputs = program(K)
    slower, _ = program(SLOWER_STEPS)
    truth = plain_slowdown(same, slower, same_inputs)
    baseline = in_fresh_process(K)
    tally = {m: {"alarms": 0, "detections": 0, "same": [], "slow": []} for m in METRICS}
    for _ in range(runs):
        now_same, now_slow = in_fresh_process(K), in_fresh_process(SLOWER_STEPS)
        for metric, field in METRICS.items():
            old = baseline[field]
            ratio, _, _, alarm = decide(now_same[field], old, THRESHOLD)
            tally[metric]["alarms"] += alarm
            tally[metric]["same"].append(ratio)
            ratio, _, _, hit = decide(now_slow[field], old, THRESHOLD)
            tally[metric]["detections"] += hit
            tally[metric]["slow"].append(ratio)
    print(
        f"latency gate, {runs} fresh processes each of identical and slower code, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"  the slower program takes {truth:.2f}x as long per call (plain interleaved medians)")
    for metric, t in tally.items():
        same_r, slow_r = t["same"], t["slow"]
        print(
            f"  {metric}>+{THRESHOLD:.0%}: {t['alarms']} false alarms of {runs} (goal 0), "
            f"{t['detections']} detections of {runs} (goal >= {runs - 1}); ratios identical "
            f"{min(same_r):.3f}-{max(same_r):.3f}, slower {min(slow_r):.3f}-{max(slow_r):.3f}"
        )


if __name__ == "__main__":
    main()
