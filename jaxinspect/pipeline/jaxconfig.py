"""JAX's configuration per target: each runs with the process's own plus its module's changes.

A target module may call ``jax.config.update("jax_enable_x64", True)`` at import. Left in
place, that changes every target compiled after it in the same process, so ``check``'s
verdicts would depend on the order, the ``--shard`` split and ``--jobs``. ``check`` reads the
configuration before any user code (``read_config``), records what each module's import
changed (``changes_since``), and compiles each target with the base plus its own module's
changes only (``configured``), putting the base back afterwards: what a process that ran that
target alone would have seen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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
