"""Timed calls of a compiled executable, shared by ``stages`` and ``bench``.

Every call gets fresh copies of its donated arguments, made outside the timed interval
(donation deletes the buffers a call was given), is waited on with ``block_until_ready``,
and runs with garbage collection paused (``quiet_gc``). How many calls a series makes
adapts to how long one call takes: a slow call is timed a few times, not a fixed minimum,
and a series expected to take long reports its progress with an estimate.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import jax

from jaxinspect.inputs.binding import CallPlan
from jaxinspect.pipeline.timing.quiet import frozen_heap, quiet_gc
from jaxinspect.process.usercode import user_code
from jaxinspect.renderers.units import format_seconds

#: When a series' minimum number of calls would take longer than this, the minimum drops to
#: the series' ``few_runs``: a 40 s call is timed 3 times, not 5 or 10.
SLOW_FLOOR_S = 5.0
#: A series expected to take longer than this reports progress (with an estimate).
PROGRESS_AFTER_S = 2.0


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
        return tree_bytes(donated)

    def fresh(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments, with new device copies of the donated ones (donation deletes them)."""
        if not self.donates:
            return self.args, self.kwargs
        args = tuple(
            _copy(a) if i in self.donated_positions else a for i, a in enumerate(self.args)
        )
        kwargs = {k: _copy(v) if k in self.donated_names else v for k, v in self.kwargs.items()}
        return args, kwargs


def split_donated(plan: CallPlan, args: list[Any], kwargs: dict[str, Any]) -> CallInputs:
    """``CallInputs`` from the call plan's donation marks and the dynamic arguments."""
    positional = [a for a in plan.args if not a.keyword and not a.static]
    positions = frozenset(i for i, a in enumerate(positional) if a.donated)
    names = frozenset(a.name for a in plan.args if a.keyword and a.donated)
    return CallInputs(tuple(args), dict(kwargs), positions, names)


def tree_bytes(tree: Any) -> int:
    """Bytes of the array leaves of ``tree`` (arrays or ``ShapeDtypeStruct``s)."""
    return sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree))


def _copy(tree: Any) -> Any:
    return jax.tree.map(lambda x: jax.device_put(x, may_alias=False), tree)


@dataclass(frozen=True, slots=True)
class CallCount:
    """How many calls a series makes.

    Attributes:
        runs: Exactly this many; ``None`` for as many as fit in ``budget_s``, at least
            ``min_runs`` (``few_runs`` for a slow call, see ``SLOW_FLOOR_S``), at most
            ``max_runs``.
        budget_s: Seconds of calls when ``runs`` is ``None``.
        min_runs: The floor for a call fast enough that the floor takes under ``SLOW_FLOOR_S``.
        max_runs: The ceiling.
        few_runs: The floor for a slower call.
    """

    runs: int | None
    budget_s: float
    min_runs: int
    max_runs: int
    few_runs: int

    def floor(self, call_s: float) -> int:
        """The fewest calls for a call of ``call_s`` seconds."""
        if call_s * self.min_runs <= SLOW_FLOOR_S:
            return self.min_runs
        return min(self.min_runs, self.few_runs)

    def wants_more(self, done: int, spent_s: float, call_s: float | None) -> bool:
        """Whether to make another call after ``done`` calls that took ``spent_s`` together."""
        if self.runs is not None:
            return done < self.runs
        if call_s is None:  # nothing known about the call yet
            return self.min_runs > 0
        return done < self.floor(call_s) or (spent_s < self.budget_s and done < self.max_runs)

    def expected(self, call_s: float) -> int:
        """How many calls the series will make, if each takes ``call_s`` seconds."""
        if self.runs is not None:
            return self.runs
        by_budget = math.ceil(self.budget_s / call_s) if call_s > 0 else self.max_runs
        return min(max(self.floor(call_s), by_budget), self.max_runs)


@dataclass(frozen=True, slots=True)
class SeriesProgress:
    """Where a long series of calls stands: reported only when it is expected to take long."""

    what: str
    done: int
    total: int
    call_s: float

    @property
    def left_s(self) -> float:
        """Estimated seconds until the series ends."""
        return max(0, self.total - self.done) * self.call_s

    def line(self) -> str:
        """One line for people: the estimate first, then each call done."""
        if self.done == 0:
            return (
                f"{self.what}: {self.total} call(s) of about {format_seconds(self.call_s)} "
                f"each, about {format_seconds(self.left_s)} in all"
            )
        done = f"{self.what}: {self.done} of {self.total} done"
        return (
            done if self.done >= self.total else f"{done}, about {format_seconds(self.left_s)} left"
        )


#: Receives a ``SeriesProgress`` before and after each call of a long series.
ProgressSink = Callable[[SeriesProgress], None]


@dataclass(frozen=True, slots=True)
class CallSeries:
    """Seconds of each call of a series."""

    #: Until the outputs were ready (waited on).
    totals: tuple[float, ...]
    #: Until the call returned, before waiting: the asynchronous dispatch.
    dispatches: tuple[float, ...]


@contextmanager
def user_calls(target: str) -> Iterator[None]:
    """Turn an exception of the executable into the user's ``StageError`` (stage ``execute``).

    Host callbacks (``jax.debug.print``) print to stderr meanwhile (``pipeline.usercode``).
    """
    with user_code("execute", target):
        yield


def time_one_call(compiled: Any, inputs: CallInputs, *, target: str) -> float:
    """Seconds of one call, waited on, garbage collected before it and paused during it.

    Raises:
        StageError: The executable raised.
    """
    args, kwargs = inputs.fresh()
    wait = output_waiter(compiled)
    with user_calls(target), frozen_heap(), quiet_gc():
        start = time.perf_counter()
        wait(compiled(*args, **kwargs))
        return time.perf_counter() - start


def time_series(
    compiled: Any,
    inputs: CallInputs,
    count: CallCount,
    *,
    target: str,
    what: str,
    call_s: float | None = None,
    progress: ProgressSink | None = None,
) -> CallSeries:
    """Call ``compiled`` one call at a time as ``count`` says, timing each.

    Garbage is collected before the series and the collector paused throughout; the fresh
    donated copies and any progress report happen between the timed intervals.

    Args:
        compiled: A ``jax.stages.Compiled``.
        inputs: Its arguments, already on the device.
        count: How many calls.
        target: For error messages.
        what: Names the series in progress lines (``cached calls``).
        call_s: Seconds of an earlier call, the estimate until this series has its own.
        progress: Receives the progress of a series expected to last over ``PROGRESS_AFTER_S``.

    Raises:
        StageError: The executable raised.
    """
    wait = output_waiter(compiled)
    totals: list[float] = []
    dispatches: list[float] = []
    perf = time.perf_counter
    with user_calls(target), frozen_heap(), quiet_gc():
        loop_start = perf()
        estimate = call_s
        _report(progress, what, count, 0, estimate)
        while count.wants_more(len(totals), perf() - loop_start, estimate):
            args, kwargs = inputs.fresh()  # donated copies are made outside the timing
            start = perf()
            out = compiled(*args, **kwargs)
            returned = perf()
            wait(out)
            end = perf()
            del out, args, kwargs
            totals.append(end - start)
            dispatches.append(returned - start)
            estimate = statistics.median(totals)
            _report(progress, what, count, len(totals), estimate)
    return CallSeries(tuple(totals), tuple(dispatches))


def _report(
    progress: ProgressSink | None, what: str, count: CallCount, done: int, call_s: float | None
) -> None:
    if progress is None or call_s is None:
        return
    total = max(count.expected(call_s), done)
    if total * call_s > PROGRESS_AFTER_S:
        progress(SeriesProgress(what, done, total, call_s))


def output_waiter(compiled: Any) -> Callable[[Any], Any]:
    """How to wait on the outputs: a single array waits on itself, cheaper than a tree walk."""
    if isinstance(getattr(compiled, "out_info", None), jax.ShapeDtypeStruct):
        return _block_array
    return _block_tree


def _block_tree(out: Any) -> Any:
    return jax.block_until_ready(out)


def _block_array(out: Any) -> Any:
    return out.block_until_ready()
