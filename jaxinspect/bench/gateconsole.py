"""The latency gate's verdict as a table: one row per ``--fail-on`` rule."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.bench.gatereport import GateVerdict
from jaxinspect.renderers.fit import Col, FitTable


def render_gate(verdict: GateVerdict) -> RenderableType:
    """Each rule with this run's ratio to the baseline, its bounds, and the verdict."""
    percent = round(verdict.confidence * 100)
    table = FitTable(
        [
            Col("rule"),
            Col("now / baseline", justify="right"),
            Col(f"{percent}% interval", justify="right"),
            Col("samples", justify="right", drop=1),
            Col("verdict", kind="prose"),
        ],
        title=f"Latency gate against {verdict.baseline}",
        boxed=True,
    )
    for o in verdict.outcomes:
        word = "REGRESSION" if o.regressed else "ok"
        why = f"{word}: slower than +{o.rule.threshold:.0%} beyond noise" if o.regressed else word
        table.add_row(
            o.rule.text,
            f"{o.ratio:.3f}",
            f"{o.low:.3f} – {o.high:.3f}",
            f"{o.samples} vs {o.baseline_samples}",
            Text(why, style="bold red" if o.regressed else "green"),
        )
    table.caption = (
        "A rule fails only when the interval's lower end is above 1 + threshold: slower "
        "beyond the threshold and beyond the noise. cached.min judges each round's fastest "
        "call, which load on the machine cannot make faster, so it drifts least."
    )
    parts: list[RenderableType] = [table]
    for note in verdict.environment_notes:
        style = "bold red" if verdict.strict_environment else "yellow"
        parts.append(Text(f"note: the baseline was measured elsewhere: {note}", style=style))
    return Group(*parts)
