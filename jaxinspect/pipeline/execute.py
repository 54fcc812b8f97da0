"""``stages`` execution: the first call, then timed cached calls (see ``pipeline.timing``)."""

from __future__ import annotations

import statistics
from typing import Any

from jaxinspect.base.inspection import CallTimings
from jaxinspect.pipeline.timing.calls import (
    CallCount,
    CallInputs,
    ProgressSink,
    time_one_call,
    time_series,
)
from jaxinspect.pipeline.timing.quiet import frozen_heap

#: With no ``--runs``, cached calls repeat until this much time is spent: at least MIN_RUNS,
#: or FEW_RUNS for a call so slow that MIN_RUNS of it would take long (``SLOW_FLOOR_S``).
AUTO_BUDGET_S = 0.25
MIN_RUNS = 5
FEW_RUNS = 3
MAX_AUTO_RUNS = 1000


def time_calls(
    compiled: Any,
    inputs: CallInputs,
    *,
    runs: int | None,
    target: str,
    progress: ProgressSink | None = None,
) -> tuple[float, CallTimings]:
    """Time the first call and then cached calls of ``compiled``.

    Every call is waited on with ``jax.block_until_ready``, so the times cover execution and
    not just asynchronous dispatch; donated arguments are copied afresh before each call.

    Args:
        compiled: A ``jax.stages.Compiled``.
        inputs: Concrete arguments already on the device.
        runs: Exact number of cached calls, or ``None`` to fit them to ``AUTO_BUDGET_S``.
        target: For error messages.
        progress: Receives progress of a series of slow calls.

    Returns:
        Seconds of the first call, and the statistics of the cached calls.

    Raises:
        StageError: The executable raised (stage ``execute``).
    """
    count = CallCount(runs, AUTO_BUDGET_S, MIN_RUNS, MAX_AUTO_RUNS, FEW_RUNS)
    with frozen_heap():
        first = time_one_call(compiled, inputs, target=target)
        series = time_series(
            compiled,
            inputs,
            count,
            target=target,
            what="cached calls",
            call_s=first,
            progress=progress,
        )
    samples = series.totals
    return first, CallTimings(
        median_s=statistics.median(samples),
        min_s=min(samples),
        max_s=max(samples),
        runs=len(samples),
        samples=tuple(samples),
    )
