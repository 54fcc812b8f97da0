"""JAX's configuration per target: each runs with the process's own plus its module's changes.

A target module may call ``jax.config.update("jax_enable_x64", True)`` at import. Left in
place, that changes every target compiled after it in the same process, so ``check``'s
verdicts would depend on the order, the ``--shard`` split and ``--jobs``. ``check`` reads the
configuration before any user code (``read_config``), records what each module's import
changed (``changes_since``), and compiles each target with the base plus its own module's
changes only (``configured``), putting the base back afterwards: what a process that ran that
target alone would have seen.

The pytest fixture does the same per snapshot: a test (or a test module at import) that
leaves the configuration changed would otherwise change every later snapshot of the session.
``session_config`` runs its block with the values first recorded (``record_baseline``, before
any test module could change them) and then puts back the test's own values.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

#: Option names and values, in JAX's order.
ConfigChanges = tuple[tuple[str, Any], ...]


def read_config() -> dict[str, Any]:
    """Every JAX option's current value, by name."""
    import jax

    return dict(jax.config.values)


def changes_since(base: dict[str, Any]) -> ConfigChanges:
    """The options whose value differs from ``base`` now."""
    import jax

    return tuple(
        (name, value)
        for name, value in jax.config.values.items()
        if name not in base or not _same(base[name], value)
    )


@contextlib.contextmanager
def configured(base: dict[str, Any], changes: ConfigChanges) -> Iterator[None]:
    """Run the block with ``base`` plus ``changes``; ``base`` again when it ends."""
    apply_config({**base, **dict(changes)})
    try:
        yield
    finally:
        apply_config(base)


def apply_config(wanted: dict[str, Any]) -> None:
    """Set every option whose value differs from ``wanted``."""
    import jax

    current = jax.config.values
    for name, value in wanted.items():
        if name in current and not _same(current[name], value):
            # Options fixed once the backends start (jax_num_cpu_devices, jax_platforms)
            # refuse a change; a target's change to them was refused or had no effect.
            with contextlib.suppress(Exception):
                jax.config.update(name, value)


def forget_traces() -> None:
    """Drop JAX's cached traces and compilations.

    A trace cached under one configuration but made while another thread changed it would
    answer the next trace under the first.
    """
    import jax

    jax.clear_caches()


def same_changes(a: ConfigChanges, b: ConfigChanges) -> bool:
    """Whether two sets of changes set the same options to the same values."""
    return len(a) == len(b) and all(
        name_a == name_b and _same(value_a, value_b)
        for (name_a, value_a), (name_b, value_b) in zip(a, b, strict=True)
    )


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # an option value whose == raises (an array) or is ambiguous
        return False


# --- the pytest session's configuration ---------------------------------------------------

_BASELINE: dict[str, dict[str, Any]] = {}
#: Fixed once a backend runs; updating them then raises or has no effect.
_FIXED = frozenset({"jax_platforms", "jax_num_cpu_devices", "jax_platform_name"})


def record_baseline(*, import_jax: bool = False) -> None:
    """Remember JAX's configuration now, once per process (if jax is imported, or imported).

    Without ``import_jax`` and with jax not imported yet, it is remembered right after jax's
    own import finishes, before the code that imported it can change anything.
    """
    if "values" in _BASELINE:
        return
    if import_jax or "jax" in sys.modules:
        import jax

        _BASELINE["values"] = dict(jax.config.values)
    elif not any(isinstance(f, _AfterJaxImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterJaxImport())


def forget_import_hook() -> None:
    """Remove the hook ``record_baseline`` may have left waiting for jax's import."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterJaxImport)]


class _AfterJaxImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps jax's loader so the configuration is read once it ran."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name != "jax":
            return None
        forget_import_hook()  # one use; also keeps the search below from finding us again
        spec = importlib.util.find_spec(name)
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            record_baseline()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


@contextlib.contextmanager
def session_config() -> Iterator[None]:
    """Run the block with the recorded configuration, and restore the current one after."""
    record_baseline(import_jax=True)
    baseline = {k: v for k, v in _BASELINE["values"].items() if k not in _FIXED}
    current = read_config()
    apply_config(baseline)
    try:
        yield
    finally:
        apply_config({name: current[name] for name in baseline if name in current})
