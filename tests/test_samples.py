"""Every sample program runs end to end, and XLA's FLOPs match the analytic count."""

from __future__ import annotations

import pytest

from conftest import sample
from jaxinspect.inputs.spec import load_spec
from jaxinspect.stages.runner import InspectOptions, inspect_target


def matmul(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


# (target, spec, lower bound, upper bound, transcendentals): exact where XLA's count is
# known elementwise; a narrow band above the matmul work where fusion adds elementwise ops.
CASES = [
    ("simple.py:scale_shift", "simple.yaml", 2 * 1000, 2 * 1000, 0),  # mul + add
    ("simple.py:axpy", "axpy.yaml", 2 * 1000, 2 * 1000, 0),
    ("simple.py:sin_cos", "simple.yaml", 1000, 1000, 2 * 1000),  # add; sin, cos
    (
        "mlp.py:predict",
        "mlp.yaml",
        # two matmuls, two bias adds and the relu max, all exactly
        matmul(128, 784, 256) + matmul(128, 256, 10) + 2 * 128 * 256 + 128 * 10,
        matmul(128, 784, 256) + matmul(128, 256, 10) + 2 * 128 * 256 + 128 * 10,
        0,
    ),
    # x@w, then + b, - y, **2 and the mean's reduction: 4 elementwise ops per example
    ("linreg.py:loss_fn", "linreg.yaml", matmul(64, 16, 1) + 4 * 64, matmul(64, 16, 1) + 4 * 64, 0),
    (
        "linreg.py:grad_loss",
        "linreg.yaml",
        2 * matmul(64, 16, 1),
        2 * matmul(64, 16, 1) + 8 * 64,
        0,
    ),
    (
        "linreg.py:update_params",
        "linreg.yaml",
        2 * matmul(64, 16, 1),
        2 * matmul(64, 16, 1) + 8 * 64,
        0,
    ),
    (
        "linreg.py:predict_batch",
        "linreg_predict_batch.yaml",
        matmul(64, 16, 1) + 64,
        matmul(64, 16, 1) + 64,
        0,
    ),
    # forward-over-reverse: the 16x16 Hessian needs X^T X, twice
    (
        "linreg.py:hessian",
        "linreg_hessian.yaml",
        2 * matmul(16, 64, 16),
        2 * matmul(16, 64, 16) * 1.05,
        0,
    ),
    # XLA counts the scan body once (issue #5 adds loop-aware totals): two matmuls, two adds,
    # and the loop counter's add and compare.
    (
        "rnn.py:run",
        "rnn.yaml",
        matmul(8, 64, 64) + matmul(8, 32, 64) + 2 * 8 * 64 + 2,
        matmul(8, 64, 64) + matmul(8, 32, 64) + 2 * 8 * 64 + 2,
        8 * 64,  # tanh of one step
    ),
    (
        "transformer.py:block",
        "transformer.yaml",
        # q, k, v, o projections; scores and weights@v over 4 heads of 32; the MLP
        4 * matmul(2 * 64, 128, 128)
        + 2 * 2 * 4 * matmul(64, 32, 64)
        + 2 * matmul(2 * 64, 128, 512),
        (
            4 * matmul(2 * 64, 128, 128)
            + 2 * 2 * 4 * matmul(64, 32, 64)
            + 2 * matmul(2 * 64, 128, 512)
        )
        * 1.05,
        None,
    ),
]


@pytest.mark.parametrize(("target", "spec", "low", "high", "transcendentals"), CASES)
def test_sample_flops_match_analytic_count(target, spec, low, high, transcendentals):
    report = inspect_target(sample(target), load_spec(sample(spec)), InspectOptions(runs=2))
    assert report.cost is not None
    assert low <= report.cost.flops <= high
    if transcendentals is not None:
        assert report.cost.transcendentals == transcendentals
    # Every sample also executes: first call and cached calls were measured.
    assert report.timings.first_call_s is not None and report.timings.first_call_s > 0
    assert report.timings.cached_call is not None and report.timings.cached_call.runs == 2
