"""Split any pytree into array leaves (traced) and the rest (static), as ``equinox.filter_jit``.

A ``Filtered`` node holds the array leaves as its pytree children and everything else (the
original structure, function-valued fields, Python numbers) in its treedef's auxiliary data.
jit therefore traces the arrays and keys its cache on the static part, and the static part
never has to be a valid JAX type.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from jaxinspect.usertext import safe_repr


def is_array(leaf: Any) -> bool:
    """Whether a leaf is an array (traced) rather than a static value.

    jax arrays and tracers, numpy arrays and scalars, and ``ShapeDtypeStruct``s count.
    """
    return isinstance(leaf, jax.Array | np.ndarray | np.generic | jax.ShapeDtypeStruct)


class _ByIdentity:
    """Wraps an unhashable static leaf so the treedef can be hashed; equal only to itself."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByIdentity) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return _ByIdentity(value)
    return value


def static_value(value: Any) -> Any:
    """A static leaf as the user made it (unhashable ones are stored wrapped)."""
    return value.value if isinstance(value, _ByIdentity) else value


@dataclass(frozen=True, slots=True, eq=False)
class StaticPart:
    """Everything about a pytree but its array leaves: compared and hashed by jit.

    Attributes:
        treedef: The structure of the original pytree.
        mask: For each of its leaves, whether it is an array.
        statics: The non-array leaves, in order (unhashable ones compared by identity).
        array_paths: ``.params['w']`` style path of each array leaf, for reports.
        static_paths: Path of each non-array leaf.
    """

    treedef: Any
    mask: tuple[bool, ...]
    statics: tuple[Any, ...]
    array_paths: tuple[str, ...] = field(default=())
    static_paths: tuple[str, ...] = field(default=())

    def _key(self) -> tuple[Any, ...]:
        return (self.treedef, self.mask, self.statics)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StaticPart) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        # Shown in cache-key structures: the statics are what can change between calls.
        shown = ", ".join(
            f"{p or '.'}={describe_static(static_value(v))}"
            for p, v in zip(self.static_paths, self.statics, strict=False)
        )
        name = _type_name(self.treedef)
        return f"<{name}: {len(self.array_paths)} arrays{'; ' + shown if shown else ''}>"


class PathKey:
    """A pytree key entry that prints a whole sub-path (``.layers[0].weight``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"PathKey({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PathKey) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


class Filtered:
    """A pytree node: the array leaves of a user's pytree, with its static part as aux data."""

    __slots__ = ("arrays", "static")

    def __init__(self, static: StaticPart, arrays: tuple[Any, ...]) -> None:
        self.static = static
        self.arrays = tuple(arrays)

    def __repr__(self) -> str:
        return f"Filtered{self.static!r}"


def _flatten_with_keys(node: Filtered) -> tuple[tuple[tuple[PathKey, Any], ...], StaticPart]:
    paths = node.static.array_paths or tuple(f"[{i}]" for i in range(len(node.arrays)))
    return tuple(zip((PathKey(p) for p in paths), node.arrays, strict=True)), node.static


jax.tree_util.register_pytree_with_keys(
    Filtered,
    _flatten_with_keys,
    lambda static, arrays: Filtered(static, tuple(arrays)),
    lambda node: (node.arrays, node.static),
)


def is_filtered(value: Any) -> bool:
    """Whether ``value`` is a ``Filtered`` node (for ``is_leaf=``)."""
    return isinstance(value, Filtered)


def partition(
    tree: Any,
    *,
    arrays: Callable[[Any], bool] = is_array,
    traced: list[bool] | None = None,
    abstract: Callable[[Any], Any] | None = None,
) -> Filtered:
    """Split ``tree`` into its array leaves and its static part.

    ``traced`` marks more leaves (by position) to trace: Python numbers under ``jax.jit``
    semantics (``inputs.numbers``), given to the arrays as ``abstract(leaf)``.
    """
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    more = traced or [False] * len(with_paths)
    if any(more) and abstract is not None:
        with_paths = [
            (p, abstract(v) if m else v) for (p, v), m in zip(with_paths, more, strict=True)
        ]
    keep = [
        (jax.tree_util.keystr(p), leaf, bool(m or arrays(leaf)))
        for (p, leaf), m in zip(with_paths, more, strict=True)
    ]
    mask = tuple(m for _, _, m in keep)
    static = StaticPart(
        treedef=treedef,
        mask=mask,
        statics=tuple(_hashable(leaf) for _, leaf, m in keep if not m),
        array_paths=tuple(p for p, _, m in keep if m),
        static_paths=tuple(p for p, _, m in keep if not m),
    )
    return Filtered(static, tuple(leaf for _, leaf, m in keep if m))


def combine(node: Filtered) -> Any:
    """The user's pytree again, with ``node``'s array leaves (which may be tracers)."""
    arrays = iter(node.arrays)
    statics = iter(node.static.statics)
    leaves = [next(arrays) if m else static_value(next(statics)) for m in node.static.mask]
    return jax.tree_util.tree_unflatten(node.static.treedef, leaves)


def combine_all(tree: Any) -> Any:
    """``tree`` with every ``Filtered`` node inside it turned back into the user's pytree."""
    return jax.tree_util.tree_map(
        lambda x: combine(x) if isinstance(x, Filtered) else x, tree, is_leaf=is_filtered
    )


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def describe_static(value: Any) -> str:
    """A short, run-independent text for a static value (no memory addresses)."""
    name = getattr(value, "__qualname__", None)
    module = getattr(value, "__module__", None)
    if callable(value) and isinstance(name, str) and isinstance(module, str):
        return f"{module}.{name}"
    text = _ADDRESS.sub("", safe_repr(value))
    return text if len(text) <= 80 else text[:77] + "..."


def _type_name(treedef: Any) -> str:
    data = treedef.node_data()  # (type, aux) of the root node; None for a leaf
    return "leaf" if data is None else str(data[0].__name__)
