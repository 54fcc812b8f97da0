"""Apply parsed ``--transform`` chains to a target with JAX's own transformations."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax

from jaxinspect.errors import UsageError
from jaxinspect.inputs.adapt import filtered_call, opens_filtered
from jaxinspect.inputs.target import LoadedTarget
from jaxinspect.inputs.transforms import NAMED_POLICIES, Transform, describe_composition
from jaxinspect.suggest import did_you_mean

Fn = Callable[..., Any]


def apply_transforms(function: Fn, transforms: tuple[Transform, ...]) -> Fn:
    """``function`` wrapped by each transform in turn, the first one innermost.

    Raises:
        UsageError: A checkpoint policy name is not one of ``jax.checkpoint_policies``.
    """
    for transform in transforms:
        function = _APPLY[transform.name](function, transform)
    return function


def transform_target(loaded: LoadedTarget, transforms: tuple[Transform, ...]) -> LoadedTarget:
    """The target with its function replaced by the transformed one (same reference).

    Arguments built by ``from:`` factories arrive as ``Filtered`` pytrees (arrays as leaves,
    the rest static); they are opened inside the transforms, so that ``grad`` or ``vmap`` see
    only arrays and never an Equinox module's activation function.
    """
    if not transforms:
        return loaded
    inner = filtered_call(loaded.function)
    return dataclasses.replace(loaded, function=opens_filtered(apply_transforms(inner, transforms)))


def composition(loaded: LoadedTarget, transforms: tuple[Transform, ...]) -> str:
    """What the pipeline compiles, e.g. ``jit(vmap(grad(f, argnums=0), in_axes=(None, 0)))``."""
    name = getattr(loaded.function, "__name__", None) or loaded.ref.attribute[-1]
    return f"jit({describe_composition(str(name), transforms)})"


def _kw(transform: Transform) -> dict[str, Any]:
    return dict(transform.options)


def _jvp(function: Fn, transform: Transform) -> Fn:
    has_aux = bool(transform.option("has_aux", False))

    # jax.jvp is not a function transformation; this is the function it evaluates.
    def jvp(primals: Any, tangents: Any) -> Any:
        return jax.jvp(function, tuple(primals), tuple(tangents), has_aux=has_aux)

    return _named(jvp, "jvp", function)


def _vjp(function: Fn, transform: Transform) -> Fn:
    has_aux = bool(transform.option("has_aux", False))

    # The forward pass and one pullback of `cotangent`: what a training step runs.
    def vjp(primals: Any, cotangent: Any) -> Any:
        if has_aux:
            out, pullback, aux = jax.vjp(function, *primals, has_aux=True)
            return out, pullback(cotangent), aux
        out, pullback = jax.vjp(function, *primals)
        return out, pullback(cotangent)

    return _named(vjp, "vjp", function)


def _named(wrapper: Fn, prefix: str, function: Fn) -> Fn:
    wrapper.__name__ = f"{prefix}_{getattr(function, '__name__', 'fn')}"
    wrapper.__qualname__ = wrapper.__name__
    return wrapper


def _checkpoint(function: Fn, transform: Transform) -> Fn:
    options = _kw(transform)
    policy_name = options.pop("policy", None)
    names = options.pop("names", None)
    if policy_name is not None:
        options["policy"] = checkpoint_policy(str(policy_name), names)
    checkpointed: Fn = jax.checkpoint(function, **options)
    return checkpointed


def checkpoint_policy(name: str, names: tuple[str, ...] | None) -> Any:
    """The ``jax.checkpoint_policies`` member called ``name`` (built with ``names`` if needed).

    Raises:
        UsageError: No such policy, or one this grammar cannot build.
    """
    policies = jax.checkpoint_policies
    public = [p for p in dir(policies) if not p.startswith("_")]
    usable = [p for p in public if p in NAMED_POLICIES or not _is_factory(p)]
    if name not in usable:
        raise UsageError(
            f"--transform checkpoint: option `policy`: unknown policy {name!r}"
            f"{did_you_mean(name, usable)}",
            hint=f"Policies: {', '.join(usable)}.",
        )
    policy = getattr(policies, name)
    return policy(*(names or ())) if name in NAMED_POLICIES else policy


def _is_factory(name: str) -> bool:
    # Factories (offloading, combining) need arguments the --transform grammar cannot express.
    return "offload" in name or name == "save_from_both_policies" or name in NAMED_POLICIES


_APPLY: dict[str, Callable[[Fn, Transform], Fn]] = {
    "grad": lambda f, t: jax.grad(f, **_kw(t)),
    "value_and_grad": lambda f, t: jax.value_and_grad(f, **_kw(t)),
    "vmap": lambda f, t: jax.vmap(f, **_kw(t)),
    "jacfwd": lambda f, t: jax.jacfwd(f, **_kw(t)),
    "jacrev": lambda f, t: jax.jacrev(f, **_kw(t)),
    "hessian": lambda f, t: jax.hessian(f, **_kw(t)),
    "jvp": _jvp,
    "vjp": _vjp,
    "checkpoint": _checkpoint,
}
