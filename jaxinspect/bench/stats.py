"""Summary statistics of timing samples: order statistics, spread, histograms (no jax here)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from jaxinspect.bench.report import CachedStats, Histogram, PhaseStats

#: A steady state whose (p90 - p10) / median exceeds this is flagged as noisy.
NOISY_SPREAD = 0.5
#: Bins of the histogram of cached samples.
HISTOGRAM_BINS = 16


def percentile(sorted_samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks.

    ``statistics.quantiles(method="inclusive")`` interpolates the same way but rounds
    differently (about half of its p10/p90/p99 differ in the last bit, which a saved
    baseline would show) and refuses a single sample on Python 3.11.

    Raises:
        ValueError: ``sorted_samples`` is empty or ``q`` is outside [0, 100].
    """
    if not sorted_samples:
        raise ValueError("percentile of no samples")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} outside [0, 100]")
    position = (len(sorted_samples) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(sorted_samples) - 1)
    fraction = position - low
    below, above = sorted_samples[low], sorted_samples[high]
    # Clamped: float rounding of the interpolation must not step outside its two samples.
    return min(max(below + (above - below) * fraction, below), above)


def phase_stats(samples: Sequence[float]) -> PhaseStats:
    """Min, median and max of one cold phase over the processes that measured it."""
    if not samples:
        raise ValueError("phase_stats of no samples")
    return PhaseStats(
        min_s=min(samples),
        median_s=statistics.median(samples),
        max_s=max(samples),
        samples_s=tuple(samples),
    )


def cached_stats(samples: Sequence[float], dispatch: Sequence[float], warmup: int) -> CachedStats:
    """The steady-state summary of per-call samples (seconds), with the noisy-run verdict.

    Args:
        samples: Seconds per call, each call waited on with ``block_until_ready``.
        dispatch: Seconds until each call returned, before waiting (asynchronous dispatch).
        warmup: Untimed calls made before the samples.
    """
    if not samples:
        raise ValueError("cached_stats of no samples")
    ordered = sorted(samples)
    median = statistics.median(ordered)
    spread = (percentile(ordered, 90) - percentile(ordered, 10)) / median if median > 0 else 0.0
    noisy = spread > NOISY_SPREAD
    reason = (
        f"(p90 - p10) / median = {spread:.2f} exceeds {NOISY_SPREAD}: other load on this "
        "machine, frequency scaling or too few runs; rerun or raise --time-budget"
        if noisy
        else None
    )
    return CachedStats(
        min_s=ordered[0],
        median_s=median,
        # Clamped: fmean's rounding can land one ulp above the maximum of equal samples.
        mean_s=min(max(statistics.fmean(ordered), ordered[0]), ordered[-1]),
        p90_s=percentile(ordered, 90),
        p99_s=percentile(ordered, 99),
        max_s=ordered[-1],
        stdev_s=statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        count=len(ordered),
        warmup=warmup,
        dispatch_median_s=statistics.median(dispatch) if dispatch else None,
        spread=spread,
        noisy=noisy,
        noisy_reason=reason,
        histogram=histogram(ordered),
    )


def histogram(sorted_samples: Sequence[float], bins: int = HISTOGRAM_BINS) -> Histogram:
    """Counts of samples in equal-width bins between the minimum and the p99.

    The top bin also holds everything above the p99, so one slow outlier does not squeeze
    the rest of the distribution into a single bar.
    """
    low = sorted_samples[0]
    high = percentile(sorted_samples, 99)
    if high <= low:
        return Histogram(edges_s=(low, high), counts=(len(sorted_samples),))
    width = (high - low) / bins
    counts = [0] * bins
    for value in sorted_samples:
        counts[min(int((value - low) / width), bins - 1)] += 1
    edges = tuple(low + i * width for i in range(bins)) + (high,)
    return Histogram(edges_s=edges, counts=tuple(counts))
