"""``snapshot/html.py``: a snapshot diff as the HTML ``jaxinspect.diff(a, b)`` shows in a
notebook: verdict, op and metric tables, each changed stage's diff; escaped, no script."""

from __future__ import annotations

from jaxinspect.snapshot.diffreport import MetricChange, OpChange, SnapshotDiff, TextChange
from jaxinspect.snapshot.html import MAX_DIFF_LINES, render_diff_html
from jaxinspect.snapshot.thresholds import Verdict
from jaxinspect.textdiff.linediff import Hunk


def _diff(lines: int = 2) -> SnapshotDiff:
    hunk = Hunk(
        1,
        1,
        1,
        lines,
        (("-", "%m = f32[8] maximum(%x, %zero)"),) + (("+", "%t = f32[8] tanh(%x) <b>"),) * lines,
    )
    return SnapshotDiff(
        a_label="relu",
        b_label="gelu",
        toolchain=(),
        op_changes=(OpChange("hlo", "tanh", 0, 2), OpChange("hlo", "maximum", 2, 0)),
        metrics=(MetricChange("flops", 1000.0, 1500.0), MetricChange("peak_bytes", 10.0, 10.0)),
        texts=(TextChange("hlo", "relu.hlo", "gelu.hlo", (hunk,)),),
    )


def test_a_changed_diff_shows_its_verdict_ops_metrics_and_lines() -> None:
    html = render_diff_html(_diff(), Verdict(("any",)))
    assert "relu → gelu" in html and "fails <code>any</code>" in html
    assert "<td" in html and ">tanh</td>" in html and ">+2</td>" in html and ">-2</td>" in html
    assert ">flops</td>" in html and "peak_bytes" not in html  # unchanged metrics left out
    assert "hlo: +2 -1 lines" in html
    assert "tanh(%x) &lt;b&gt;" in html and '<b>"' not in html  # texts are escaped
    assert '<span style="color:#116329">+%t' in html
    assert "<script" not in html and "<style" not in html and "http" not in html


def test_an_identical_diff_says_so_and_a_long_diff_is_cut() -> None:
    same = SnapshotDiff("a", "b", (), (), (MetricChange("flops", 1.0, 1.0),), ())
    assert "Identical." in render_diff_html(same, Verdict(()))
    html = render_diff_html(_diff(MAX_DIFF_LINES + 50), None)
    assert "… 54 more lines" in html
    assert "fails" not in html
