"""One cold sample, run as ``python -m jaxinspect.bench.coldchild JOB``: time each first-call phase.

It must not import jax at module level: the import is one of the phases it measures. It prints
exactly one line starting with ``MARKER`` on stdout (the user's code may print other lines).
"""

from __future__ import annotations

import time

# First statement after the package import: the end of "process start".
_STARTED_WALL = time.time()

import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import ExitStack, contextmanager  # noqa: E402
from typing import Any  # noqa: E402

from jaxinspect import jaxapi  # noqa: E402  (no jax at module level)
from jaxinspect.pipeline.timing.quiet import quiet_gc  # noqa: E402  (gc and contextlib only)

#: Prefix of the one result line on stdout.
MARKER = "JAXINSPECT-COLDRUN "
_REQUESTS, _HITS = jaxapi.CACHE_REQUEST_EVENT, jaxapi.CACHE_HIT_EVENT


def main(argv: list[str]) -> int:
    """Run the job (JSON in ``argv[0]``), print the result line, return the exit status."""
    job = json.loads(argv[0])
    _die_with_parent(job.get("parent_pid"))
    phases: dict[str, float] = {"process_start": max(0.0, _STARTED_WALL - job["spawn_wall"])}
    try:
        events = _measure(job, phases)
    except Exception as exc:  # reported to the parent, which raises the matching error
        error = _describe_error(exc)
        if job.get("debug"):
            import traceback

            error["message"] += "\n(traceback in the fresh process)\n" + traceback.format_exc()
        print(MARKER + json.dumps({"error": error}), flush=True)
        return int(getattr(exc, "exit_code", 4))
    print(MARKER + json.dumps({"phases": phases, "cache": events}), flush=True)
    return 0


def _measure(job: dict[str, Any], phases: dict[str, float]) -> dict[str, int]:
    with _phase(phases, "import_jax"):
        import jax

    _configure_cache(jax, job["cache_dir"])
    events = {_REQUESTS: 0, _HITS: 0}
    jax.monitoring.register_event_listener(lambda name, **_: _count(events, name))

    from jaxinspect.bench.jobs import job_spec
    from jaxinspect.pipeline.backend import select_device
    from jaxinspect.pipeline.placement import reserve_devices

    spec = job_spec(job)
    reserve_devices([spec], job["backend"])  # a mesh's CPU devices exist from the start
    with _phase(phases, "backend_init"):
        select_device(job["backend"])
    with ExitStack() as x64:
        with _phase(phases, "load_target"):
            from jaxinspect.inputs.target import load_target
            from jaxinspect.pipeline.stages import run_pipeline
            from jaxinspect.process.usercode import user_code
            from jaxinspect.stages.runner import prepare_call, x64_mode

            target = job["target"]
            loaded = load_target(target)
            x64.enter_context(x64_mode(spec))  # on for this phase's binding and the rest
            call = prepare_call(loaded, spec, job["backend"])
        before = dict(events)
        entries = _cache_entries(job["cache_dir"])
        art = run_pipeline(call.function, call.plan, call.args, call.kwargs, target=target)
        compile_events = {k: events[k] - before[k] for k in events}
        if _cache_entries(job["cache_dir"]) > entries:  # the compile wrote to the cache
            when = "although the compile wrote a persistent-cache entry"
            jaxapi.require_events(compile_events, (_REQUESTS,), when)
        assert art.lower_s is not None and art.compile_s is not None  # ran until compile
        phases.update(trace=art.trace_s, lower=art.lower_s, compile=art.compile_s)
        args, kwargs = call.concrete_inputs(job["seed"], job["max_input_bytes"])
        host = _to_host(jax, (args, kwargs))
        for phase in ("first_call", "second_call"):
            with user_code("execute", target), _phase(phases, phase):
                _call_from_host(jax, art.compiled, host)
    return {"requests": compile_events[_REQUESTS], "hits": compile_events[_HITS]}


def _configure_cache(jax: Any, cache_dir: str | None) -> None:
    # A cache directory from the user's environment must not leak into a "no cache" sample.
    if cache_dir is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", cache_dir)
    # JAX's defaults (1 s, and a size floor) would leave small programs uncached.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _cache_entries(cache_dir: str | None) -> int:
    return 0 if cache_dir is None else jaxapi.cache_entries(cache_dir)


def _count(events: dict[str, int], name: str) -> None:
    if name in events:
        events[name] += 1


@contextmanager
def _phase(phases: dict[str, float], name: str) -> Iterator[None]:
    """Time the block as phase ``name``, garbage collected before and paused during it."""
    with quiet_gc():
        start = time.perf_counter()
        yield
        phases[name] = time.perf_counter() - start
    # Survivors are set aside, so the next phase's collection walks only what is new; this
    # process ends right after its last phase (nothing is ever unfrozen).
    gc.freeze()


def _die_with_parent(parent_pid: int | None) -> None:
    """On Linux, receive SIGTERM when the bench process ends, however it ends (even SIGKILL)."""
    if parent_pid is None or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent ended before the request took effect
        os._exit(128 + int(signal.SIGTERM))


class _OnHost:
    """A host (numpy) copy of an input and the sharding to put it back with."""

    def __init__(self, array: Any, sharding: Any) -> None:
        self.array, self.sharding = array, sharding


def _to_host(jax: Any, tree: Any) -> Any:
    """Host (numpy) copies of the array leaves, so the timed calls include the transfer."""
    import numpy as np

    def host(leaf: Any) -> Any:
        if isinstance(leaf, jax.Array) and not jax.dtypes.issubdtype(
            leaf.dtype, jax.dtypes.extended
        ):
            return _OnHost(np.asarray(leaf), leaf.sharding)
        return leaf  # PRNG keys stay on the device; Python scalars stay Python scalars

    return jax.tree.map(host, tree)


def _call_from_host(jax: Any, compiled: Any, host: Any) -> None:
    # Each input goes back where it came from: one device, or split over the mesh.
    args, kwargs = jax.tree.map(
        lambda x: jax.device_put(x.array, x.sharding) if isinstance(x, _OnHost) else x, host
    )
    jax.block_until_ready(compiled(*args, **kwargs))


def _describe_error(exc: Exception) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": str(getattr(exc, "message", exc)),
        "hint": getattr(exc, "hint", None),
        "stage": getattr(exc, "stage", None),
    }


if __name__ == "__main__":
    from jaxinspect.process.fastexit import exit_without_teardown

    exit_without_teardown(main(sys.argv[1:]))
