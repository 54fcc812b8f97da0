"""Turn spec nodes into abstract ``ShapeDtypeStruct`` pytrees and seeded concrete arrays.

YAML leaves map one to one; a ``from:`` node (or a given value) becomes a ``Filtered`` node
whose array leaves are drawn from the same seeded generator, in order.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import jax
import numpy as np

from jaxinspect.base.inspection import ArgInfo
from jaxinspect.errors import UsageError
from jaxinspect.inputs.binding import CallPlan
from jaxinspect.inputs.factories import Resolver
from jaxinspect.inputs.filtered import Filtered, describe_static, static_value
from jaxinspect.inputs.fromnode import FromNode, ValueNode
from jaxinspect.inputs.leaves import DTYPE_BYTES, LeafSpec
from jaxinspect.inputs.numbers import is_number
from jaxinspect.inputs.spec import DictNode, ListNode, Node
from jaxinspect.usertext import safe_repr


@functools.cache
def _key_dtype() -> Any:
    # eval_shape traces without compiling, so building abstract keys costs no compilation.
    return jax.eval_shape(lambda: jax.random.key(0)).dtype


def _dtype(leaf: LeafSpec) -> Any:
    return _key_dtype() if leaf.is_key else jax.numpy.dtype(leaf.dtype)


def abstract_tree(node: Node, placement: Any, resolver: Resolver | None = None) -> Any:
    """The pytree of ``ShapeDtypeStruct`` for ``node``, placed as ``placement`` says.

    ``placement`` (``pipeline.placement.Placement``) gives each leaf's sharding: split over the
    mesh as the spec writes, else replicated, or on the one device without a mesh.
    ``resolver`` evaluates ``from:`` nodes; a spec without them needs none.
    """
    if isinstance(node, LeafSpec):
        return jax.ShapeDtypeStruct(
            node.shape,
            _dtype(node),
            sharding=placement.sharding(node.sharding),
            weak_type=node.weak_type,
        )
    if isinstance(node, ListNode):
        return node.pack([abstract_tree(item, placement, resolver) for item in node.items])
    if isinstance(node, DictNode):
        return {key: abstract_tree(item, placement, resolver) for key, item in node.items}
    filtered = _resolver(resolver).resolve(node)
    replicated = placement.sharding()
    placed = tuple(
        jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=replicated, weak_type=a.weak_type)
        for a in filtered.arrays
    )
    return Filtered(filtered.static, placed)


def concrete_tree(
    node: Node,
    rng: np.random.Generator,
    placement: Any,
    resolver: Resolver | None = None,
    *,
    factory_values: bool = False,
) -> Any:
    """Seeded random values for ``node``, placed as ``placement`` says.

    Floats are standard normal, integers uniform in [0, 10), booleans fair coins, keys random
    key data. Weak-typed YAML scalars become Python numbers, as a caller would pass them.
    ``factory_values``: the arrays of ``from:`` nodes (and given values) are the ones their
    factory returns, not random ones (``inputs: factory``).
    """
    if isinstance(node, ListNode):
        return node.pack(
            [
                concrete_tree(item, rng, placement, resolver, factory_values=factory_values)
                for item in node.items
            ]
        )
    if isinstance(node, DictNode):
        return {
            key: concrete_tree(item, rng, placement, resolver, factory_values=factory_values)
            for key, item in node.items
        }
    if isinstance(node, FromNode | ValueNode):
        filtered = _resolver(resolver).resolve(node)
        replicated = placement.sharding()
        if factory_values:
            given = _resolver(resolver).concrete_arrays(node)
            # A traced Python number stays one, as jit gets it; arrays are placed.
            arrays = tuple(a if is_number(a) else jax.device_put(a, replicated) for a in given)
        else:
            arrays = tuple(
                _weak_number(a, rng)
                if a.weak_type and not a.shape  # a traced Python number: one again, as jit gets it
                else _concrete_leaf(a.shape, a.dtype, rng, replicated)
                for a in filtered.arrays
            )
        return Filtered(filtered.static, arrays)
    if node.weak_type:
        return float(rng.standard_normal()) if node.dtype == "float32" else int(rng.integers(10))
    return _concrete_leaf(node.shape, _dtype(node), rng, placement.sharding(node.sharding))


def _weak_number(leaf: Any, rng: np.random.Generator) -> Any:
    kind = np.dtype(leaf.dtype).kind
    if kind == "c":
        return complex(rng.standard_normal(), rng.standard_normal())
    return float(rng.standard_normal()) if kind == "f" else int(rng.integers(10))


def _concrete_leaf(
    shape: tuple[int, ...], dtype: Any, rng: np.random.Generator, sharding: Any
) -> Any:
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        data_shape = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(shape, dtype))
        data = rng.integers(0, 2**32, size=data_shape.shape, dtype=np.uint32)
        impl = getattr(dtype, "_impl", None)  # the key's PRNG implementation (threefry, rbg)
        return jax.device_put(jax.random.wrap_key_data(data, impl=impl), sharding)
    return jax.device_put(_random_array(shape, jax.numpy.dtype(dtype), rng), sharding)


def _random_array(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> Any:
    if np.issubdtype(dtype, np.complexfloating):
        values = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    elif dtype == np.bool_:
        values = rng.random(shape) < 0.5
    elif np.issubdtype(dtype, np.integer):
        values = rng.integers(0, 10, size=shape)
    else:
        values = rng.standard_normal(shape)
    return np.asarray(values).astype(dtype)


def _resolver(resolver: Resolver | None) -> Resolver:
    if resolver is None:  # callers that may meet from: nodes pass theirs
        raise TypeError("a `from:` node needs a Resolver")
    return resolver


def input_bytes(plan: CallPlan, resolver: Resolver | None = None) -> int:
    """Bytes of every traced input of the call, ``from:`` arrays included."""
    total = 0
    for arg in plan.dynamic:
        if arg.node is not None:
            total += _node_bytes(arg.node, resolver)
    return total


def _node_bytes(node: Node, resolver: Resolver | None) -> int:
    if isinstance(node, LeafSpec):
        return node.nbytes
    if isinstance(node, ListNode):
        return sum(_node_bytes(item, resolver) for item in node.items)
    if isinstance(node, DictNode):
        return sum(_node_bytes(item, resolver) for _, item in node.items)
    return sum(_array_bytes(a) for a in _resolver(resolver).resolve(node).arrays)


def _array_bytes(leaf: Any) -> int:
    count = int(np.prod(leaf.shape, dtype=np.int64))
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return int(count * DTYPE_BYTES["key"])
    return count * int(np.dtype(leaf.dtype).itemsize)


def build_call(plan: CallPlan, make: Any) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for the call, applying ``make`` to each traced node.

    Static values are included; use ``dynamic_only`` for calling a ``Compiled``.
    """
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for arg in plan.args:
        value = arg.value if arg.static else make(arg.node)
        if arg.keyword:
            kwargs[arg.name] = value
        else:
            args.append(value)
    return args, kwargs


def dynamic_only(
    plan: CallPlan, args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Drop static values: a ``Compiled`` is called with the traced arguments alone."""
    static_pos = set(plan.static_argnums)
    static_names = set(plan.static_argnames)
    return (
        [a for i, a in enumerate(args) if i not in static_pos],
        {k: v for k, v in kwargs.items() if k not in static_names},
    )


def check_input_size(total_bytes: int, limit_bytes: int) -> None:
    """Refuse to allocate inputs above ``limit_bytes``.

    Raises:
        UsageError: The inputs are larger than the limit, naming the flag that raises it.
    """
    if total_bytes > limit_bytes:
        raise UsageError(
            f"the spec's inputs need {total_bytes:,} bytes, over the limit of {limit_bytes:,}",
            hint="Raise it with --max-input-bytes, or skip execution with --no-execute.",
        )


def describe_args(
    plan: CallPlan, resolver: Resolver | None = None, shardings: dict[str, Any] | None = None
) -> tuple[ArgInfo, ...]:
    """One ``ArgInfo`` per leaf and static value, with readable pytree paths.

    ``shardings`` (parameter name -> the executable's sharding subtree, see
    ``pipeline.shardings.argument_shardings``) adds each leaf's sharding and per-device shape.
    """
    out: list[ArgInfo] = []
    for arg in plan.args:
        if arg.static:
            out.append(ArgInfo(path=arg.name, kind="static", value=safe_repr(arg.value)))
        elif arg.node is not None:
            placed = None if shardings is None else shardings.get(arg.name)
            _describe(arg.node, arg.name, out, resolver, placed)
    return tuple(out)


def _describe(
    node: Node, path: str, out: list[ArgInfo], resolver: Resolver | None, placed: Any
) -> None:
    """``placed`` is the matching subtree of the executable's input shardings, or ``None``."""
    if isinstance(node, LeafSpec):
        kind = "key" if node.is_key else "array"
        out.append(_placed(ArgInfo(path, kind, node.dtype, node.shape, node.weak_type), placed))
    elif isinstance(node, ListNode):
        for i, item in enumerate(node.items):
            _describe(item, f"{path}[{i}]", out, resolver, None if placed is None else placed[i])
    elif isinstance(node, DictNode):
        for key, item in node.items:
            sub = None if placed is None else placed[key]
            _describe(item, f"{path}[{key!r}]", out, resolver, sub)
    else:
        arrays = None if placed is None else placed.arrays
        _describe_filtered(_resolver(resolver).resolve(node), path, out, arrays)


def _placed(info: ArgInfo, sharding: Any) -> ArgInfo:
    if sharding is None or info.shape is None:
        return info
    from jaxinspect.inputs.placedshards import shard_shape, sharding_text

    return replace(
        info, sharding=sharding_text(sharding), shard_shape=shard_shape(sharding, info.shape)
    )


def _describe_filtered(
    filtered: Filtered, path: str, out: list[ArgInfo], shardings: Any = None
) -> None:
    """Array and static leaves in the order of the user's pytree."""
    static = filtered.static
    arrays = iter(zip(static.array_paths, filtered.arrays, strict=True))
    placed = iter(shardings if shardings is not None else [None] * len(filtered.arrays))
    statics = iter(zip(static.static_paths, static.statics, strict=True))
    for is_array_leaf in static.mask:
        if is_array_leaf:
            sub, leaf = next(arrays)
            key = jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
            dtype = "key" if key else str(leaf.dtype)
            shape = tuple(int(d) for d in leaf.shape)
            kind = "key" if key else "array"
            info = ArgInfo(path + sub, kind, dtype, shape, bool(leaf.weak_type))
            out.append(_placed(info, next(placed)))
        else:
            sub, value = next(statics)
            shown = describe_static(static_value(value))
            out.append(ArgInfo(path + sub, "static", value=shown))
