"""Steady-state latency of a compiled executable: per-call, pipelined, and a tiny program's."""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import jax

from jaxinspect.bench.model import CachedStats, DispatchStats, PipelinedStats
from jaxinspect.bench.stats import cached_stats
from jaxinspect.binding import CallPlan
from jaxinspect.errors import StageError
from jaxinspect.errtrace import format_user_failure

MIN_RUNS = 10
MAX_RUNS = 100_000
MIN_WARMUP = 5
MAX_WARMUP = 1_000
#: Fractions of the time budget for warm-up, each pipelined round and the tiny program.
WARMUP_SHARE = 0.1
PIPELINE_SHARE = 0.1
TINY_SHARE = 0.1
PIPELINE_ROUNDS = 3
MAX_PIPELINE_CALLS = 1_000


@dataclass(frozen=True, slots=True)
class CallInputs:
    """Arguments of the compiled call; donated ones are copied afresh for every call."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    donated_positions: frozenset[int]
    donated_names: frozenset[str]

    @property
    def donates(self) -> bool:
        """Whether any argument is donated."""
        return bool(self.donated_positions or self.donated_names)

    @property
    def donated_bytes(self) -> int:
        """Bytes of the donated arguments: what each call's fresh copies allocate."""
        donated = [a for i, a in enumerate(self.args) if i in self.donated_positions]
        donated += [v for k, v in self.kwargs.items() if k in self.donated_names]
        return _tree_bytes(donated)

    def fresh(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments, with new device copies of the donated ones (donation deletes them)."""
        if not self.donates:
            return self.args, self.kwargs
        args = tuple(
            _copy(a) if i in self.donated_positions else a for i, a in enumerate(self.args)
        )
        kwargs = {k: _copy(v) if k in self.donated_names else v for k, v in self.kwargs.items()}
        return args, kwargs


def _tree_bytes(tree: Any) -> int:
    return sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree))


def _copy(tree: Any) -> Any:
    return jax.tree.map(lambda x: jax.device_put(x, may_alias=False), tree)


@dataclass(frozen=True, slots=True)
class Budget:
    """How many calls to make: ``runs`` exactly, or as many as fit in ``seconds``."""

    runs: int | None
    seconds: float
    warmup: int | None


def measure_per_call(
    compiled: Any, inputs: CallInputs, budget: Budget, *, target: str
) -> CachedStats:
    """Warm up, then time calls one by one, each waited on with ``block_until_ready``.

    Raises:
        StageError: The executable raised (stage ``execute``).
    """
    with _user_call(target):
        warmup, block = _warm_up(compiled, inputs, budget)
        totals: list[float] = []
        dispatches: list[float] = []
        perf = time.perf_counter
        with _gc_paused():
            loop_start = perf()
            while _more(budget, len(totals), perf() - loop_start):
                args, kwargs = inputs.fresh()  # donated copies are made outside the timing
                start = perf()
                out = compiled(*args, **kwargs)
                returned = perf()
                block(out)
                end = perf()
                totals.append(end - start)
                dispatches.append(returned - start)
    return cached_stats(totals, dispatches, warmup)


def measure_pipelined(
    compiled: Any,
    inputs: CallInputs,
    budget: Budget,
    median_s: float,
    *,
    max_bytes: int,
    target: str,
) -> PipelinedStats:
    """Dispatch calls back to back and wait once at the end, for a few rounds.

    A round holds every output (and every donated copy) at once, so the number of calls is
    also capped to keep those under ``max_bytes``.
    """
    if budget.runs is not None:
        calls = min(budget.runs, MAX_PIPELINE_CALLS)
    else:
        wanted = int(budget.seconds * PIPELINE_SHARE / max(median_s, 1e-9))
        calls = max(MIN_WARMUP, min(wanted, MAX_PIPELINE_CALLS))
    per_round_call = _tree_bytes(compiled.out_info) + inputs.donated_bytes
    if per_round_call > 0:
        calls = max(1, min(calls, max_bytes // per_round_call))
    per_call: list[float] = []
    with _user_call(target), _gc_paused():
        for _ in range(PIPELINE_ROUNDS):
            prepared = [inputs.fresh() for _ in range(calls)]
            start = time.perf_counter()
            outs = [compiled(*args, **kwargs) for args, kwargs in prepared]
            jax.block_until_ready(outs)
            per_call.append((time.perf_counter() - start) / calls)
            del outs, prepared
    return PipelinedStats(
        per_call_s=statistics.median(per_call),
        calls=calls,
        rounds=PIPELINE_ROUNDS,
        round_per_call_s=tuple(per_call),
    )


def measure_tiny_dispatch(device: Any, budget: Budget) -> DispatchStats:
    """Per-call cost of ``x + 1`` on a float32[8] on ``device``: the floor of any call."""
    x = jax.device_put(jax.numpy.zeros((8,), jax.numpy.float32), device)
    compiled = jax.jit(lambda v: v + 1).lower(x).compile()
    tiny_budget = Budget(budget.runs, budget.seconds * TINY_SHARE, budget.warmup)
    stats = measure_per_call(
        compiled,
        CallInputs((x,), {}, frozenset(), frozenset()),
        tiny_budget,
        target="(tiny dispatch probe)",
    )
    assert stats.dispatch_median_s is not None
    return DispatchStats(stats.median_s, stats.dispatch_median_s, stats.count)


def _warm_up(compiled: Any, inputs: CallInputs, budget: Budget) -> tuple[int, Callable[[Any], Any]]:
    """Untimed calls (the first executions are slower); returns their count and a waiter."""
    done = 0
    start = time.perf_counter()
    out: Any = None
    while (
        (done < budget.warmup)
        if budget.warmup is not None
        else (
            done < MIN_WARMUP
            or (time.perf_counter() - start < budget.seconds * WARMUP_SHARE and done < MAX_WARMUP)
        )
    ):
        args, kwargs = inputs.fresh()
        out = jax.block_until_ready(compiled(*args, **kwargs))
        done += 1
    # A single array waits on itself; the pytree walk would add to every tiny sample.
    if isinstance(out, jax.Array):
        return done, _block_array
    return done, jax.block_until_ready


def _block_array(out: Any) -> Any:
    return out.block_until_ready()


def _more(budget: Budget, done: int, elapsed: float) -> bool:
    if budget.runs is not None:
        return done < budget.runs
    return done < MIN_RUNS or (elapsed < budget.seconds and done < MAX_RUNS)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Like timeit: a collection in the middle of a sample measures Python, not the program.
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _user_call(target: str) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        raise StageError("execute", format_user_failure("execute", target, exc)) from exc


def split_donated(plan: CallPlan, args: list[Any], kwargs: dict[str, Any]) -> CallInputs:
    """``CallInputs`` from the call plan's donation marks and the dynamic arguments."""
    positional = [a for a in plan.args if not a.keyword and not a.static]
    positions = frozenset(i for i, a in enumerate(positional) if a.donated)
    names = frozenset(a.name for a in plan.args if a.keyword and a.donated)
    return CallInputs(tuple(args), dict(kwargs), positions, names)
