"""Property-based fuzz of the whole CLI, small (#11, #22): exit 0-3, no traceback, JSON parses.

``make bench`` runs the same property for 2,000+ examples (tests/benchmarks/bench_cli_fuzz.py).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from clifuzz import Example, examples, run_example, violations


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same examples on every CI run; the benchmark draws fresh ones
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(examples())
def test_any_invocation_exits_0_to_3_without_traceback(example: Example) -> None:
    outcome = run_example(example)
    found = violations(example, outcome)
    assert not found, f"{found}\nargv: {example.argv}\nstderr:\n{outcome.stderr[-3000:]}"
