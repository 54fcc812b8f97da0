"""One number format for every table: three digits in the largest unit the value reaches."""

from __future__ import annotations

import pytest

from jaxinspect.renderers.units import format_bytes, format_count, format_rate, format_seconds


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (1234, "1,234"),  # exact below 10,000
        (0.125, "0.125"),
        (9999.5, "10,000"),  # not 1e+04
        (10_000, "10 k"),
        (1_607_140, "1.61 M"),
        (999_999, "1 M"),  # not 1e+03 k
        (5e15, "5 P"),  # not 5e+03 T
        (3e21, "3,000 E"),
        (-2e6, "-2 M"),
    ],
)
def test_counts(value, text):
    assert format_count(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0 B"),
        (1023, "1,023 B"),
        (1024, "1 KiB"),
        (1_216_000, "1.16 MiB"),
        (1_048_575, "1 MiB"),  # not 1e+03 KiB
        (3e12, "2.73 TiB"),  # not 2.79e+03 GiB
    ],
)
def test_bytes(value, text):
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0 s"),
        (5e-7, "500 ns"),
        (2.5e-6, "2.5 µs"),
        (0.0123, "12.3 ms"),
        (0.99996, "1 s"),  # not 1e+03 ms
        (999.96, "1,000 s"),
        (5000, "5,000 s"),
    ],
)
def test_seconds(value, text):
    assert format_seconds(value) == text


def test_rates_take_decimal_prefixes_as_datasheets_do():
    assert format_rate(3.35e12, "B/s") == "3.35 TB/s"
    assert format_rate(989.5e12, "FLOP/s") == "990 TFLOP/s"
    assert format_rate(999.9e9, "B/s") == "1 TB/s"  # not 1e+03 GB/s
    assert format_rate(500, "B/s") == "500 B/s"
