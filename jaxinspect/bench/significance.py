"""Confidence bounds of a ratio of medians by the bootstrap (standard library only).

Resampling each side's samples with replacement and taking the quantiles of the ratio of
medians needs no assumption about the distribution, which for latencies is skewed and often
has a long tail. The generator is seeded, so a verdict is the same every time it is computed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

#: Bootstrap resamples: enough for a stable 1 % quantile.
RESAMPLES = 4_000


def ratio_bounds(
    new: Sequence[float], old: Sequence[float], confidence: float, *, seed: int = 0
) -> tuple[float, float, float]:
    """``median(new) / median(old)`` with its two-sided bootstrap bounds.

    With ``confidence`` 0.98 the bounds are the 1 % and 99 % quantiles, so the chance that the
    lower bound exceeds the true ratio is about 1 % (the false-alarm rate of a one-sided test
    on the lower bound).

    Raises:
        ValueError: A side has no samples, or one is not positive.
    """
    if not new or not old:
        raise ValueError("a ratio of medians needs samples on both sides")
    if min(new) <= 0 or min(old) <= 0:
        raise ValueError("latency samples must be positive")
    rng = random.Random(seed)
    ratios = []
    for _ in range(RESAMPLES):
        a = statistics.median(rng.choices(new, k=len(new)))
        b = statistics.median(rng.choices(old, k=len(old)))
        ratios.append(a / b)
    ratios.sort()
    tail = (1 - confidence) / 2
    low = ratios[int(tail * (RESAMPLES - 1))]
    high = ratios[int((1 - tail) * (RESAMPLES - 1))]
    return statistics.median(new) / statistics.median(old), low, high
