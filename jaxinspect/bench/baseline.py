"""Latency baselines: ``bench --save FILE`` writes one, ``--baseline FILE`` judges a run by it.

The file (schema ``bench-baseline.schema.json``) keeps every sample the decision needs: the
gate's rounds (target and reference medians, see ``jaxinspect.bench.gate``) and each cold
phase's per-process samples, plus the environment they were measured in. No jax import here.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from jaxinspect.atomicfile import write_atomically
from jaxinspect.bench.gatereport import GateRule, GateVerdict, RuleOutcome
from jaxinspect.bench.report import (
    COLD_PHASES,
    BenchReport,
    BenchResult,
    Environment,
    GateRounds,
)
from jaxinspect.errors import UsageError

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


#: The largest baseline file read: a real one is a few kilobytes (30 rounds, a few cold runs).
MAX_BASELINE_BYTES = 4 * 1024**2
#: The most samples in one list of a baseline: the bootstrap's cost grows with them (4,000
#: resamples of each list), and ``bench`` writes 30 rounds and ``--cold-runs`` (at most this).
MAX_SAMPLES = 1_000
#: The longest sample accepted: a day; past it, a number is not a measured latency.
MAX_SECONDS = 86_400
_GATE_LISTS = ("target_min_s", "target_median_s", "reference_min_s")
_TOP_KEYS = frozenset({"schema_version", "kind", "target", "spec", "environment", "gate", "cold"})


def load_baseline(path: Path) -> dict[str, Any]:
    """The baseline at ``path``, size-bounded and checked field by field before any use.

    Raises:
        UsageError: Missing, unreadable, too large, not JSON (or nested or numbered past what
            JSON parsing allows), or not a jaxinspect baseline (the message names the file and
            the first field that is wrong).
    """
    document = _read_json(path)

    def wrong(field: str, expected: str) -> UsageError:
        return UsageError(f"baseline {path}: `{field}` must be {expected}")

    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise wrong("kind", f"{KIND!r} (is this a bench --save file?)")
    if document.get("schema_version") != SCHEMA_VERSION or isinstance(
        document.get("schema_version"), bool
    ):
        raise wrong("schema_version", str(SCHEMA_VERSION))
    unknown = sorted(str(k) for k in document if k not in _TOP_KEYS)
    if unknown:
        raise wrong(unknown[0], "absent (not a field of a baseline)")
    for key in ("target", "spec"):
        if not isinstance(document.get(key), str):
            raise wrong(key, "a string")
    _check_environment(document.get("environment"), wrong)
    _check_gate(document.get("gate"), wrong)
    cold = document.get("cold")
    if not isinstance(cold, dict):
        raise wrong("cold", "an object")
    for name, samples in cold.items():
        if name not in COLD_PHASES:
            raise wrong(f"cold.{name}", f"a cold phase ({', '.join(COLD_PHASES)})")
        if not _seconds(samples, allow_zero=True):
            raise wrong(f"cold.{name}", f"a list of 1 to {MAX_SAMPLES} finite seconds >= 0")
    return document


def _read_json(path: Path) -> Any:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BASELINE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"baseline {path} not found; write one with bench --save") from None
    except OSError as exc:
        raise UsageError(f"baseline {path}: cannot read it ({exc.strerror or exc})") from exc
    if len(data) > MAX_BASELINE_BYTES:
        raise UsageError(
            f"baseline {path}: larger than {MAX_BASELINE_BYTES // 1024**2} MiB; "
            "a bench --save file is a few kilobytes"
        )
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, an int over 4,300 digits
        raise UsageError(f"baseline {path}: cannot read it as JSON ({exc})") from None
    except RecursionError:
        raise UsageError(f"baseline {path}: cannot read it as JSON (nested too deeply)") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number of seconds")


def _check_environment(environment: Any, wrong: Any) -> None:
    if not isinstance(environment, dict):
        raise wrong("environment", "an object")
    for name in _ENVIRONMENT:
        value = environment.get(name)
        if name == "cpu_count":
            if value is not None and (not _is_int(value) or value < 1):
                raise wrong("environment.cpu_count", "a positive integer or null")
        elif name == "x64":
            if not isinstance(value, bool):
                raise wrong("environment.x64", "true or false")
        elif not isinstance(value, str):
            raise wrong(f"environment.{name}", "a string")


def _check_gate(gate: Any, wrong: Any) -> None:
    if not isinstance(gate, dict):
        raise wrong("gate", "an object")
    unknown = sorted(str(k) for k in gate if k not in (*_GATE_LISTS, "calls_per_round"))
    if unknown:
        raise wrong(f"gate.{unknown[0]}", "absent (not a field of a baseline)")
    calls = gate.get("calls_per_round")
    if not isinstance(calls, int) or isinstance(calls, bool) or not 1 <= calls <= 10**9:
        raise wrong("gate.calls_per_round", "a positive integer")
    for key in _GATE_LISTS:
        if not _seconds(gate.get(key)):
            raise wrong(f"gate.{key}", f"a list of 1 to {MAX_SAMPLES} positive finite seconds")
    if len({len(gate[key]) for key in _GATE_LISTS}) != 1:
        raise wrong("gate", "lists of the same length (one entry per round)")


def check_identity(
    baseline: dict[str, Any],
    baseline_path: str,
    *,
    target: str,
    spec: str,
    backend: str | None = None,
) -> None:
    """Refuse to judge a run by a baseline saved for another target, spec or backend.

    Paths are compared as written, after normalising (``./a.py`` is ``a.py``); ``backend``
    is checked once known (``None``: not yet).

    Raises:
        UsageError: They differ; the message names both (``--allow-other-baseline`` allows it).
    """
    pairs = [("target", _norm_target(baseline["target"]), _norm_target(target))]
    pairs.append(("spec", _norm_spec(baseline["spec"]), _norm_spec(spec)))
    if backend is not None:
        pairs.append(("backend", baseline["environment"]["backend"], backend))
    for what, then, now in pairs:
        if then != now:
            raise UsageError(
                f"baseline {baseline_path} was measured for {what} {then!r}; this run "
                f"measures {now!r}",
                hint="Judge each target and spec by its own bench --save file, or pass "
                "--allow-other-baseline to compare them anyway.",
            )


def _norm_target(target: str) -> str:
    path, sep, name = target.rpartition(":")
    if not sep or not path.endswith(".py"):
        return target
    return f"{os.path.normpath(path)}:{name}"


def _norm_spec(spec: str) -> str:
    path, sep, case = spec.partition(" [")
    if not path.endswith((".yaml", ".yml")):
        return spec
    return os.path.normpath(path) + sep + case


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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value: Any, *, allow_zero: bool = False) -> bool:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_SAMPLES:
        return False
    return all(_second(v, allow_zero) for v in value)


def _second(value: Any, allow_zero: bool) -> bool:
    # An int is compared before any float conversion: a 400-digit one would overflow it.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return (value >= 0 if allow_zero else value > 0) and value <= MAX_SECONDS
