"""Record every compilation while a program runs, from JAX's own events (imports jax).

Sources, all JAX's: ``jax.monitoring`` fires a duration event per trace, lowering and XLA
compilation (with ``fun_name``) and an event per persistent-cache request and hit; and with
``jax_explain_cache_misses`` on, JAX logs each tracing-cache miss from a callback whose locals
hold the new key and the function's earlier ones (``jaxapi.cache_miss_keys``). A compilation is
complete at its compile event. Nothing here runs on a cached call: JAX's C++ fast path fires
no event, so the loop of a trained step pays nothing.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from jaxinspect import jaxapi
from jaxinspect.recompile.cachekey import CacheKey, KeyChange, LeafKey, key_changes
from jaxinspect.runlog.model import Compilation
from jaxinspect.usertext import safe_repr


@dataclass
class _Pending:
    """What is known of the compilation under way in one thread."""

    call_site: str | None = None
    defined_at: str | None = None
    trace_s: float | None = None
    lower_s: float | None = None
    persistent: str | None = None
    changes: tuple[KeyChange, ...] | None = None
    explanation: str | None = None


@dataclass
class _Seen:
    """Per function: how often it compiled and every tracing-cache key it had."""

    compiles: int = 0
    keys: list[CacheKey] = field(default_factory=list)


class CompileRecorder:
    """Calls ``sink`` with a ``Compilation`` for every XLA compilation between start and stop."""

    def __init__(self, sink: Callable[[Compilation], None]) -> None:
        self._sink = sink
        self._local = threading.local()
        self._seen: dict[tuple[str, str | None], _Seen] = {}
        self._lock = threading.Lock()
        self._handler = _ExplainHandler(self._on_explain)
        self._enabled_explain = False

    def start(self) -> None:
        """Listen to JAX's events and cache-miss explanations."""
        import jax
        import jax.monitoring

        if not getattr(jax.config, jaxapi.EXPLAIN_OPTION):
            jax.config.update(jaxapi.EXPLAIN_OPTION, True)
            self._enabled_explain = True
        logger = logging.getLogger(jaxapi.EXPLAIN_LOGGER)
        logger.addHandler(self._handler)
        # The user did not ask for JAX's explanations: they are ours, not the program's output.
        self._propagate = logger.propagate
        if self._enabled_explain:
            logger.propagate = False
        jax.monitoring.register_event_duration_secs_listener(self._on_duration)
        jax.monitoring.register_event_listener(self._on_event)

    def stop(self) -> None:
        """Stop listening; put back what ``start`` changed."""
        import jax
        import jax.monitoring

        jaxapi.unregister_duration_listener(self._on_duration)
        jax.monitoring.unregister_event_listener(self._on_event)
        logger = logging.getLogger(jaxapi.EXPLAIN_LOGGER)
        logger.removeHandler(self._handler)
        logger.propagate = self._propagate
        if self._enabled_explain:
            jax.config.update(jaxapi.EXPLAIN_OPTION, False)

    def _pending(self) -> _Pending:
        pending: _Pending | None = getattr(self._local, "pending", None)
        if pending is None:
            pending = self._local.pending = _Pending(call_site=user_call_site())
        return pending

    def _on_explain(self) -> None:
        pending = self._pending()
        if pending.changes is not None:
            # A jit traced inside the one being compiled (optax's tree helpers in a train
            # step) misses too; the compiled function's own miss came first and is the one.
            return
        found = jaxapi.cache_miss_keys()
        if found is None:
            return
        in_avals, debug_info, earlier = found
        pending.defined_at = _defined_at(debug_info)
        new = _cache_key(in_avals, debug_info)
        olds = [_cache_key(avals, info) for avals, info in earlier]
        pending.changes = _nearest_changes(new, olds) if olds else ()

    def _on_event(self, event: str, **kwargs: Any) -> None:
        if event == jaxapi.CACHE_REQUEST_EVENT:
            self._pending().persistent = "miss"
        elif event == jaxapi.CACHE_HIT_EVENT:
            self._pending().persistent = "hit"

    def _on_duration(self, event: str, duration: float, **kwargs: Any) -> None:
        if event == jaxapi.TRACE_EVENT:
            self._pending().trace_s = duration
        elif event == jaxapi.LOWER_EVENT:
            self._pending().lower_s = duration
        elif event == jaxapi.COMPILE_EVENT:
            pending = self._pending()
            self._local.pending = None
            self._finish(_function_name(str(kwargs.get("fun_name", "?"))), pending, duration)

    def _finish(self, name: str, pending: _Pending, compile_s: float) -> None:
        with self._lock:
            seen = self._seen.setdefault((name, pending.defined_at), _Seen())
            seen.compiles += 1
        self._sink(
            Compilation(
                function=name,
                defined_at=pending.defined_at,
                call_site=pending.call_site,
                trace_s=pending.trace_s,
                lower_s=pending.lower_s,
                compile_s=compile_s,
                persistent_cache=pending.persistent,
                # JAX's own jits (one per shape of an eager jnp op) are counted, not explained.
                recompile=pending.defined_at is not None and seen.compiles > 1,
                changes=pending.changes or (),
                explanation=pending.explanation,
            )
        )


class _ExplainHandler(logging.Handler):
    """Hands each "TRACING CACHE MISS" record to the recorder (which reads JAX's stack)."""

    def __init__(self, on_explain: Callable[[], None]) -> None:
        super().__init__(logging.DEBUG)
        self._on_explain = on_explain

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.__class__ is str and record.msg.startswith("TRACING CACHE MISS"):
            self._on_explain()


def user_call_site() -> str | None:
    """``file:line (function)`` of the innermost frame in the user's own code, or None."""
    from jaxinspect.process.errtrace import is_user_frame

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if is_user_frame(frame.f_code.co_filename):
            return (
                f"{_short_path(frame.f_code.co_filename)}:{frame.f_lineno} ({frame.f_code.co_name})"
            )
        frame = frame.f_back
    return None


def _short_path(filename: str) -> str:
    """The path relative to the working directory where it is inside it."""
    try:
        return str(Path(filename).resolve().relative_to(Path.cwd()))
    except ValueError:
        return filename


def _function_name(fun_name: str) -> str:
    """``step`` from JAX's ``jit(step)``."""
    if fun_name.startswith("jit(") and fun_name.endswith(")"):
        return fun_name[4:-1]
    return fun_name


def _defined_at(debug_info: Any) -> str | None:
    filename = getattr(debug_info, "func_filename", None)
    if not filename:
        return None
    line = getattr(debug_info, "func_lineno", None)
    return f"{_short_path(filename)}:{line}" if line else _short_path(filename)


def _cache_key(in_avals: Any, debug_info: Any) -> CacheKey:
    """A traced call's key in the form ``recompile`` prints: leaves, statics, structure."""
    import jax

    names = list(getattr(debug_info, "arg_names", None) or ())
    leaves = []
    for index, aval in enumerate(in_avals.vals):
        name = names[index] if index < len(names) else f"leaf{index}"
        spec = getattr(getattr(aval, "sharding", None), "spec", None)
        leaves.append(
            LeafKey(
                path=name,
                shape=tuple(int(d) for d in getattr(aval, "shape", ())),
                dtype=str(getattr(aval, "dtype", type(aval).__name__)),
                weak_type=bool(getattr(aval, "weak_type", False)),
                sharding="unspecified" if spec is None else str(spec),
            )
        )
    # The key's tree unflattens to the call's (args, kwargs) with each static argument's
    # value in its place: the leaves that are not the traced avals are the statics.
    tree = in_avals.unflatten()
    traced = {id(aval) for aval in in_avals.vals}
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    static = [(_static_name(p), safe_repr(v)) for p, v in flat if id(v) not in traced]
    # The structure without the static values (those are compared one by one above).
    skeleton = jax.tree_util.tree_map(lambda _: 0, tree)
    structure = str(jax.tree_util.tree_structure(skeleton))
    return CacheKey(tuple(leaves), tuple(static), structure)


def _static_name(path: tuple[Any, ...]) -> str:
    """``training`` for a keyword static, ``args[1]`` for a positional one."""
    import jax

    if path and getattr(path[0], "idx", None) == 1 and len(path) > 1:  # the kwargs dict
        key = getattr(path[1], "key", None)
        rest = jax.tree_util.keystr(tuple(path[2:]))
        return f"{key}{rest}" if key is not None else str(jax.tree_util.keystr(tuple(path[1:])))
    return "args" + str(jax.tree_util.keystr(tuple(path[1:])))


def _nearest_changes(new: CacheKey, olds: list[CacheKey]) -> tuple[KeyChange, ...]:
    """The changes from the earlier key that differs in the fewest components (latest on a tie)."""
    best: tuple[KeyChange, ...] | None = None
    for old in olds:
        changes = key_changes(old, new)
        if best is None or len(changes) <= len(best):
            best = changes
    return best or ()
