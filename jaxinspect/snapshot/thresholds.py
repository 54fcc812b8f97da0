"""``--fail-on`` rules: which differences fail a diff or check (no jax import).

Grammar, comma-separated: ``METRIC>+5%``, ``METRIC<-10%``, ``METRIC>1000`` (absolute delta),
``new-op:NAME`` (NAME's count rises in any stage, or its executions per run among the
collectives), ``new-op:*`` (any op appears that was absent), ``text`` (any text change) and
``any`` (any difference, the default).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jaxinspect.errors import UsageError
from jaxinspect.snapshot.model import COST_KEYS, MEMORY_KEYS
from jaxinspect.suggest import did_you_mean

#: Names a metric rule may use.
METRICS = (*COST_KEYS, *MEMORY_KEYS, "fusions", "collectives", "collective_bytes")
# A name may hold "-" so that "collective-bytes>..." is answered with "did you mean".
_METRIC_RULE = re.compile(r"^([a-z_-]+?)\s*(>=|<=|>|<)\s*([+-]?\d+(?:\.\d+)?)\s*(%?)$")

if TYPE_CHECKING:
    from jaxinspect.snapshot.diffreport import SnapshotDiff


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule; ``kind`` is ``metric``, ``new-op``, ``text`` or ``any``."""

    text: str
    kind: str
    name: str = ""
    op: str = ""
    value: float = 0.0
    relative: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    """The rules a diff tripped, and the ones that could not be evaluated."""

    tripped: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """Whether any rule tripped."""
        return bool(self.tripped)


DEFAULT_RULES = (Rule("any", "any"),)


def parse_rules(text: str | None, metrics: tuple[str, ...] = METRICS) -> tuple[Rule, ...]:
    """Parse a ``--fail-on`` value; ``None`` (not given) means ``any``.

    ``metrics`` are the names a metric rule may use (``run`` gates on ``recompiles``).

    Raises:
        UsageError: A rule is malformed or names an unknown metric, or the value names no
            rule at all (``""``, ``",,,"``): an empty gate would pass every difference.
    """
    if text is None:
        return DEFAULT_RULES
    rules = tuple(_parse_rule(part.strip(), metrics) for part in text.split(",") if part.strip())
    if not rules:
        raise UsageError(
            f"--fail-on {text!r} names no rule; with none, no difference would fail",
            hint="Name at least one rule, e.g. --fail-on any (the default) or 'flops>+5%'.",
        )
    return rules


def _parse_rule(part: str, metrics: tuple[str, ...]) -> Rule:
    if part in ("any", "text"):
        return Rule(part, part)
    if part.startswith("new-op:"):
        name = part.removeprefix("new-op:").strip()
        if not name:
            raise UsageError(f"--fail-on {part!r}: name an op, e.g. new-op:all-gather")
        return Rule(part, "new-op", name=name)
    match = _METRIC_RULE.match(part)
    if match is None:
        raise UsageError(
            f"--fail-on {part!r}: expected METRIC>+N%, METRIC<-N%, METRIC>N, new-op:NAME, "
            "text or any",
            hint=f"metrics: {', '.join(metrics)}",
        )
    name, op, value, percent = match.groups()
    if name not in metrics:
        raise UsageError(
            f"--fail-on {part!r}: unknown metric {name!r}{did_you_mean(name, metrics)}",
            hint=f"metrics: {', '.join(metrics)}",
        )
    return Rule(part, "metric", name=name, op=op, value=float(value), relative=bool(percent))


def evaluate(rules: tuple[Rule, ...], diff: SnapshotDiff) -> Verdict:
    """Which ``rules`` the differences in ``diff`` trip."""
    tripped: list[str] = []
    notes: list[str] = []
    for rule in rules:
        reason = _check(rule, diff, notes)
        if reason is not None:
            tripped.append(f"{rule.text}: {reason}")
    return Verdict(tuple(tripped), tuple(notes))


def _check(rule: Rule, diff: SnapshotDiff, notes: list[str]) -> str | None:
    if rule.kind == "any":
        return None if diff.identical else "the snapshots differ"
    if rule.kind == "text":
        changed = ", ".join(t.stage for t in diff.texts)
        return f"text changed ({changed})" if changed else None
    if rule.kind == "new-op":
        return _check_new_op(rule, diff)
    metric = next((m for m in diff.metrics if m.name == rule.name), None)
    if metric is None:
        notes.append(
            f"{rule.text}: {rule.name} is not recorded on both sides (a loose text file, or "
            "a snapshot written by an older jaxinspect); not evaluated"
        )
        return None
    if metric.before is None and metric.after is None:
        notes.append(f"{rule.text}: {rule.name} is unavailable on both sides; not evaluated")
        return None
    if metric.before is None or metric.after is None:
        return f"{rule.name} is reported on one side only ({metric.before} -> {metric.after})"
    amount = metric.percent if rule.relative else metric.delta
    assert amount is not None  # both sides are known
    if _compare(amount, rule.op, rule.value):
        # The reason is read by people; the exact values are in the diff's metrics.
        from jaxinspect.snapshot.text import format_metric

        sign = "+" if amount >= 0 else "-"
        shown = (
            _fmt_percent(amount) if rule.relative else sign + format_metric(rule.name, abs(amount))
        )
        before, after = (format_metric(rule.name, v) for v in (metric.before, metric.after))
        return f"{rule.name} {before} -> {after} ({shown})"
    return None


def _check_new_op(rule: Rule, diff: SnapshotDiff) -> str | None:
    for change in diff.op_changes:
        if rule.name == "*" and change.before == 0 and change.after > 0:
            return f"{change.op} appeared in {change.stage}"
        # "sine" also names "stablehlo.sine": one rule covers every stage's spelling.
        named = rule.name in (change.op, change.op.partition(".")[2])
        if named and change.after > change.before:
            return f"{change.op} in {change.stage}: {change.before} -> {change.after}"
    return None


def _compare(amount: float, op: str, value: float) -> bool:
    if op == ">":
        return amount > value
    if op == ">=":
        return amount >= value
    if op == "<":
        return amount < value
    return amount <= value


def _fmt_percent(amount: float) -> str:
    return f"{'+' if amount > 0 else '-'}inf%" if math.isinf(amount) else f"{amount:+.1f}%"
