"""JAX's configuration as the session found it, put back around each fixture snapshot.

A test (or a test module at import) that calls ``jax.config.update`` and leaves it changed
would otherwise change every later snapshot of the session, so that the verdict depends on
which tests ran before. ``session_config`` runs its block with the values first recorded
(``record_baseline``) and then puts back the test's own values. Options JAX cannot change once
its backend started (``jax_platforms``, ``jax_num_cpu_devices``) are left as they are.
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
    import jax

    record_baseline(import_jax=True)
    baseline = _BASELINE["values"]
    current = dict(jax.config.values)
    changed = {
        name: value
        for name, value in baseline.items()
        if name not in _FIXED and name in current and current[name] != value
    }
    try:
        for name, value in changed.items():
            jax.config.update(name, value)
        yield
    finally:
        for name in changed:
            jax.config.update(name, current[name])
