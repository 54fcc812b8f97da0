"""Steady-state latency of a compiled executable: per-call, pipelined, and a tiny program's.

The per-call loop is ``jaxinspect.pipeline.timing.calls``, the same one ``stages`` uses.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import jax

from jaxinspect.bench.report import CachedStats, DispatchStats, PipelinedStats
from jaxinspect.bench.stats import cached_stats
from jaxinspect.pipeline.timing.calls import (
    SLOW_FLOOR_S,
    CallCount,
    CallInputs,
    ProgressSink,
    split_donated,
    time_series,
    tree_bytes,
    user_calls,
)
from jaxinspect.pipeline.timing.quiet import frozen_heap, quiet_gc

__all__ = [
    "Budget",
    "CallInputs",
    "measure_per_call",
    "measure_pipelined",
    "measure_tiny_dispatch",
    "split_donated",
]

MIN_RUNS = 10
MAX_RUNS = 100_000
#: Timed calls of a call so slow that MIN_RUNS of it would take over ``SLOW_FLOOR_S``.
FEW_RUNS = 3
MIN_WARMUP = 5
MAX_WARMUP = 1_000
#: Warm-up calls of such a slow call: its first call is also the estimate.
FEW_WARMUP = 1
#: Fractions of the time budget for warm-up, each pipelined round and the tiny program.
WARMUP_SHARE = 0.1
PIPELINE_SHARE = 0.1
TINY_SHARE = 0.1
PIPELINE_ROUNDS = 3
MAX_PIPELINE_CALLS = 1_000
#: Calls per pipelined round of a slow call (two are the least that can overlap).
FEW_PIPELINE_CALLS = 2


@dataclass(frozen=True, slots=True)
class Budget:
    """How many calls to make: ``runs`` exactly, or as many as fit in ``seconds``."""

    runs: int | None
    seconds: float
    warmup: int | None


def measure_per_call(
    compiled: Any,
    inputs: CallInputs,
    budget: Budget,
    *,
    target: str,
    progress: ProgressSink | None = None,
) -> CachedStats:
    """Warm up, then time calls one by one, each waited on with ``block_until_ready``.

    Raises:
        StageError: The executable raised (stage ``execute``).
    """
    warm = CallCount(
        budget.warmup, budget.seconds * WARMUP_SHARE, MIN_WARMUP, MAX_WARMUP, FEW_WARMUP
    )
    timed = CallCount(budget.runs, budget.seconds, MIN_RUNS, MAX_RUNS, FEW_RUNS)
    with frozen_heap():
        warmup = time_series(
            compiled, inputs, warm, target=target, what="warm-up calls", progress=progress
        )
        estimate = statistics.median(warmup.totals) if warmup.totals else None
        series = time_series(
            compiled,
            inputs,
            timed,
            target=target,
            what="timed calls",
            call_s=estimate,
            progress=progress,
        )
    return cached_stats(series.totals, series.dispatches, len(warmup.totals))


def measure_pipelined(
    compiled: Any,
    inputs: CallInputs,
    budget: Budget,
    median_s: float,
    *,
    max_bytes: int,
    target: str,
) -> PipelinedStats:
    """Dispatch calls back to back and wait once at the end, for a few rounds.

    A round holds every output (and every donated copy) at once, so the number of calls is
    also capped to keep those under ``max_bytes``. A slow call gets one round of two calls:
    pipelining hides only the dispatch, which such a call does not notice.
    """
    if budget.runs is not None:
        calls = min(budget.runs, MAX_PIPELINE_CALLS)
    else:
        wanted = int(budget.seconds * PIPELINE_SHARE / max(median_s, 1e-9))
        calls = max(MIN_WARMUP, min(wanted, MAX_PIPELINE_CALLS))
    rounds = PIPELINE_ROUNDS
    if median_s * calls * rounds > SLOW_FLOOR_S:
        calls = min(calls, FEW_PIPELINE_CALLS)
        rounds = 1
    per_round_call = tree_bytes(compiled.out_info) + inputs.donated_bytes
    if per_round_call > 0:
        calls = max(1, min(calls, max_bytes // per_round_call))
    per_call: list[float] = []
    with user_calls(target), frozen_heap():
        for _ in range(rounds):
            prepared = [inputs.fresh() for _ in range(calls)]
            with quiet_gc():
                start = time.perf_counter()
                outs = [compiled(*args, **kwargs) for args, kwargs in prepared]
                jax.block_until_ready(outs)
                per_call.append((time.perf_counter() - start) / calls)
            del outs, prepared
    return PipelinedStats(
        per_call_s=statistics.median(per_call),
        calls=calls,
        rounds=rounds,
        round_per_call_s=tuple(per_call),
    )


def measure_tiny_dispatch(device: Any, budget: Budget) -> DispatchStats:
    """Per-call cost of ``x + 1`` on a float32[8] on ``device``: the floor of any call."""
    x = jax.device_put(jax.numpy.zeros((8,), jax.numpy.float32), device)
    compiled = jax.jit(lambda v: v + 1).lower(x).compile()
    tiny_budget = Budget(budget.runs, budget.seconds * TINY_SHARE, budget.warmup)
    stats = measure_per_call(
        compiled,
        CallInputs((x,), {}, frozenset(), frozenset()),
        tiny_budget,
        target="(tiny dispatch probe)",
    )
    assert stats.dispatch_median_s is not None
    return DispatchStats(stats.median_s, stats.dispatch_median_s, stats.count)
