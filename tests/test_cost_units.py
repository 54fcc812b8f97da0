"""The pure parts of the cost model: shapes, roofline, device profiles, peak memory."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jaxinspect.base.inspection import MemorySummary
from jaxinspect.errors import UsageError
from jaxinspect.stages.memoryfit import estimate_peak, fit_memory
from jaxinspect.xla.profiles import PROFILES, custom_profile, find_profile
from jaxinspect.xla.roofline import roofline_point
from jaxinspect.xla.shapes import element_type, shape_bytes


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("f32[8,64]{1,0}", 2048),
        ("(s32[], f32[8,64]{1,0}, /*index=2*/bf16[4])", 4 + 2048 + 8),
        ("pred[3]", 3),
        ("s4[3]", 2),
        ("f8e4m3fn[10]", 10),
        ("c64[2]", 16),
        ("()", 0),
    ],
)
def test_shape_bytes(shape, expected):
    assert shape_bytes(shape) == expected


def test_element_type_is_the_largest_array():
    assert element_type("(s32[], bf16[128,128])") == "bf16"
    assert element_type("()") is None
    with pytest.raises(ValueError, match="unknown HLO element type"):
        shape_bytes("q7[2]")


def test_roofline_bounds_and_time():
    h100 = find_profile("H100")
    compute = roofline_point(2 * 4096**3, 3 * 4096 * 4096 * 2, "bf16", h100)
    assert compute.bound == "compute" and compute.peak_dtype == "bf16"
    assert compute.time_s == pytest.approx(2 * 4096**3 / 989e12)
    memory = roofline_point(1e6, 8e6, "f32", h100)
    assert memory.bound == "memory" and memory.intensity == pytest.approx(0.125)
    assert memory.time_s == pytest.approx(8e6 / 3.35e12)
    assert memory.ridge == pytest.approx(67e12 / 3.35e12)
    fallback = roofline_point(1.0, 1.0, "s32", h100)
    assert fallback.peak_dtype == "f32"  # no s32 peak: the f32 one, named
    idle = roofline_point(0.0, 0.0, "f32", h100)
    assert idle.bound == "none" and idle.intensity is None and idle.time_s == 0


def test_every_profile_is_documented_and_complete():
    assert len({p.name for p in PROFILES}) == len(PROFILES) >= 5
    for profile in PROFILES:
        assert profile.source and "f32" in dict(profile.peak_flops)
        assert profile.bandwidth_bytes_s > 0


def test_profile_lookup_and_overrides():
    with pytest.raises(UsageError, match="did you mean a100"):
        find_profile("a10")
    assert custom_profile(None, None, None) is None
    with pytest.raises(UsageError, match="give both"):
        custom_profile(None, 1e12, None)
    over = custom_profile(find_profile("a100"), None, 1e12)
    assert over is not None and over.bandwidth_bytes_s == 1e12
    assert over.peak_flops == find_profile("a100").peak_flops
    assert over.memory_bytes == find_profile("a100").memory_bytes


def memory(**changes) -> MemorySummary:
    base = MemorySummary(
        argument_bytes=1000,
        output_bytes=100,
        temp_bytes=500,
        alias_bytes=0,
        generated_code_bytes=None,
        peak_bytes=1600,
        derived_peak_bytes=1600,
    )
    return replace(base, **changes)


def test_peak_estimate_prefers_a_plausible_jax_peak():
    estimate = estimate_peak(memory())
    assert estimate is not None and (estimate.source, estimate.bytes) == ("jax", 1600)


def test_peak_estimate_replaces_an_implausible_or_missing_peak():
    low = estimate_peak(memory(peak_bytes=1100))  # CPU: argument + output, no temp
    assert low is not None and (low.source, low.bytes) == ("derived", 1600)
    assert "below argument + temp - alias" in low.reason
    missing = estimate_peak(memory(peak_bytes=None))
    assert missing is not None and missing.source == "derived"
    assert estimate_peak(memory(peak_bytes=None, derived_peak_bytes=None)) is None


def test_fit_against_capacity():
    estimate = estimate_peak(memory())
    assert estimate is not None
    assert fit_memory(estimate, 3200).fits and fit_memory(estimate, 3200).fraction == 0.5
    assert not fit_memory(estimate, 1000).fits
