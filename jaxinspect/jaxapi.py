"""Every private JAX/jaxlib access and jax.monitoring event name jaxinspect uses, typed."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jaxinspect.errors import JaxInspectError

# No `import jax` at module level: bench/coldchild.py imports this module before it times
# `import jax`. The private names below are pinned by `jax<0.11` in pyproject.toml; a test
# keeps them out of every other module, so a JAX upgrade is checked here and only here.

#: jax.monitoring duration events, fired once per real trace, lowering and XLA compilation
#: (``jax._src.dispatch``; the compile event also fires when the persistent cache hits).
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: Where JAX logs a failing host callback's full traceback before raising it to the caller.
CALLBACK_LOGGER = "jax._src.callback"
#: jax.monitoring events of the persistent compilation cache (``jax._src.compiler``).
CACHE_REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
# JAX's file cache stores each executable as `<key>-cache` (``jax._src.lru_cache``).
_CACHE_ENTRY_GLOB = "*-cache"


def require_events(counts: Mapping[str, int], expected: Sequence[str], when: str) -> None:
    """Fail loudly when an event that must have fired ``when`` has a zero count.

    A renamed event would otherwise read as "nothing happened": every case a cache hit.

    Raises:
        JaxInspectError: (internal error) naming each event that never fired.
    """
    missing = [name for name in expected if counts.get(name, 0) <= 0]
    if missing:
        raise JaxInspectError(
            f"jax.monitoring event {', '.join(missing)} never fired {when}; JAX {_jax_version()} "
            "may have renamed it, and jaxinspect would misreport compilations and cache hits",
            hint="This is a jaxinspect bug (jaxinspect/jaxapi.py): please report it.",
        )


def cache_entries(folder: str) -> int:
    """Executables stored in a persistent compilation cache folder (0 when it does not exist)."""
    root = Path(folder)
    return sum(1 for _ in root.glob(_CACHE_ENTRY_GLOB)) if root.is_dir() else 0


def backend_platforms() -> list[str]:
    """Platforms JAX can use in this process, sorted (initializes the backends)."""
    # jax.extend.backend.backends is this function; importing any jax.extend module runs
    # jax/extend/__init__.py, which imports Pallas (about 50 ms of every command's start).
    from jax._src import xla_bridge

    return sorted(xla_bridge.backends())


@contextmanager
def compilation_cache_disabled() -> Iterator[None]:
    """The persistent compilation cache off inside the block, its old setting restored after.

    The setting is global: with several threads inside (``check --jobs``), the first in turns
    it off and the last out restores it.
    """
    import jax

    with _CACHE_LOCK:
        if not _CACHE_STATE["depth"]:
            _CACHE_STATE["old"] = bool(jax.config.jax_enable_compilation_cache)
            jax.config.update("jax_enable_compilation_cache", False)
        _CACHE_STATE["depth"] += 1
    try:
        yield
    finally:
        with _CACHE_LOCK:
            _CACHE_STATE["depth"] -= 1
            if not _CACHE_STATE["depth"]:
                jax.config.update("jax_enable_compilation_cache", _CACHE_STATE["old"])


_CACHE_STATE: dict[str, Any] = {"depth": 0}
_CACHE_LOCK = threading.Lock()


def exclude_source_path(path: str) -> None:
    """Never write frames under ``path`` (a folder ending in ``/`` or a file) as source lines."""
    from jax._src import source_info_util  # re-exported by jax.extend (see backend_platforms)

    source_info_util.register_exclusion(path)


@contextmanager
def source_inclusions(paths: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Frames under ``paths`` count as user code inside the block; yields the paths added.

    JAX's inclusions override its exclusions (its own folder among them); there is no public
    API to add one, nor to remove one, so both use ``jax._src.source_info_util``. Paths JAX
    already counts as user code are left alone.
    """
    from jax._src import source_info_util as info

    added = tuple(path for path in paths if not info.is_user_filename(path))
    for path in added:
        info.register_inclusion(path)
    try:
        yield added
    finally:
        for path in added:
            info._include_paths.remove(path)
        info._include_path_regex.cache_clear()
        info.is_user_filename.cache_clear()


def _executable(compiled: Any, needed_for: str) -> Any:
    """``compiled.runtime_executable()``, which JAX documents may be ``None``.

    Raises:
        JaxInspectError: JAX gave no executable object on this backend.
    """
    executable = compiled.runtime_executable()
    if executable is None:
        raise JaxInspectError(
            f"JAX gives no runtime executable for the compiled function on this backend "
            f"(jax.stages.Compiled.runtime_executable() returned None), needed for {needed_for}"
        )
    return executable


def executable_identity(compiled: Any) -> object:
    """The runtime executable object, shared by the calls that reuse one compilation.

    Raises:
        JaxInspectError: JAX gave no executable object on this backend.
    """
    result: object = _executable(compiled, "telling recompilations from cache hits")
    return result


def optimized_hlo_modules(compiled: Any) -> list[Any] | None:
    """The executable's optimized ``HloModule`` objects; ``None`` where JAX gives none."""
    try:
        executable = compiled.runtime_executable()
        modules = None if executable is None else executable.hlo_modules()
    except Exception:  # a runtime without module objects
        return None
    return None if not modules else list(modules)


def optimized_hlo_module(compiled: Any, needed_for: str) -> Any:
    """The (first) optimized ``HloModule`` of the executable.

    Raises:
        JaxInspectError: JAX gave no module object on this backend.
    """
    modules = _executable(compiled, needed_for).hlo_modules()
    if not modules:
        raise JaxInspectError(f"JAX gives no optimized HLO module on this backend ({needed_for})")
    return modules[0]


def executable_client(compiled: Any) -> Any:
    """The XLA client whose cost analysis the per-op breakdown asks: the executable's own on
    CPU, the CPU client for any other platform's module.

    Raises:
        JaxInspectError: JAX gave no executable object on this backend.
        RuntimeError: A compile-only executable, and no CPU backend in this process.
    """
    executable = _executable(compiled, "XLA's cost analysis")
    client = getattr(executable, "client", None)
    if client is not None and getattr(client, "platform", None) == "cpu":
        return client
    # A GPU or TPU client is a PJRT C API plugin, which does not run XLA's per-module cost
    # analysis ("UNIMPLEMENTED: PJRT C API does not support GetHloCostAnalysis", seen on an
    # H200 with jax 0.11.2), and an executable compiled from a topology description has no
    # client here. The CPU client runs the same HloCostAnalysis over the module's
    # instructions: on that H200 its totals equal the GPU's own cost_analysis().
    import jax

    try:
        return jax.devices("cpu")[0].client
    except RuntimeError:  # JAX_PLATFORMS without cpu: no CPU client in this process
        if client is None:
            raise
        return client


def executable_devices(compiled: Any) -> list[Any] | None:
    """The devices the executable was compiled for; ``None`` where the runtime does not say."""
    try:
        executable = compiled.runtime_executable()
        return None if executable is None else list(executable.local_devices())
    except Exception:  # not every runtime exposes its executable's devices
        return None


def compiled_platform(compiled: Any) -> str | None:
    """The platform an executable was compiled for, also for compile-only devices (a
    ``--topology`` target, whose executable has no local devices): read off its shardings."""
    import jax

    devices = executable_devices(compiled)
    if devices:
        return str(devices[0].platform)
    try:
        shardings = jax.tree.leaves((compiled.input_shardings, compiled.output_shardings))
    except Exception:  # an executable without sharding information
        return None
    for sharding in shardings:
        for device in getattr(sharding, "device_set", ()):
            return str(device.platform)
    return None


def hlo_module_text(
    module: Any,
    *,
    large_constants: bool | None = None,
    metadata: bool | None = None,
    control_dependencies: bool | None = None,
) -> str:
    """``module`` printed by XLA; each option left ``None`` keeps XLA's default printing."""
    chosen = {
        "print_large_constants": large_constants,
        "print_metadata": metadata,
        "print_control_dependencies": control_dependencies,
    }
    if all(value is None for value in chosen.values()):
        return str(module.to_string())
    from jax._src.lib import xla_client

    options = xla_client.hlo.HloPrintOptions()
    for name, value in chosen.items():
        if value is not None:
            setattr(options, name, value)
    return str(module.to_string(options))


def compiled_module_text(compiled: Any, needed_for: str) -> str:
    """The executable's (first) optimized module, printed once per executable.

    One printing serves every analysis of a run (cost, memory, collectives, aliasing, the
    report's graph): elided constants (``{...}``) would not parse back, metadata carries the
    source lines, and control dependencies (which order copies inside loop bodies and cost
    nothing) are left out, so an instruction can be wrapped alone. At 96 transformer blocks
    a printing takes about 0.2 s and the module is 2.9 MB: the report printed it five times.

    Raises:
        JaxInspectError: JAX gave no module object on this backend.
    """
    return _printed_once(
        _MODULE_TEXTS,
        compiled,
        lambda: hlo_module_text(
            optimized_hlo_module(compiled, needed_for),
            large_constants=True,
            metadata=True,
            control_dependencies=False,
        ),
    )


def optimized_hlo_text(compiled: Any) -> str:
    """``compiled.as_text()``, which JAX documents may be ``None``; printed once per executable.

    Raises:
        JaxInspectError: JAX gave no text for the executable on this backend.
    """
    return _printed_once(_AS_TEXTS, compiled, lambda: _as_text(compiled))


def compiled_module_header(compiled: Any) -> str:
    """The first line of the executable's printed module (``HloModule name, ...,
    input_output_alias={...}``), from ``printed_module``.

    Raises:
        JaxInspectError: JAX gave no module object on this backend.
    """
    text = printed_module(compiled, "the buffer aliases")
    return text[: text.find("\n")]


def printed_module(compiled: Any, needed_for: str) -> str:
    """A printing of the executable's module, for what every printing answers alike: its
    header line, or whether an opcode is spelt in it. The one the run made already (the hlo
    stage's ``as_text()``, or ``compiled_module_text``), else ``compiled_module_text``.

    The print options (constants, metadata, control dependencies) change only instruction
    lines' attributes, never the header or an instruction's opcode: ``stages`` thus prints
    the module once, not a second time for its aliases (40 ms at 96 transformer blocks).

    Raises:
        JaxInspectError: JAX gave no module object on this backend.
    """
    for cache in (_MODULE_TEXTS, _AS_TEXTS):
        text = _cached_text(cache, compiled)
        if text is not None:
            return text
    return compiled_module_text(compiled, needed_for)


def _as_text(compiled: Any) -> str:
    text = compiled.as_text()
    if text is None:
        raise JaxInspectError(
            "JAX gives no text for the compiled function on this backend "
            "(jax.stages.Compiled.as_text() returned None)"
        )
    return str(text)


#: id(Compiled) -> (weak reference to it, a printing); an entry leaves with its executable.
_MODULE_TEXTS: dict[int, tuple[Any, str]] = {}
_AS_TEXTS: dict[int, tuple[Any, str]] = {}


def _cached_text(cache: dict[int, tuple[Any, str]], compiled: Any) -> str | None:
    cached = cache.get(id(compiled))
    return cached[1] if cached is not None and cached[0]() is compiled else None


def _printed_once(cache: dict[int, tuple[Any, str]], compiled: Any, make: Callable[[], str]) -> str:
    """``make()``, kept in ``cache`` for as long as ``compiled`` lives."""
    cached = _cached_text(cache, compiled)
    if cached is not None:
        return cached
    text = make()
    key = id(compiled)
    try:
        ref: Any = weakref.ref(compiled, lambda _: cache.pop(key, None))
    except TypeError:  # not weakly referenceable: print again next time rather than leak
        return text
    cache[key] = (ref, text)
    return text


def parse_hlo_module(text: str) -> Any:
    """An ``HloModule`` parsed from HLO text (raises XLA's own error when it does not parse)."""
    from jaxlib import _hlo

    return _hlo.hlo_module_from_text(text)


def hlo_cost_analysis(client: Any, module: Any) -> dict[str, float]:
    """XLA's ``HloCostAnalysis`` of ``module`` as ``{property: value}`` (raises XLA's error)."""
    from jax._src.lib import xla_client

    raw = xla_client._xla.hlo_module_cost_analysis(client, module)
    return {str(key): float(value) for key, value in dict(raw).items()}


def kept_argument_indices(lowered: Any) -> tuple[int, ...]:
    """Flat indices of the arguments the lowered module kept as HLO parameters, sorted.

    JAX drops unused arguments from the module; only the private lowering says which.

    Raises:
        JaxInspectError: JAX no longer records them there (naming parameters would be a guess).
    """
    compile_args = getattr(getattr(lowered, "_lowering", None), "compile_args", None)
    kept = compile_args.get("kept_var_idx") if isinstance(compile_args, Mapping) else None
    if not isinstance(kept, Collection):
        raise JaxInspectError(
            f"JAX {_jax_version()} no longer records the kept arguments of a lowering "
            f"(Lowered._lowering.compile_args['kept_var_idx'] is missing on "
            f"{type(lowered).__name__}), so HLO parameters cannot be named by argument",
            hint="This is a jaxinspect bug (jaxinspect/jaxapi.py): please report it.",
        )
    return tuple(sorted(int(i) for i in kept))


def backends_started() -> bool:
    """Whether JAX has started its backends in this process (the CPU device count is fixed)."""
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def initialize_tpu_plugin() -> bool:
    """Load and initialize libtpu's PJRT plugin without starting any backend.

    The same guarded steps as JAX's ``make_tpu_client`` and ``make_pjrt_tpu_topology``
    (``jax._src.xla_bridge``): each is skipped when done, so JAX's own start of the TPU backend
    later finds the plugin ready and does nothing twice. Returns whether libtpu was found.
    """
    from jax._src import xla_bridge
    from jax._src.lib import _profiler, xla_client

    if not xla_client.pjrt_plugin_loaded("tpu"):
        path = xla_bridge.get_tpu_library_path()
        if path is None:
            return False
        c_api = xla_client.load_pjrt_plugin_dynamically("tpu", path)
        _profiler.register_plugin_profiler(c_api)
    if not xla_client.pjrt_plugin_initialized("tpu"):
        xla_client.initialize_pjrt_plugin("tpu")
    return True


def discover_plugins() -> None:
    """Have JAX find and register its PJRT plugins now (the CUDA one among them), without
    starting a backend; JAX does it once per process, at the first backend start otherwise."""
    from jax._src import xla_bridge

    xla_bridge._discover_and_register_pjrt_plugins()


def cuda_topology_registered() -> bool:
    """Whether JAX can describe CUDA topologies (the plugin registered its factory)."""
    from jax._src import xla_bridge

    return "cuda" in xla_bridge._topology_factories


def register_cuda_topology() -> None:
    """Register the CUDA plugin's topology factory alone, where JAX dropped the plugin.

    JAX drops it when CUDA was among the platforms at start-up and ``cuInit`` failed (no
    driver). Describing a topology needs only the plugin's library: it is loaded as
    ``register_plugin`` does, and its factory added, no backend and no CUDA call involved.
    """
    import functools

    import jax_plugins.xla_cuda12 as plugin
    from jax._src import xla_bridge
    from jax._src.lib import xla_client

    path = plugin._get_library_path()
    if xla_client.pjrt_plugin_loaded("cuda"):
        raise RuntimeError("the CUDA plugin is loaded but has no topology factory")
    c_api = xla_client.load_pjrt_plugin_dynamically("cuda", str(path))
    xla_bridge._topology_factories["cuda"] = functools.partial(
        xla_client.make_c_api_device_topology, c_api
    )


def _jax_version() -> str:
    from importlib.metadata import version

    return version("jax")


#: Where ``jax_explain_cache_misses`` logs "TRACING CACHE MISS at ...: because ..." (once per
#: tracing-cache miss of a function defined in user code; ``jax._src.interpreters.partial_eval``).
EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"
#: The config option that turns that log on.
EXPLAIN_OPTION = "jax_explain_cache_misses"


def cache_miss_keys() -> tuple[Any, Any, list[tuple[Any, Any]]] | None:
    """The tracing-cache key that just missed, and the function's earlier keys, or None.

    Called from a handler of ``EXPLAIN_LOGGER``: JAX's ``explain`` (the tracing cache's miss
    callback) is on the stack, its locals hold the new key's ``in_avals`` (a ``FlatTree``),
    ``debug_info``, and ``keys``: the same function's earlier keys, each
    ``[trace_context, (in_avals, debug_info, *context), kwargs]``. Returns
    ``(in_avals, debug_info, [(in_avals, debug_info), ...])``.
    """
    import sys
    from types import FrameType

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "explain" and code.co_filename.endswith("partial_eval.py"):
            local = frame.f_locals
            if not {"in_avals", "debug_info", "keys"} <= local.keys():
                return None
            earlier = [(key[1][0], key[1][1]) for key in local["keys"]]
            return local["in_avals"], local["debug_info"], earlier
        frame = frame.f_back
    return None


def unregister_duration_listener(listener: Any) -> None:
    """Remove a ``jax.monitoring`` duration listener (public in ``jax.monitoring``)."""
    import jax.monitoring

    jax.monitoring.unregister_event_duration_listener(listener)


#: Every duration event a compilation fires, in order (``fun_name`` keyword: ``f``, then
#: ``jit(f)`` for lowering and compiling).
COMPILE_PHASE_EVENTS = (TRACE_EVENT, LOWER_EVENT, COMPILE_EVENT)
