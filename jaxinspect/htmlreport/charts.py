"""Inline SVG charts of the report: latency histogram, memory timeline, roofline."""

from __future__ import annotations

import math
from html import escape

from jaxinspect.renderers.units import format_bytes, format_rate, format_seconds

_W, _H, _PAD = 640, 220, 44


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
    bar_w = (_W - 2 * _PAD) / bins
    parts = [_frame(f"{len(samples)} cached calls", "seconds per call", "calls")]
    for i, count in enumerate(counts):
        h = (_H - 2 * _PAD) * count / top
        x = _PAD + i * bar_w
        lo = low + span * i / bins
        title = f"{format_seconds(lo)} – {format_seconds(lo + span / bins)}: {count} calls"
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{_H - _PAD - h:.1f}" width="{bar_w - 1:.1f}" '
            f'height="{h:.1f}"><title>{escape(title)}</title></rect>'
        )
    median = sorted(samples)[len(samples) // 2]
    mx = _PAD + (median - low) / span * (_W - 2 * _PAD)
    parts.append(f'<line class="mark" x1="{mx:.1f}" x2="{mx:.1f}" y1="{_PAD}" y2="{_H - _PAD}"/>')
    parts.append(_label(mx + 4, _PAD + 10, f"median {format_seconds(median)}"))
    parts.append(_label(_PAD, _H - _PAD + 14, format_seconds(low)))
    parts.append(_label(_W - _PAD, _H - _PAD + 14, format_seconds(high), anchor="end"))
    return _svg(parts, "latency histogram")


def timeline_svg(steps: list[tuple[int, int, str]], peak_step: int) -> str:
    """Live bytes at each step of XLA's schedule (step, bytes, instruction); the peak marked."""
    if not steps:
        return ""
    top = max(b for _, b, _ in steps) or 1
    last = max(s for s, _, _ in steps) or 1

    def xy(step: int, value: int) -> tuple[float, float]:
        x = _PAD + step / last * (_W - 2 * _PAD)
        return x, _H - _PAD - value / top * (_H - 2 * _PAD)

    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(s, b) for s, b, _ in steps))
    parts = [_frame("live bytes over the schedule", "step", "bytes")]
    parts.append(f'<polyline class="area" points="{line}"/>')
    for step, value, name in steps:
        x, y = xy(step, value)
        title = escape(f"step {step}: {format_bytes(value)} live ({name})")
        cls = "dot peak" if step == peak_step else "dot"
        parts.append(
            f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="3"><title>{title}</title></circle>'
        )
    parts.append(_label(_PAD, _PAD - 8, f"peak {format_bytes(top)} at step {peak_step}"))
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
        x = _PAD + (math.log10(i) - x0) / (x1 - x0) * (_W - 2 * _PAD)
        y = _H - _PAD - (math.log10(f) - y0) / (y1 - y0) * (_H - 2 * _PAD)
        return x, y

    lo, hi = 10**x0, 10**x1
    roof = [xy(lo, min(peak_flops, bandwidth * lo)), xy(ridge, peak_flops), xy(hi, peak_flops)]
    parts = [_frame(note, "FLOP per byte (log)", "FLOP/s (log)")]
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


def _frame(title: str, x_label: str, y_label: str) -> str:
    return (
        f'<line class="axis" x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}"/>'
        f'<line class="axis" x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}"/>'
        + _label(_W / 2, _H - 8, x_label, "middle")
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
