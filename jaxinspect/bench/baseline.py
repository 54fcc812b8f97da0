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
from dataclasses import dataclass, field, fields
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
    seconds_problem,
)
from jaxinspect.errors import UsageError
from jaxinspect.jsonfields import DecodeError, decode, encode_object, js

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


def _cpu_count(value: Any) -> str | None:
    ok = value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)
    return None if ok else "a positive integer or null"


def _cold(value: Any) -> str | tuple[str, str] | None:
    if not isinstance(value, dict):
        return "an object"
    for name, samples in value.items():
        if name not in COLD_PHASES:
            return name, f"a cold phase ({', '.join(COLD_PHASES)})"
        problem = seconds_problem(samples, allow_zero=True)
        if problem is not None:
            return name, problem
    return None


@dataclass(frozen=True, slots=True)
class BaselineEnvironment:
    """backend, device_kind, jax/jaxlib/python versions, platform, cpu_count, x64: where the
    samples were measured; a difference is a note (a failure with --strict-env)."""

    backend: str
    device_kind: str
    jax_version: str
    jaxlib_version: str
    python_version: str
    platform: str
    cpu_count: int | None = field(metadata=js(check=_cpu_count, schema={"minimum": 1}))
    x64: bool


@dataclass(frozen=True, slots=True)
class Baseline:
    """What ``bench --save FILE`` writes and ``--baseline FILE`` reads: every sample a latency
    gate judges, and the environment they were measured in (with ``schema_version`` and
    ``kind`` beside them in the file)."""

    target: str
    spec: str
    environment: BaselineEnvironment
    #: Per round (seconds): the fastest and the median of the target's calls, and the
    #: fastest call of a fixed reference program timed right after (the machine's speed).
    gate: GateRounds
    #: Per cold phase, the samples (seconds) of each fresh process.
    cold: tuple[tuple[str, tuple[float, ...]], ...] = field(
        metadata=js(
            mapping=True,
            check=_cold,
            schema={
                "additionalProperties": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "number", "minimum": 0},
                }
            },
        )
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


def baseline_document(report: BenchReport) -> Baseline:
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
) -> Baseline:
    """A baseline from its parts (``bench --save``, the pytest fixture)."""
    stored = {name: getattr(environment, name) for name in _ENVIRONMENT}
    return Baseline(target, spec, BaselineEnvironment(**stored), gate, tuple(cold.items()))


def save_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` to ``path`` atomically (a reader sees the old file or the new one).

    Raises:
        UsageError: The file cannot be written.
    """
    document = {"schema_version": SCHEMA_VERSION, "kind": KIND, **encode_object(baseline)}
    data = json.dumps(document, indent=2, sort_keys=True) + "\n"
    write_atomically(path, data, what="the baseline")


#: The largest baseline file read: a real one is a few kilobytes (30 rounds, a few cold runs).
MAX_BASELINE_BYTES = 4 * 1024**2
#: The keys of a baseline file read before its fields (whether it is one, in this format).
_FORMAT_KEYS = ("schema_version", "kind")


def load_baseline(path: Path) -> Baseline:
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
    try:
        return read_baseline(document)
    except DecodeError as exc:
        raise wrong(exc.path, exc.expected) from None


def read_baseline(document: dict[str, Any]) -> Baseline:
    """A baseline file's fields, each checked as it is read.

    Raises:
        DecodeError: Names the first field that is wrong.
    """
    baseline = decode(Baseline, document, allowed=_FORMAT_KEYS)
    gate = baseline.gate
    if len({len(gate.target_min_s), len(gate.target_median_s), len(gate.reference_min_s)}) != 1:
        raise DecodeError("gate", "lists of the same length (one entry per round)")
    return baseline


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


#: Environment fields that, when they differ, make a comparison less meaningful.
_ENVIRONMENT = tuple(f.name for f in fields(BaselineEnvironment))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number of seconds")


def check_identity(
    baseline: Baseline,
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
    pairs = [("target", _norm_target(baseline.target), _norm_target(target))]
    pairs.append(("spec", _norm_spec(baseline.spec), _norm_spec(spec)))
    if backend is not None:
        pairs.append(("backend", baseline.environment.backend, backend))
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
    baseline: Baseline,
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
    baseline: Baseline,
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
            old = list(getattr(baseline.gate, field))
            new = list(getattr(gate, field))
            kind = "fastest" if rule.metric == "cached.min" else "median"
            method = f"median over rounds of each round's {kind} call, bootstrap"
        else:
            old = [s for s in dict(baseline.cold).get(rule.metric, ()) if s > 0]
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
    notes = _environment_notes(baseline.environment, environment)
    notes += _machine_speed_note(list(baseline.gate.reference_min_s), gate.reference_min_s)
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


def _environment_notes(stored: BaselineEnvironment, now: Environment) -> tuple[str, ...]:
    notes = []
    for name in _ENVIRONMENT:
        then, current = getattr(stored, name), getattr(now, name)
        if then != current:
            notes.append(f"{name}: baseline {then!r}, this run {current!r}")
    return tuple(notes)
