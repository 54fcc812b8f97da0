"""JAX's configuration as the session found it, put back around each fixture snapshot.

A test (or a test module at import) that calls ``jax.config.update`` and leaves it changed
would otherwise change every later snapshot of the session, so that the verdict depends on
which tests ran before. ``session_config`` runs its block with the values first recorded
(``record_baseline``) and then puts back the test's own values. Options JAX cannot change once
its backend started (``jax_platforms``, ``jax_num_cpu_devices``) are left as they are.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

_BASELINE: dict[str, dict[str, Any]] = {}
#: Fixed once a backend runs; updating them then raises or has no effect.
_FIXED = frozenset({"jax_platforms", "jax_num_cpu_devices", "jax_platform_name"})


def record_baseline(*, import_jax: bool = False) -> None:
    """Remember JAX's configuration now, once per process (if jax is imported, or imported)."""
    if "values" in _BASELINE or not (import_jax or "jax" in sys.modules):
        return
    import jax

    _BASELINE["values"] = dict(jax.config.values)


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
