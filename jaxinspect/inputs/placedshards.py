"""How the compiled executable placed each input and output: its sharding and per-device shape.

Read back from ``Compiled.input_shardings``/``output_shardings`` (what XLA's partitioner
settled on), not from what the spec asked for.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxinspect.base.inspection import OutputInfo
from jaxinspect.inputs.binding import CallPlan


def sharding_text(sharding: Any) -> str | None:
    """``P('data', None)`` for a mesh sharding, ``None`` for one device; JAX's text otherwise."""
    if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return None
    spec = getattr(sharding, "spec", None)
    if isinstance(spec, jax.sharding.PartitionSpec):
        entries = ", ".join(_entry_text(e) for e in spec)
        return f"P({entries})"
    return str(sharding)


def _entry_text(entry: Any) -> str:
    if entry is None:
        return "None"
    if isinstance(entry, tuple):
        return "(" + ", ".join(repr(a) for a in entry) + ")"
    return repr(entry)


def shard_shape(sharding: Any, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape each device holds, or ``None`` when it is the whole array (one device)."""
    if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return None
    return tuple(int(d) for d in sharding.shard_shape(shape))


def argument_shardings(compiled: Any, plan: CallPlan) -> dict[str, Any]:
    """Each traced parameter's sharding subtree, by parameter name (statics have none)."""
    positional, keyword = compiled.input_shardings
    out: dict[str, Any] = {}
    index = 0
    for arg in plan.args:
        if arg.static:
            continue
        if arg.keyword:
            out[arg.name] = keyword[arg.name]
        else:
            out[arg.name] = positional[index]
            index += 1
    return out


def output_infos(compiled: Any) -> tuple[OutputInfo, ...]:
    """Every output leaf with its dtype, shape, sharding and per-device shape."""
    flat = jax.tree_util.tree_flatten_with_path(compiled.out_info)[0]
    outputs = []
    for path, info in flat:
        shape = tuple(int(d) for d in info.shape)
        sharding = getattr(info, "sharding", None)
        outputs.append(
            OutputInfo(
                path="result" + jax.tree_util.keystr(path),
                dtype=str(info.dtype),
                shape=shape,
                sharding=sharding_text(sharding),
                shard_shape=shard_shape(sharding, shape),
            )
        )
    return tuple(outputs)
