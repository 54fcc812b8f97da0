"""Pure parts of bench: statistics, histograms, cache verdicts, cold-run result parsing."""

from __future__ import annotations

import json
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxinspect.bench.cold import parse_result, summarize_round
from jaxinspect.bench.coldchild import MARKER
from jaxinspect.bench.pcache import unexpected_misses
from jaxinspect.bench.report import COLD_PHASES, ColdSample
from jaxinspect.bench.stats import NOISY_SPREAD, cached_stats, histogram, percentile
from jaxinspect.errors import ExitCode, JaxInspectError, SpecError, StageError

samples_strategy = st.lists(
    st.floats(min_value=1e-7, max_value=10.0, allow_nan=False), min_size=1, max_size=200
)


def test_percentile_matches_statistics_inclusive_quantiles():
    data = sorted([0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.4])
    quartiles = statistics.quantiles(data, n=4, method="inclusive")
    assert [percentile(data, q) for q in (25, 50, 75)] == pytest.approx(quartiles)
    assert percentile(data, 0) == 0.1 and percentile(data, 100) == 0.9


def test_percentile_rejects_empty_and_out_of_range():
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


@given(samples_strategy)
def test_cached_stats_are_ordered_and_count_every_sample(samples):
    stats = cached_stats(samples, samples, warmup=3)
    assert stats.min_s <= stats.median_s <= stats.p90_s <= stats.p99_s <= stats.max_s
    assert stats.min_s <= stats.mean_s <= stats.max_s
    assert stats.count == len(samples) and stats.warmup == 3
    assert sum(stats.histogram.counts) == len(samples)
    assert len(stats.histogram.edges_s) == len(stats.histogram.counts) + 1
    assert stats.stdev_s >= 0


def test_noisy_flag_follows_the_spread():
    steady = cached_stats([1.0] * 50 + [1.01] * 50, [], warmup=0)
    assert not steady.noisy and steady.noisy_reason is None
    wide = cached_stats([1.0] * 50 + [3.0] * 50, [], warmup=0)
    assert wide.spread > NOISY_SPREAD and wide.noisy
    assert wide.noisy_reason is not None and "p90 - p10" in wide.noisy_reason
    assert wide.dispatch_median_s is None


def test_histogram_keeps_outliers_in_the_last_bin():
    data = sorted([1.0] * 99 + [2.0] * 99 + [1000.0])
    hist = histogram(data, bins=4)
    assert hist.counts[0] == 99 and hist.counts[-1] >= 1
    assert hist.edges_s[-1] < 1000.0  # the p99, not the outlier, bounds the bins


def _sample(hits: int, requests: int = 1, scale: float = 1.0) -> ColdSample:
    phases = tuple((name, scale * (i + 1) / 100) for i, name in enumerate(COLD_PHASES))
    return ColdSample(phases, process_total_s=scale, cache_requests=requests, cache_hits=hits)


def test_summarize_round_orders_each_phase():
    cold = summarize_round("disabled", (_sample(0, 0, 1.0), _sample(0, 0, 3.0), _sample(0, 0, 2.0)))
    for name, stats in cold.phases:
        assert stats.min_s <= stats.median_s <= stats.max_s, name
        assert stats.median_s == dict(_sample(0, 0, 2.0).phases)[name]


def test_a_miss_where_a_hit_was_expected_is_reported():
    empty = summarize_round("empty", (_sample(0), _sample(0)))
    populated = summarize_round("populated", (_sample(1), _sample(0), _sample(0, requests=0)))
    lines = unexpected_misses(empty, populated)
    assert lines == (
        "populated-cache process 2: 1 of 1 compile requests missed where a hit was expected",
        "populated-cache process 3: the compile did not consult the cache",
    )
    assert unexpected_misses(empty, summarize_round("populated", (_sample(1),))) == ()


def test_parse_result_takes_the_marked_line_among_user_prints():
    phases = dict.fromkeys(COLD_PHASES, 0.5)
    out = f"user print\n{MARKER}{json.dumps({'phases': phases, 'cache': {}})}\nmore\n"
    assert parse_result(out, "", 0)["phases"] == phases


@pytest.mark.parametrize(
    ("kind", "expected", "code"),
    [
        ("SpecError", SpecError, ExitCode.USAGE_ERROR),
        ("StageError", StageError, ExitCode.TARGET_FAILED),
        ("KeyError", JaxInspectError, ExitCode.INTERNAL_ERROR),
    ],
)
def test_parse_result_reraises_the_childs_error_type(kind, expected, code):
    error = {"type": kind, "message": "boom", "hint": None, "stage": "execute"}
    with pytest.raises(expected, match="boom") as info:
        parse_result(MARKER + json.dumps({"error": error}), "", 2)
    assert info.value.exit_code == code


def test_parse_result_without_a_result_line_shows_stderr():
    with pytest.raises(JaxInspectError, match="status 1 without a result:\nTraceback"):
        parse_result("", "Traceback ...\nSegfault", 1)
