"""Turn spec leaves into abstract ``ShapeDtypeStruct`` pytrees and seeded concrete arrays."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from jaxinspect.binding import CallPlan
from jaxinspect.errors import UsageError
from jaxinspect.leaves import LeafSpec
from jaxinspect.model import ArgInfo
from jaxinspect.spec import DictNode, ListNode, Node


@functools.cache
def _key_dtype() -> Any:
    # eval_shape traces without compiling, so building abstract keys costs no compilation.
    return jax.eval_shape(lambda: jax.random.key(0)).dtype


def _dtype(leaf: LeafSpec) -> Any:
    return _key_dtype() if leaf.is_key else jax.numpy.dtype(leaf.dtype)


def abstract_tree(node: Node, device: Any) -> Any:
    """The pytree of ``ShapeDtypeStruct`` for ``node``, committed to ``device``."""
    if isinstance(node, LeafSpec):
        sharding = jax.sharding.SingleDeviceSharding(device)
        return jax.ShapeDtypeStruct(
            node.shape, _dtype(node), sharding=sharding, weak_type=node.weak_type
        )
    if isinstance(node, ListNode):
        return [abstract_tree(item, device) for item in node.items]
    return {key: abstract_tree(item, device) for key, item in node.items}


def concrete_tree(node: Node, rng: np.random.Generator, device: Any) -> Any:
    """Seeded random values for ``node``, placed on ``device``.

    Floats are standard normal, integers uniform in [0, 10), booleans fair coins, keys random
    key data. Weak-typed scalars become Python numbers, as a caller would pass them.
    """
    if isinstance(node, ListNode):
        return [concrete_tree(item, rng, device) for item in node.items]
    if isinstance(node, DictNode):
        return {key: concrete_tree(item, rng, device) for key, item in node.items}
    if node.weak_type:
        return float(rng.standard_normal()) if node.dtype == "float32" else int(rng.integers(10))
    if node.is_key:
        data = rng.integers(0, 2**32, size=(*node.shape, 2), dtype=np.uint32)
        return jax.device_put(jax.random.wrap_key_data(data), device)
    return jax.device_put(_random_array(node, rng), device)


def _random_array(leaf: LeafSpec, rng: np.random.Generator) -> Any:
    dtype = jax.numpy.dtype(leaf.dtype)
    if np.issubdtype(dtype, np.complexfloating):
        values = rng.standard_normal(leaf.shape) + 1j * rng.standard_normal(leaf.shape)
    elif dtype == np.bool_:
        values = rng.random(leaf.shape) < 0.5
    elif np.issubdtype(dtype, np.integer):
        values = rng.integers(0, 10, size=leaf.shape)
    else:
        values = rng.standard_normal(leaf.shape)
    return np.asarray(values).astype(dtype)


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


def describe_args(plan: CallPlan) -> tuple[ArgInfo, ...]:
    """One ``ArgInfo`` per leaf and static value, with readable pytree paths."""
    out: list[ArgInfo] = []
    for arg in plan.args:
        if arg.static:
            out.append(ArgInfo(path=arg.name, kind="static", value=repr(arg.value)))
        elif arg.node is not None:
            _describe(arg.node, arg.name, out)
    return tuple(out)


def _describe(node: Node, path: str, out: list[ArgInfo]) -> None:
    if isinstance(node, LeafSpec):
        kind = "key" if node.is_key else "array"
        out.append(ArgInfo(path, kind, node.dtype, node.shape, node.weak_type))
    elif isinstance(node, ListNode):
        for i, item in enumerate(node.items):
            _describe(item, f"{path}[{i}]", out)
    else:
        for key, item in node.items:
            _describe(item, f"{path}[{key!r}]", out)
