"""Call a compiled executable: the first call, then timed cached calls, each waited on."""

from __future__ import annotations

import statistics
import time
from typing import Any

import jax

from jaxinspect.errors import StageError
from jaxinspect.errtrace import format_user_failure
from jaxinspect.model import CallTimings

#: With no ``--runs``, cached calls repeat until this much time is spent (at least MIN_RUNS).
AUTO_BUDGET_S = 0.25
MIN_RUNS = 5
MAX_AUTO_RUNS = 1000


def time_calls(
    compiled: Any, args: list[Any], kwargs: dict[str, Any], *, runs: int | None, target: str
) -> tuple[float, CallTimings]:
    """Time the first call and then cached calls of ``compiled``.

    Every call is waited on with ``jax.block_until_ready``, so the times cover execution and
    not just asynchronous dispatch.

    Args:
        compiled: A ``jax.stages.Compiled``.
        args: Concrete positional arguments already on the device.
        kwargs: Concrete keyword arguments.
        runs: Exact number of cached calls, or ``None`` to calibrate to ``AUTO_BUDGET_S``.
        target: For error messages.

    Returns:
        Seconds of the first call, and the statistics of the cached calls.

    Raises:
        StageError: The executable raised (stage ``execute``).
    """
    try:
        first = _one_call(compiled, args, kwargs)
        samples: list[float] = []
        spent = 0.0
        while _more(runs, len(samples), spent):
            sample = _one_call(compiled, args, kwargs)
            samples.append(sample)
            spent += sample
    except Exception as exc:
        raise StageError("execute", format_user_failure("execute", target, exc)) from exc
    return first, CallTimings(
        median_s=statistics.median(samples),
        min_s=min(samples),
        max_s=max(samples),
        runs=len(samples),
    )


def _more(runs: int | None, done: int, spent: float) -> bool:
    if runs is not None:
        return done < runs
    return done < MIN_RUNS or (spent < AUTO_BUDGET_S and done < MAX_AUTO_RUNS)


def _one_call(compiled: Any, args: list[Any], kwargs: dict[str, Any]) -> float:
    start = time.perf_counter()
    jax.block_until_ready(compiled(*args, **kwargs))
    return time.perf_counter() - start
