"""Inline SVG charts of the report: latency histogram, memory timeline, roofline."""

from __future__ import annotations

import math
from html import escape

from jaxinspect.renderers.units import format_bytes, format_rate, format_seconds

_W, _H, _PAD = 640, 220, 44
#: Left of the plot: room for the y axis' tick values ("12.5 MiB", "1.2 TFLOP/s").
_L = 84
Ticks = list[tuple[float, str]]  # (value, its label)


def histogram_svg(samples: tuple[float, ...]) -> str:
    """Bars of the cached-call times (sqrt(n) bins), median marked."""
    if len(samples) < 2:
        return ""
    low, high = min(samples), max(samples)
    bins = max(5, min(40, int(math.sqrt(len(samples)))))
    span = (high - low) or high or 1.0
    counts = [0] * bins
    for value in samples:
        counts[min(bins - 1, int((value - low) / span * bins))] += 1
    top = max(counts)
    bar_w = (_W - _L - _PAD) / bins
    xticks = [
        (_L + (v - low) / span * (_W - _L - _PAD), format_seconds(v)) for v in nice_ticks(low, high)
    ]
    yticks = [(_y(v / top), f"{v:g}") for v in nice_ticks(0, top) if v == int(v)]
    parts = [_frame(f"{len(samples)} cached calls", "seconds per call", "calls", xticks, yticks)]
    for i, count in enumerate(counts):
        h = (_H - 2 * _PAD) * count / top
        x = _L + i * bar_w
        lo = low + span * i / bins
        title = f"{format_seconds(lo)} – {format_seconds(lo + span / bins)}: {count} calls"
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{_H - _PAD - h:.1f}" width="{bar_w - 1:.1f}" '
            f'height="{h:.1f}"><title>{escape(title)}</title></rect>'
        )
    median = sorted(samples)[len(samples) // 2]
    mx = _L + (median - low) / span * (_W - _L - _PAD)
    parts.append(f'<line class="mark" x1="{mx:.1f}" x2="{mx:.1f}" y1="{_PAD}" y2="{_H - _PAD}"/>')
    parts.append(_label(mx + 4, _PAD + 10, f"median {format_seconds(median)}"))
    return _svg(parts, "latency histogram")


def timeline_svg(steps: list[tuple[int, int, str]], peak_step: int) -> str:
    """Live bytes at each step of XLA's schedule (step, bytes, instruction); the peak marked."""
    if not steps:
        return ""
    top = max(b for _, b, _ in steps) or 1
    last = max(s for s, _, _ in steps) or 1

    def xy(step: float, value: float) -> tuple[float, float]:
        return _x(step / last), _y(value / top)

    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(s, b) for s, b, _ in steps))
    xticks = [(_x(v / last), f"{v:g}") for v in nice_ticks(0, last) if v == int(v)]
    yticks = [(_y(v / top), format_bytes(v)) for v in byte_ticks(top)]
    parts = [_frame("live bytes over the schedule", "step", "bytes", xticks, yticks)]
    parts.append(f'<polyline class="area" points="{line}"/>')
    for step, value, name in steps:
        x, y = xy(step, value)
        title = escape(f"{name}: {format_bytes(value)} live at step {step}")
        cls = "dot peak" if step == peak_step else "dot"
        parts.append(
            f'<circle class="{cls}" data-op="{escape(name)}" cx="{x:.1f}" cy="{y:.1f}" r="3">'
            f"<title>{title}</title></circle>"
        )
    parts.append(_label(_L, _PAD - 8, f"peak {format_bytes(top)} at step {peak_step}"))
    return _svg(parts, "memory timeline")


def roofline_svg(
    points: list[tuple[str, float, float]], peak_flops: float, bandwidth: float, note: str
) -> str:
    """Ops at (FLOP/byte, FLOP/s) under the roofs min(peak, bandwidth x intensity), log-log."""
    usable = [(n, i, f) for n, i, f in points if i > 0 and f > 0]
    if not usable:
        return ""
    ridge = peak_flops / bandwidth
    xs = [i for _, i, _ in usable] + [ridge]
    ys = [f for _, _, f in usable] + [peak_flops]
    x0, x1 = math.log10(min(xs) / 2), math.log10(max(xs) * 2)
    y0, y1 = math.log10(min(ys) / 2), math.log10(max(ys) * 2)

    def xy(i: float, f: float) -> tuple[float, float]:
        return _x((math.log10(i) - x0) / (x1 - x0)), _y((math.log10(f) - y0) / (y1 - y0))

    lo, hi = 10**x0, 10**x1
    roof = [xy(lo, min(peak_flops, bandwidth * lo)), xy(ridge, peak_flops), xy(hi, peak_flops)]
    xticks = [(xy(v, ys[0])[0], f"{v:g}") for v in decade_ticks(x0, x1)]
    yticks = [(xy(xs[0], v)[1], format_rate(v, "FLOP/s")) for v in decade_ticks(y0, y1)]
    parts = [_frame(note, "FLOP per byte (log)", "FLOP/s (log)", xticks, yticks)]
    parts.append(
        '<polyline class="roof" points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in roof) + '"/>'
    )
    for name, intensity, flops in usable:
        x, y = xy(intensity, flops)
        title = escape(f"{name}: {intensity:.3g} FLOP/B, {format_rate(flops, 'FLOP/s')}")
        parts.append(
            f'<circle class="dot op" data-op="{escape(name)}" cx="{x:.1f}" cy="{y:.1f}" r="4">'
            f"<title>{title}</title></circle>"
        )
    parts.append(_label(_W - _PAD, _PAD - 8, f"peak {format_rate(peak_flops, 'FLOP/s')}", "end"))
    return _svg(parts, "roofline")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round values (1, 2 or 5 times a power of ten apart) in [low, high]."""
    span = high - low
    if span <= 0:
        return [low]
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    return [round(first + k * step, 12) for k in range(int((high - first) / step + 1e-9) + 1)]


def byte_ticks(top: float) -> list[float]:
    """Round values up to ``top`` bytes in the binary unit it reaches (0, 2, 4, 6 MiB)."""
    unit = 1024 ** max(0, min(4, int(math.log(max(top, 1), 1024))))
    return [v * unit for v in nice_ticks(0, top / unit)]


def decade_ticks(low_log: float, high_log: float) -> list[float]:
    """The powers of ten between two log10 values; every other one past eight of them."""
    powers = list(range(math.ceil(low_log), math.floor(high_log) + 1))
    if len(powers) > 8:
        powers = powers[:: math.ceil(len(powers) / 8)]
    return [10.0**k for k in powers]


def _x(fraction: float) -> float:
    return _L + fraction * (_W - _L - _PAD)


def _y(fraction: float) -> float:
    return _H - _PAD - fraction * (_H - 2 * _PAD)


def _frame(title: str, x_label: str, y_label: str, xticks: Ticks, yticks: Ticks) -> str:
    """Axes with their tick marks and values, the axis titles and the chart's title."""
    ticks = "".join(
        f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{_H - _PAD}" y2="{_H - _PAD + 4}"/>'
        + _label(x, _H - _PAD + 15, text, "middle", cls="tv")
        for x, text in xticks
    ) + "".join(
        f'<line class="tick" x1="{_L - 4}" x2="{_L}" y1="{y:.1f}" y2="{y:.1f}"/>'
        + _label(_L - 6, y + 4, text, "end", cls="tv")
        for y, text in yticks
    )
    return (
        f'<line class="axis" x1="{_L}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}"/>'
        f'<line class="axis" x1="{_L}" y1="{_PAD}" x2="{_L}" y2="{_H - _PAD}"/>'
        + ticks
        + _label((_L + _W - _PAD) / 2, _H - 6, x_label, "middle")
        + _label(12, _H / 2, y_label, "middle", rotate=True)
        + _label(_W / 2, 16, title, "middle", cls="title")
    )


def _label(
    x: float, y: float, text: str, anchor: str = "start", *, rotate: bool = False, cls: str = ""
) -> str:
    turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    klass = f' class="{cls}"' if cls else ""
    return (
        f'<text{klass} x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{turn}>{escape(text)}</text>'
    )


def _svg(parts: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" role="img" aria-label="{label}">' + "".join(parts) + "</svg>"
    )
