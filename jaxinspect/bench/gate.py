"""Latency samples a regression gate can trust on a machine whose load drifts.

A shared CI runner's median call time moves 10-30 % from one minute to the next with no change
in the code: other work on the machine adds time to some calls. It cannot take time away, so
the fastest of a few calls moves far less. The gate therefore measures in *rounds*: each round
times the target ``calls`` times and keeps the fastest and the median call; 30 rounds give the
samples a rule is judged on (``cached.min`` uses the fastest, ``cached.median`` the medians).
Right after each round, a fixed reference program (a small matmul with tanh, compiled once on
the same device) is timed the same way: a yardstick of the machine's speed, so a baseline
taken on a faster or slower machine is noticed and said.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import jax

from jaxinspect.bench.report import GateRounds
from jaxinspect.pipeline.timing.calls import CallCount, CallInputs, time_series
from jaxinspect.pipeline.timing.quiet import frozen_heap, quiet_gc

#: Rounds per measurement, and the share of the time budget they use.
GATE_ROUNDS = 30
GATE_SHARE = 0.6
#: Calls per half-round: at least this many, more for fast calls (up to the budget).
MIN_CALLS, MAX_CALLS = 3, 200
#: The reference program's size: about a millisecond per call on a laptop core.
REFERENCE_SHAPE = (256, 256)


def measure_rounds(
    compiled: Any,
    inputs: CallInputs,
    device: Any,
    *,
    call_s: float,
    budget_s: float,
    target: str,
    rounds: int = GATE_ROUNDS,
) -> GateRounds:
    """``rounds`` alternations of target calls and reference calls (see the module docstring).

    Raises:
        StageError: The target's executable raised.
    """
    reference, operand = _reference(device)
    reference_s = _reference_call_s(reference, operand)
    pair_s = max(call_s, 1e-7) + max(reference_s, 1e-7)
    calls = int(budget_s * GATE_SHARE / rounds / pair_s)
    calls = max(MIN_CALLS, min(calls, MAX_CALLS))
    count = CallCount(calls, 0.0, calls, calls, calls)
    fastest: list[float] = []
    medians: list[float] = []
    references: list[float] = []
    with frozen_heap():
        for _ in range(rounds):
            series = time_series(compiled, inputs, count, target=target, what="gate calls")
            fastest.append(min(series.totals))
            medians.append(statistics.median(series.totals))
            references.append(min(_call_times(reference, operand, calls)))
    return GateRounds(calls, tuple(fastest), tuple(medians), tuple(references))


def _reference(device: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp

    x = jax.device_put(jnp.full(REFERENCE_SHAPE, 0.5, jnp.float32), device)
    compiled = jax.jit(lambda a: jnp.tanh(a @ a).sum()).lower(x).compile()
    return compiled, x


def _reference_call_s(compiled: Any, operand: Any) -> float:
    for _ in range(MIN_CALLS):  # warm-up
        jax.block_until_ready(compiled(operand))
    return statistics.median(_call_times(compiled, operand, MIN_CALLS * 3))


def _call_times(compiled: Any, operand: Any, calls: int) -> list[float]:
    samples = []
    perf = time.perf_counter
    with quiet_gc():
        for _ in range(calls):
            start = perf()
            jax.block_until_ready(compiled(operand))
            samples.append(perf() - start)
    return samples
