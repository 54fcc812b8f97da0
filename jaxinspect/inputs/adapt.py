"""Bind a target to a spec whose arguments may be built in Python, and make it fit ``jax.jit``.

Arguments from ``from:`` nodes arrive as ``Filtered`` nodes; the function jit traces turns
them back into the user's objects, calls the target, drops non-array outputs (as
``equinox.filter_jit`` does) and returns the arrays the call wrote into mutable objects
(NNX Variables), as ``nnx.jit`` does, so their updates are computed and not dead code.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from jaxinspect.errors import SpecError, TargetError
from jaxinspect.inputs.binding import BoundArg, CallPlan, bind_spec
from jaxinspect.inputs.factories import Resolver, expand_args_from
from jaxinspect.inputs.filtered import Filtered, combine, is_array, is_filtered
from jaxinspect.inputs.fromnode import ValueNode
from jaxinspect.inputs.spec import Spec, has_factory

#: The argument name a callable-pytree target's own arrays are traced under.
SELF = "self"


@dataclass(frozen=True, slots=True)
class BoundTarget:
    """What to hand to ``jax.jit`` and how to call it."""

    function: Callable[..., Any]
    plan: CallPlan


def bind_target(
    function: Callable[..., Any], spec: Spec, *, target: str, resolver: Resolver
) -> BoundTarget:
    """Bind ``spec`` to ``function``, evaluating ``args: {from: ...}`` first if the spec has it.

    A callable pytree with array leaves (an Equinox or NNX module) gets its arrays traced as
    a leading ``self`` argument instead of baked in as constants.

    Raises:
        SpecError: The spec (or a factory's result) does not fit the signature.
        TargetError: jax.jit cannot use the target as a function.
        StageError: A factory raised.
    """
    expanded = expand_args_from(spec, resolver)
    try:
        plan = bind_spec(function, expanded, target=target)
    except SpecError as exc:
        if spec.args_from is None:
            raise
        where = f"{spec.args_from.where} ({spec.args_from.label})"
        detail = exc.message.removeprefix(f"{spec.source}: ")
        raise SpecError(f"{where}: the result does not fit: {detail}", hint=exc.hint) from None
    if _has_array_leaves(function):
        own = BoundArg(SELF, keyword=False, static=False, node=ValueNode(function, target))
        plan = dataclasses.replace(plan, args=(own, *plan.args))
    else:
        check_jittable(function, target)
    return BoundTarget(adapt_function(function, [plan]), plan)


#: Marks a function that opens ``Filtered`` arguments itself (inside its transforms).
_OPENS_FILTERED = "__jaxinspect_opens_filtered__"


def opens_filtered(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, marked as opening ``Filtered`` arguments itself, so jit gets it as is."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    setattr(call, _OPENS_FILTERED, True)
    return call


def adapt_function(function: Callable[..., Any], plans: list[Any]) -> Callable[..., Any]:
    """What to jit for calls bound as ``plans`` (one function for every case of a sweep)."""
    if getattr(function, _OPENS_FILTERED, False):
        return function
    if _has_array_leaves(function):
        return filtered_call(method_call(function))
    nodes = [a.node for p in plans if isinstance(p, CallPlan) for a in p.args if a.node is not None]
    if any(has_factory(node) for node in nodes):
        return filtered_call(function)
    return function


def _has_array_leaves(function: Any) -> bool:
    if jax.tree_util.tree_structure(function).node_data() is None:
        return False  # a plain function is a leaf of its own
    return any(is_array(leaf) for leaf in jax.tree_util.tree_leaves(function))


def check_jittable(function: Any, target: str) -> None:
    """Refuse, with the reason, a callable that jit cannot key its cache on.

    Raises:
        TargetError: The callable is not hashable or not weak-referenceable.
    """
    kind = type(function).__name__
    try:
        hash(function)
    except TypeError as exc:
        why = f"a {kind} is not hashable ({exc})"
        if dataclasses.is_dataclass(function):
            why += "; a dataclass with eq=True and no frozen=True has no __hash__"
        raise _not_jittable(target, why) from None
    try:
        weakref.ref(function)
    except TypeError:
        raise _not_jittable(target, f"a {kind} cannot be weakly referenced (__slots__)") from None


def _not_jittable(target: str, why: str) -> TargetError:
    return TargetError(
        f"target {target!r}: jax.jit keys its cache on the function, which must be hashable "
        f"and weakly referenceable: {why}",
        hint="Register its class as a pytree (jax.tree_util.register_dataclass, flax.struct, "
        "equinox.Module) so its arrays become arguments, make it hashable, or target a "
        "function that calls it.",
    )


def method_call(owner: Any) -> Callable[..., Any]:
    """``owner(*args, **kwargs)`` as a function of ``(self, *args, **kwargs)``."""

    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return self(*args, **kwargs)

    params = list(inspect.signature(owner).parameters.values())
    first = inspect.Parameter(SELF, inspect.Parameter.POSITIONAL_ONLY)
    call.__signature__ = inspect.Signature([first, *params])  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = type(owner).__name__
    call.__module__ = type(owner).__module__
    return call


def filtered_call(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` taking ``Filtered`` arguments; non-array outputs dropped, updates returned."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        opened = _open(function, args, kwargs)
        args, kwargs = jax.tree_util.tree_map(
            lambda x: opened[id(x)][1] if is_filtered(x) else x, (args, kwargs), is_leaf=is_filtered
        )
        out = function(*args, **kwargs)
        updates = {
            k: v for node, obj, label in opened.values() for k, v in _written(node, obj, label)
        }
        out = jax.tree_util.tree_map(lambda leaf: leaf if is_array(leaf) else None, out)
        return (out, updates) if updates else out

    return call


def _open(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[int, tuple[Filtered, Any, str]]:
    """Each ``Filtered`` argument by id: the node, the user's object it stands for, its name."""
    names = _positional_names(function)
    found: dict[int, tuple[Filtered, Any, str]] = {}
    flat = jax.tree_util.tree_flatten_with_path((args, kwargs), is_leaf=is_filtered)[0]
    for path, leaf in flat:
        if not is_filtered(leaf):
            continue
        group, top, *rest = path
        if group.idx == 0:
            index = top.idx
            name = names[index] if index < len(names) else f"args[{index}]"
        else:
            name = str(top.key)
        found[id(leaf)] = (leaf, combine(leaf), name + jax.tree_util.keystr(tuple(rest)))
    return found


def _positional_names(function: Callable[..., Any]) -> list[str]:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


def _written(node: Filtered, obj: Any, label: str) -> list[tuple[str, Any]]:
    """Array leaves of ``obj`` that the call replaced (mutable objects such as NNX modules)."""
    after = jax.tree_util.tree_flatten_with_path(obj)[0]
    before = iter(node.arrays)
    inputs = [next(before) if m else None for m in node.static.mask]
    same_shape = len(after) == len(inputs)
    return [
        (label + jax.tree_util.keystr(path), leaf)
        for i, (path, leaf) in enumerate(after)
        if is_array(leaf) and not (same_shape and leaf is inputs[i])
    ]
