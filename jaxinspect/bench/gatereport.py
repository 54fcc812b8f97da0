"""Immutable results of a latency gate: ``bench --baseline FILE --fail-on RULES``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.jsonfields import js

_POSITIVE = js(schema={"exclusiveMinimum": 0})
_ONE_OR_MORE = js(schema={"minimum": 1})


@dataclass(frozen=True, slots=True)
class GateRule:
    """``cached.median>+10%``: fail when ``metric`` is slower by more than ``threshold``."""

    text: str = field(metadata=js("rule"))
    metric: str  # "cached.median" or a cold phase ("compile", "first_call", ...)
    threshold: float = field(metadata=js(schema={"minimum": 0}))  # 0.10 for +10 %


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """One rule judged on the samples of the baseline and of this run.

    ``ratio`` is this run's median over the baseline's (for ``cached.median`` both are
    medians of per-round target/reference ratios); ``low`` and ``high`` bound it with the
    stated confidence (bootstrap over the samples). A regression needs ``low`` above
    ``1 + threshold``: slower beyond the threshold *and* beyond what the noise explains.
    """

    rule: GateRule = field(metadata=js(flatten=True))
    ratio: float = field(metadata=_POSITIVE)
    low: float = field(metadata=_POSITIVE)
    high: float = field(metadata=_POSITIVE)
    regressed: bool
    baseline_samples: int = field(metadata=_ONE_OR_MORE)
    samples: int = field(metadata=_ONE_OR_MORE)
    method: str


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """Every rule's outcome, and how the baseline's environment differs from this one."""

    baseline: str
    #: A rule regresses when the lower end of its interval (bootstrap over the samples,
    #: ``confidence`` two-sided) is above 1 + threshold.
    confidence: float = field(metadata=js(schema={"exclusiveMinimum": 0, "exclusiveMaximum": 1}))
    outcomes: tuple[RuleOutcome, ...] = field(metadata=js("rules"))
    environment_notes: tuple[str, ...]
    strict_environment: bool

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("failed",)

    @property
    def failed(self) -> bool:
        """Whether any rule found a regression (or the environment differs under --strict-env)."""
        regressed = any(o.regressed for o in self.outcomes)
        return regressed or (self.strict_environment and bool(self.environment_notes))
