"""Python numbers in a ``from:`` factory's result: traced as ``jax.jit`` does, or static.

``jax.jit`` traces every leaf of an argument, so a fresh flax ``TrainState.step`` (the Python
int ``0``) is a weakly typed ``int32[]`` parameter of the user's program, and a learning-rate
schedule on it stays a computation. ``equinox.filter_jit`` keeps every non-array leaf static,
and so do Equinox and NNX modules' own fields (a layer's size, a dropout rate). jaxinspect
follows the target: a ``jax.jit``-wrapped target traces the numbers of its factory results
(except inside Equinox/NNX modules); an ``equinox.filter_jit`` target, a module target and a
plain function keep them static, as before. The spec key ``python_numbers: traced|static``
decides instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxinspect.inputs.spec import Spec

#: Base classes whose instances keep their Python numbers static, by (module prefix, name).
_MODULE_BASES = (
    ("equinox", "Module"),
    ("flax.nnx", "Module"),
    ("flax.nnx", "Object"),
    ("flax.nnx", "Pytree"),
)


def is_module(value: Any) -> bool:
    """Whether ``value`` is an Equinox module (``filter_jit``'s wrapper is one) or NNX object."""
    for cls in type(value).__mro__:
        module = str(getattr(cls, "__module__", "") or "")
        for prefix, name in _MODULE_BASES:
            if cls.__name__ == name and (module == prefix or module.startswith(prefix + ".")):
                return True
    return False


def _is_jax_jit(function: Any) -> bool:
    # jax.jit's wrapper (PjitFunction) stages itself: it has trace and lower; a module has not.
    return callable(getattr(function, "lower", None)) and callable(getattr(function, "trace", None))


def traces_numbers(function: Callable[..., Any], spec: Spec) -> bool:
    """Whether Python numbers in ``spec``'s factory results are traced for ``function``."""
    if spec.python_numbers is not None:
        return spec.python_numbers == "traced"
    return _is_jax_jit(function) and not is_module(function)


def is_number(leaf: Any) -> bool:
    """A Python number jax.jit would trace as a weakly typed scalar (``bool`` is not one)."""
    return isinstance(leaf, int | float | complex) and not isinstance(leaf, bool)


def number_mask(tree: Any) -> list[bool]:
    """For each leaf of ``tree`` (in ``tree_leaves`` order), whether it is a number to trace.

    Numbers inside an Equinox or NNX module stay static: the module's own jit keeps them so.
    """
    out: list[bool] = []
    for unit in jax.tree_util.tree_leaves(tree, is_leaf=is_module):
        inside = is_module(unit)
        out.extend(not inside and is_number(leaf) for leaf in jax.tree_util.tree_leaves(unit))
    return out


def weak_scalar(number: Any) -> jax.ShapeDtypeStruct:
    """The abstract value ``jax.jit`` traces a Python number as (``int32[]`` weak, …)."""
    # int -> int32 (int64 under x64), float -> float32, as jit's weak scalars; nothing allocated
    dtype = jax.dtypes.canonicalize_dtype(np.dtype(type(number)))
    return jax.ShapeDtypeStruct((), dtype, weak_type=True)
