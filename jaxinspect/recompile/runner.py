"""Send each case through ONE jitted function and count the compilations JAX really does."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import jax
import jaxlib

from jaxinspect import jaxapi
from jaxinspect.base.failures import case_failure
from jaxinspect.errors import JaxInspectError, SpecError
from jaxinspect.inputs.adapt import adapt_function, bind_target
from jaxinspect.inputs.arrays import abstract_tree, build_call
from jaxinspect.inputs.binding import CallPlan
from jaxinspect.inputs.factories import Resolver
from jaxinspect.inputs.numbers import traces_numbers
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import LoadedTarget
from jaxinspect.inputs.transform_apply import composition, transform_target
from jaxinspect.inputs.transforms import Transform
from jaxinspect.jaxapi import COMPILE_EVENT, LOWER_EVENT, TRACE_EVENT
from jaxinspect.pipeline.backend import select_device
from jaxinspect.pipeline.placement import place, reserve_devices
from jaxinspect.process.frames import hide_tool_frames
from jaxinspect.process.usercode import user_code
from jaxinspect.recompile.cachekey import CacheKey, KeyChange, build_cache_key, key_changes
from jaxinspect.recompile.report import CaseOutcome, FailedCase, HelperCompile, SweepReport
from jaxinspect.topologies.tpu import topology_devices

#: A case with its call plan, or the failure that stopped it before jit.
_Bound = tuple[str, Spec, CallPlan | FailedCase]


class _EventCounter:
    """Counts and times jax.monitoring compile-pipeline events while registered.

    JAX names the function each event is for (``fun_name``). The target's own events carry
    its name (``scaled`` for the trace, ``jit(scaled)`` for lowering and compilation); any
    other compilation is a helper JAX compiled while the target traced, e.g. an eager
    ``jit(sqrt)`` under ``jax.ensure_compile_time_eval``. Those are counted apart, by name, so
    that ``--max-compiles`` judges the target alone.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.helpers: dict[str, int] = {}
        self.target_names: frozenset[str] = frozenset()

    def __call__(self, event: str, duration: float, **kwargs: Any) -> None:
        name = kwargs.get("fun_name")
        if isinstance(name, str) and self.target_names and name not in self.target_names:
            if event == COMPILE_EVENT:
                self.helpers[name] = self.helpers.get(name, 0) + 1
            return  # a helper's trace or lowering, or a nested jit traced inline
        self.counts[event] = self.counts.get(event, 0) + 1
        self.seconds[event] = self.seconds.get(event, 0.0) + duration

    def take(self) -> tuple[dict[str, int], dict[str, float], dict[str, int]]:
        counts, seconds, helpers = self.counts, self.seconds, self.helpers
        self.counts, self.seconds, self.helpers = {}, {}, {}
        return counts, seconds, helpers


@contextmanager
def _counting() -> Iterator[_EventCounter]:
    counter = _EventCounter()
    jax.monitoring.register_event_duration_secs_listener(counter)
    try:
        yield counter
    finally:
        jax.monitoring.unregister_event_duration_listener(counter)


def run_sweep(
    loaded: LoadedTarget,
    cases: tuple[tuple[str, Spec], ...],
    *,
    backend: str | None = None,
    transforms: tuple[Transform, ...] = (),
    max_compiles: int | None = None,
) -> SweepReport:
    """Send each case's abstract arguments through one ``jax.jit`` of the target, in order.

    Each case runs ``jitted.trace(...).lower().compile()``, which goes through the same
    tracing, lowering and compilation caches as a call; nothing is executed. A case that
    fails (it does not bind, binds static/donated arguments unlike the first case that binds,
    or the user's function raises) becomes a ``FailedCase``, and the next case runs.

    Raises:
        StageError: ``jax.jit`` refused the function itself (no case can run).
    """
    chain = composition(loaded, transforms)
    target = loaded.ref.spec
    function = transform_target(loaded, transforms).function
    reserve_devices([spec for _, spec in cases], backend)
    # A case on a TPU slice or GPUs compiled for from here names their platform, not the host's.
    topology = next((spec.topology for _, spec in cases if spec.topology), None)
    platform = (
        select_device(backend) if topology is None else topology_devices(topology)[0]
    ).platform
    x64 = any(spec.needs_x64 for _, spec in cases)
    with jax.enable_x64(x64):
        # One per sweep: equal factory calls share their statics.
        numbers = bool(cases) and traces_numbers(function, cases[0][1])
        resolver = Resolver(traced_numbers=numbers)
        bound = [_bind(name, spec, function, target, resolver) for name, spec in cases]
        jitted, bound = _one_jit(adapt_function(function, [p for *_, p in bound]), bound, target)
        results: list[CaseOutcome | FailedCase] = []
        executables: list[tuple[str, Any]] = []
        with _counting() as counter:
            counter.target_names = _event_names(jitted)
            for name, spec, plan in bound:
                if isinstance(plan, FailedCase):
                    results.append(plan)
                    continue
                try:
                    outcome = _sweep_case(
                        name, spec, plan, jitted, backend, resolver, target, counter
                    )
                except JaxInspectError as exc:
                    counter.take()  # events of a failed attempt are not the next case's
                    results.append(FailedCase(name, spec.source, case_failure(exc)))
                    continue
                executable, case = outcome
                if not executables:  # a fresh jit: its first case must trace, lower, compile
                    _require_events(case)
                shared = next((n for n, e in executables if e is executable), None)
                executables.append((name, executable))
                nearest, changes = _nearest(case.key, results)
                results.append(replace(case, shares_with=shared, nearest=nearest, changes=changes))
    return SweepReport(
        target=target,
        composition=chain,
        backend=platform,
        jax_version=jax.__version__,
        jaxlib_version=jaxlib.__version__,
        x64=x64,
        cases=tuple(results),
        max_compiles=max_compiles,
    )


def _bind(
    name: str, spec: Spec, function: Callable[..., Any], target: str, resolver: Resolver
) -> _Bound:
    try:
        return name, spec, bind_target(function, spec, target=target, resolver=resolver).plan
    except JaxInspectError as exc:
        return name, spec, FailedCase(name, spec.source, case_failure(exc))


def _sweep_case(
    name: str,
    spec: Spec,
    plan: CallPlan,
    jitted: Any,
    backend: str | None,
    resolver: Resolver,
    target: str,
    counter: _EventCounter,
) -> tuple[Any, CaseOutcome]:
    """Compile one case through ``jitted``; its executable and its outcome (no neighbours yet)."""
    placement = place(spec, backend)  # per case: a sharding is part of the cache key
    args, kwargs = build_call(plan, lambda node: abstract_tree(node, placement, resolver))
    start = time.perf_counter()
    compiled = _aot(jitted, args, kwargs, target)
    wall = time.perf_counter() - start
    counts, seconds, helpers = counter.take()
    outcome = CaseOutcome(
        name=name,
        source=spec.source,
        key=build_cache_key(plan, args, kwargs),
        compiled=counts.get(COMPILE_EVENT, 0) > 0,
        traces=counts.get(TRACE_EVENT, 0),
        lowerings=counts.get(LOWER_EVENT, 0),
        compiles=counts.get(COMPILE_EVENT, 0),
        compile_s=seconds.get(COMPILE_EVENT, 0.0),
        wall_s=wall,
        shares_with=None,
        nearest=None,
        changes=(),
        helper_compiles=tuple(HelperCompile(n, c) for n, c in sorted(helpers.items())),
    )
    return jaxapi.executable_identity(compiled), outcome


def _event_names(jitted: Any) -> frozenset[str]:
    """The ``fun_name``s JAX gives the target's own events (none without a jitted function)."""
    if jitted is None:
        return frozenset()
    name = str(getattr(jitted, "__name__", "") or "")
    return frozenset({name, f"jit({name})"}) if name else frozenset()


def _require_events(case: CaseOutcome) -> None:
    """Fail loudly if JAX's event names changed: every case would look like a cache hit."""
    counts = {TRACE_EVENT: case.traces, LOWER_EVENT: case.lowerings, COMPILE_EVENT: case.compiles}
    when = f"while case `{case.name}`, the first through a fresh jax.jit, compiled"
    jaxapi.require_events(counts, tuple(counts), when)


def _one_jit(
    function: Callable[..., Any], bound: list[_Bound], target: str
) -> tuple[Any, list[_Bound]]:
    """One ``jax.jit`` for every case; cases binding statics/donation unlike the first fail."""
    first = next(((n, p) for n, _, p in bound if isinstance(p, CallPlan)), None)
    if first is None:  # no case binds: nothing to jit
        return None, bound
    first_name, first_plan = first
    checked: list[_Bound] = []
    for name, spec, plan in bound:
        if isinstance(plan, CallPlan):
            for attr in ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames"):
                if getattr(plan, attr) != getattr(first_plan, attr):
                    error = SpecError(
                        f"{spec.source}: binds {attr}={getattr(plan, attr)} but case "
                        f"`{first_name}` binds {getattr(first_plan, attr)}; one jitted function "
                        f"has one {attr}",
                        hint="Give every case the same static and donated parameters.",
                    )
                    plan = FailedCase(name, spec.source, case_failure(error))
                    break
        checked.append((name, spec, plan))
    # A fresh wrapper is a new cache identity: earlier jits of the same function in this
    # process (tests, notebooks) cannot turn the sweep's first compile into a hit.
    fresh = functools.wraps(function)(lambda *a, **k: function(*a, **k))
    hide_tool_frames()
    with user_code("trace", target, step="jit"):
        jitted = jax.jit(
            fresh,
            static_argnums=first_plan.static_argnums,
            static_argnames=first_plan.static_argnames,
            donate_argnums=first_plan.donate_argnums,
            donate_argnames=first_plan.donate_argnames,
        )
    return jitted, checked


def _aot(jitted: Any, args: list[Any], kwargs: dict[str, Any], target: str) -> Any:
    with user_code("compile", target, step="trace/lower/compile"):
        return jitted.trace(*args, **kwargs).lower().compile()


def _nearest(
    key: CacheKey, earlier: list[CaseOutcome | FailedCase]
) -> tuple[str | None, tuple[KeyChange, ...]]:
    """The earlier case with the fewest differing components (the latest on a tie)."""
    best: tuple[str | None, tuple[KeyChange, ...]] = (None, ())
    best_count: int | None = None
    for outcome in earlier:
        if isinstance(outcome, FailedCase):
            continue
        changes = key_changes(outcome.key, key)
        if best_count is None or len(changes) <= best_count:
            best, best_count = (outcome.name, changes), len(changes)
    return best
