"""The ``jaxinspect_bench`` pytest fixture: a latency baseline per test, judged as ``bench`` does.

``jaxinspect_bench(fn, spec)`` compiles ``fn`` once, warms it up, measures the gate's rounds
(``jaxinspect.bench.gate``) in the test's process and compares them with the baseline stored
next to the test (``__jaxinspect__/<module>/<test>.bench.json``); ``pytest
--jaxinspect-update`` stores it. Steady-state rules only (``cached.min``, ``cached.median``):
a test runs in one process, so there are no cold phases to judge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxinspect.bench.baseline import STEADY_METRICS
from jaxinspect.bench.gatereport import GateVerdict
from jaxinspect.bench.report import Environment, GateRounds
from jaxinspect.errors import UsageError

#: Seconds of warm-up calls before the rounds (``bench`` spends its whole budget before them).
WARMUP_S = 0.5


def measure(
    loaded: Any, spec: Any, backend: str | None, budget_s: float
) -> tuple[GateRounds, Environment]:
    """Compile once, warm up, and measure the gate's rounds in this process.

    Raises:
        SpecError, UsageError: The spec or backend is wrong.
        StageError: The function failed.
    """
    from jaxinspect.bench.gate import measure_rounds
    from jaxinspect.bench.runner import environment_of
    from jaxinspect.bench.steady import Budget, measure_per_call
    from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES
    from jaxinspect.pipeline.stages import run_pipeline
    from jaxinspect.pipeline.timing.calls import split_donated
    from jaxinspect.stages.runner import prepare_call, x64_mode

    target = loaded.ref.spec
    with x64_mode(spec):
        call = prepare_call(loaded, spec, backend)
        artifacts = run_pipeline(call.function, call.plan, call.args, call.kwargs, target=target)
        args, kwargs = call.concrete_inputs(0, DEFAULT_MAX_INPUT_BYTES)
        inputs = split_donated(call.plan, args, kwargs)
        warm = measure_per_call(
            artifacts.compiled, inputs, Budget(None, WARMUP_S, None), target=target
        )
        gate = measure_rounds(
            artifacts.compiled,
            inputs,
            call.device,
            call_s=warm.median_s,
            budget_s=budget_s,
            target=target,
        )
    return gate, environment_of(call.device, spec.needs_x64)


def check_latency(
    path: Path,
    loaded: Any,
    spec: Any,
    *,
    update: bool,
    fail_on: str | None,
    backend: str | None,
    budget_s: float,
) -> tuple[str, GateVerdict | None]:
    """``("written", None)``, or ``("judged", verdict)`` against the baseline at ``path``.

    Raises:
        UsageError: A rule names a cold phase, or the stored baseline is unreadable.
        FileNotFoundError: No baseline is stored and ``update`` is off.
    """
    from jaxinspect.bench.baseline import (
        judge_samples,
        load_baseline,
        parse_gate_rules,
        samples_document,
        save_baseline,
    )

    rules = parse_gate_rules(fail_on)
    cold = [r.text for r in rules if r.metric not in STEADY_METRICS]
    if cold:
        raise UsageError(
            f"jaxinspect_bench: {', '.join(cold)}: a test has no fresh processes to time; "
            f"use {' or '.join(STEADY_METRICS)} (cold phases: jaxinspect bench --baseline)"
        )
    if not update and not path.is_file():
        raise FileNotFoundError(path)
    gate, environment = measure(loaded, spec, backend, budget_s)
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_baseline(path, samples_document(loaded.ref.spec, spec.source, environment, gate, {}))
        return "written", None
    stored = load_baseline(path)
    return "judged", judge_samples(stored, str(path), gate, {}, environment, rules)
