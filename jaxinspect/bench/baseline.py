"""Latency baselines: ``bench --save FILE`` writes one, ``--baseline FILE`` judges a run by it.

The file (schema ``bench-baseline.schema.json``) keeps every sample the decision needs: the
gate's rounds (target and reference medians, see ``jaxinspect.bench.gate``) and each cold
phase's per-process samples, plus the environment they were measured in. No jax import here.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from jaxinspect.atomicfile import write_atomically
from jaxinspect.errors import UsageError
from jaxinspect.reports.bench import (
    COLD_PHASES,
    BenchReport,
    BenchResult,
    Environment,
    GateRounds,
)
from jaxinspect.reports.bench_gate import GateRule, GateVerdict, RuleOutcome

KIND = "jaxinspect-bench-baseline"
SCHEMA_VERSION = 1
#: Two-sided confidence of the bounds; a regression needs the lower bound (1 % quantile)
#: above the threshold, so identical code fails about 1 time in 100 per rule at most.
CONFIDENCE = 0.98
#: Steady-state metrics and the per-round samples each judges.
STEADY_METRICS = {"cached.min": "target_min_s", "cached.median": "target_median_s"}
DEFAULT_RULES = "cached.min>+10%"
METRICS = (*STEADY_METRICS, *COLD_PHASES)
#: Fewest fresh-process samples per side for a cold-phase rule.
MIN_COLD_SAMPLES = 3
#: A reference program this much faster or slower than at the baseline: another machine.
MACHINE_SPEED_TOLERANCE = 0.2
_RULE = re.compile(r"^\s*([\w.]+)\s*>\s*\+\s*(\d+(?:\.\d+)?)\s*%\s*$")
#: Environment fields that, when they differ, make a comparison less meaningful.
_ENVIRONMENT = (
    "backend",
    "device_kind",
    "jax_version",
    "jaxlib_version",
    "python_version",
    "platform",
    "cpu_count",
    "x64",
)


def parse_gate_rules(text: str | None) -> tuple[GateRule, ...]:
    """``"cached.min>+10%,compile>+25%"`` -> rules; no text means ``cached.min>+10%``.

    Raises:
        UsageError: A rule is not ``METRIC>+N%`` or names an unknown metric.
    """
    if text is None:
        text = DEFAULT_RULES
    rules = []
    for part in (p for p in text.split(",") if p.strip()):
        match = _RULE.match(part)
        if match is None:
            raise UsageError(
                f"--fail-on {part.strip()!r}: expected METRIC>+N%, e.g. cached.min>+10%",
                hint=f"metrics: {', '.join(METRICS)}",
            )
        metric, percent = match.group(1), float(match.group(2))
        if metric not in METRICS:
            raise UsageError(
                f"--fail-on {part.strip()!r}: unknown metric {metric!r}",
                hint=f"metrics: {', '.join(METRICS)}",
            )
        rules.append(GateRule(part.strip(), metric, percent / 100))
    if not rules:
        raise UsageError(f"--fail-on {text!r} names no rule")
    return tuple(rules)


def baseline_document(report: BenchReport) -> dict[str, Any]:
    """What ``--save`` writes: the main spec's samples and the environment."""
    result = report.result
    if not isinstance(result, BenchResult) or result.gate is None:
        raise UsageError("nothing to save: the main spec was not benchmarked")
    assert report.environment is not None  # a measured spec has one
    cold = {name: stats.samples_s for name, stats in result.cold.phases}
    return samples_document(report.target, result.spec, report.environment, result.gate, cold)


def samples_document(
    target: str,
    spec: str,
    environment: Environment,
    gate: GateRounds,
    cold: dict[str, tuple[float, ...]],
) -> dict[str, Any]:
    """A baseline document from its parts (``bench --save``, the pytest fixture)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "target": target,
        "spec": spec,
        "environment": {name: getattr(environment, name) for name in _ENVIRONMENT},
        "gate": {
            "calls_per_round": gate.calls_per_round,
            "target_min_s": list(gate.target_min_s),
            "target_median_s": list(gate.target_median_s),
            "reference_min_s": list(gate.reference_min_s),
        },
        "cold": {name: list(samples) for name, samples in cold.items()},
    }


def save_baseline(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` to ``path`` atomically (a reader sees the old file or the new one).

    Raises:
        UsageError: The file cannot be written.
    """
    data = json.dumps(document, indent=2, sort_keys=True) + "\n"
    write_atomically(path, data, what="the baseline")


def load_baseline(path: Path) -> dict[str, Any]:
    """The baseline at ``path``, checked field by field.

    Raises:
        UsageError: Missing, unreadable, not JSON, or not a jaxinspect baseline (the message
            names the file and the first field that is wrong).
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"baseline {path} not found; write one with bench --save") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"baseline {path}: cannot read it as JSON ({exc})") from exc

    def wrong(field: str, expected: str) -> UsageError:
        return UsageError(f"baseline {path}: `{field}` must be {expected}")

    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise wrong("kind", f"{KIND!r} (is this a bench --save file?)")
    if document.get("schema_version") != SCHEMA_VERSION:
        raise wrong("schema_version", str(SCHEMA_VERSION))
    if not isinstance(document.get("environment"), dict):
        raise wrong("environment", "an object")
    gate = document.get("gate")
    if not isinstance(gate, dict):
        raise wrong("gate", "an object")
    for key in ("target_min_s", "target_median_s", "reference_min_s"):
        if not _positive_numbers(gate.get(key)):
            raise wrong(f"gate.{key}", "a non-empty list of positive seconds")
    cold = document.get("cold")
    if not isinstance(cold, dict):
        raise wrong("cold", "an object")
    for name, samples in cold.items():
        if not _positive_numbers(samples, allow_zero=True):
            raise wrong(f"cold.{name}", "a non-empty list of seconds")
    return document


def judge(
    baseline: dict[str, Any],
    baseline_path: str,
    result: BenchResult,
    environment: Environment,
    rules: tuple[GateRule, ...],
    *,
    strict_environment: bool = False,
) -> GateVerdict:
    """Each rule on this run's samples against the baseline's (see ``RuleOutcome``)."""
    assert result.gate is not None  # measured whenever a baseline is given
    cold = {name: stats.samples_s for name, stats in result.cold.phases}
    return judge_samples(
        baseline,
        baseline_path,
        result.gate,
        cold,
        environment,
        rules,
        strict_environment=strict_environment,
    )


def judge_samples(
    baseline: dict[str, Any],
    baseline_path: str,
    gate: GateRounds,
    cold: dict[str, tuple[float, ...]],
    environment: Environment,
    rules: tuple[GateRule, ...],
    *,
    strict_environment: bool = False,
) -> GateVerdict:
    """``judge`` on samples alone; ``cold`` may be empty where no fresh process ran."""
    outcomes = []
    for rule in rules:
        if rule.metric in STEADY_METRICS:
            field = STEADY_METRICS[rule.metric]
            old = list(baseline["gate"][field])
            new = list(getattr(gate, field))
            kind = "fastest" if rule.metric == "cached.min" else "median"
            method = f"median over rounds of each round's {kind} call, bootstrap"
        else:
            old = [s for s in baseline["cold"].get(rule.metric, []) if s > 0]
            new = [s for s in cold.get(rule.metric, ()) if s > 0]
            method = "median of fresh-process samples, bootstrap"
            if min(len(old), len(new)) < MIN_COLD_SAMPLES:
                # With one or two processes a side there is no estimate of the noise: any
                # difference would look certain.
                raise UsageError(
                    f"--fail-on {rule.text!r}: judging a cold phase needs at least "
                    f"{MIN_COLD_SAMPLES} fresh-process samples on each side; the baseline "
                    f"{baseline_path} has {len(old)} and this run {len(new)} "
                    f"(use --cold-runs {MIN_COLD_SAMPLES} or more for both)"
                )
        ratio, low, high, regressed = decide(new, old, rule.threshold)
        outcomes.append(RuleOutcome(rule, ratio, low, high, regressed, len(old), len(new), method))
    notes = _environment_notes(baseline["environment"], environment)
    notes += _machine_speed_note(baseline["gate"]["reference_min_s"], gate.reference_min_s)
    return GateVerdict(baseline_path, CONFIDENCE, tuple(outcomes), notes, strict_environment)


def decide(
    new: list[float], old: list[float], threshold: float
) -> tuple[float, float, float, bool]:
    """The ratio of medians, its bounds, and whether it is a regression beyond ``threshold``."""
    from jaxinspect.bench.significance import ratio_bounds

    ratio, low, high = ratio_bounds(new, old, CONFIDENCE)
    regressed = low > 1 + threshold and not math.isclose(low, 1 + threshold)
    return ratio, low, high, regressed


def _machine_speed_note(old: list[float], new: tuple[float, ...]) -> tuple[str, ...]:
    import statistics

    speed = statistics.median(new) / statistics.median(old)
    if abs(speed - 1) <= MACHINE_SPEED_TOLERANCE:
        return ()
    return (
        f"machine speed: a fixed reference program took {speed:.2f}x its baseline time "
        "(another or a busier machine?)",
    )


def _environment_notes(stored: dict[str, Any], now: Environment) -> tuple[str, ...]:
    notes = []
    for name in _ENVIRONMENT:
        then, current = stored.get(name), getattr(now, name)
        if then != current:
            notes.append(f"{name}: baseline {then!r}, this run {current!r}")
    return tuple(notes)


def _positive_numbers(value: Any, *, allow_zero: bool = False) -> bool:
    if not isinstance(value, list) or not value:
        return False
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) and (v >= 0 if allow_zero else v > 0)
        for v in value
    )
