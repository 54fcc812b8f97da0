"""Bind a spec's named arguments and statics to the target's signature as one call plan."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from jaxinspect.errors import SpecError
from jaxinspect.inputs.spec import Node, Spec
from jaxinspect.suggest import did_you_mean


@dataclass(frozen=True, slots=True)
class BoundArg:
    """One argument of the call: a traced pytree (``node``) or a static value."""

    name: str
    keyword: bool
    static: bool
    node: Node | None = None
    value: Any = None
    #: Whether the spec donates this argument's buffers (``donate:``).
    donated: bool = False


@dataclass(frozen=True, slots=True)
class CallPlan:
    """How to call the target: positional arguments first, then keyword arguments."""

    args: tuple[BoundArg, ...]

    @property
    def static_argnums(self) -> tuple[int, ...]:
        """Positions of static positional arguments, for ``jax.jit``."""
        positional = [a for a in self.args if not a.keyword]
        return tuple(i for i, a in enumerate(positional) if a.static)

    @property
    def static_argnames(self) -> tuple[str, ...]:
        """Names of static keyword arguments, for ``jax.jit``."""
        return tuple(a.name for a in self.args if a.keyword and a.static)

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """Positions of donated positional arguments, for ``jax.jit``."""
        positional = [a for a in self.args if not a.keyword]
        return tuple(i for i, a in enumerate(positional) if a.donated)

    @property
    def donate_argnames(self) -> tuple[str, ...]:
        """Names of donated keyword arguments, for ``jax.jit``."""
        return tuple(a.name for a in self.args if a.keyword and a.donated)

    @property
    def donated(self) -> tuple[str, ...]:
        """Names of every donated argument, in call order."""
        return tuple(a.name for a in self.args if a.donated)

    @property
    def dynamic(self) -> tuple[BoundArg, ...]:
        """The traced arguments, in call order."""
        return tuple(a for a in self.args if not a.static)


def bind_spec(function: Callable[..., Any], spec: Spec, *, target: str) -> CallPlan:
    """Match the spec to ``function``'s signature.

    Mapping-form arguments are passed positionally where the signature allows, because
    transformed functions such as ``jax.grad(f)`` reject keyword-only calls.

    Raises:
        SpecError: A parameter is missing, unknown, or given twice, or a donated name is not
            a traced argument of the call.
    """
    return _mark_donated(_bind(function, spec, target), spec, target)


def _bind(function: Callable[..., Any], spec: Spec, target: str) -> CallPlan:
    try:
        signature: inspect.Signature | None = inspect.signature(function)
    except (TypeError, ValueError):
        signature = None
    if spec.positional:
        return _bind_positional(spec, signature, target)
    if signature is None:
        if spec.static:
            raise SpecError(f"{spec.source}: {target} has no inspectable signature for `static`")
        return CallPlan(
            tuple(BoundArg(str(n), keyword=True, static=False, node=v) for n, v in spec.args)
        )
    return _bind_by_name(spec, signature, target)


def _bind_positional(spec: Spec, signature: inspect.Signature | None, target: str) -> CallPlan:
    names = _positional_names(signature)
    bound = []
    for i, (_, node) in enumerate(spec.args):
        name = names[i] if i < len(names) else f"arg{i}"
        bound.append(BoundArg(name, keyword=False, static=False, node=node))
    if signature is not None:
        params = signature.parameters
        has_varargs = any(p.kind is p.VAR_POSITIONAL for p in params.values())
        if len(spec.args) > len(names) and not has_varargs:
            raise SpecError(
                f"{spec.source}: args lists {len(spec.args)} arguments but {target}"
                f"{signature} takes {len(names)} positionally"
            )
        static = {name for name, _ in spec.static}
        missing = [
            name
            for name in names[len(spec.args) :]
            if params[name].default is params[name].empty and name not in static
        ]
        if missing:  # the mapping form says so too: a spec mistake, not a failing function
            raise SpecError(
                f"{spec.source}: args lists {len(spec.args)} argument"
                f"{'s' if len(spec.args) != 1 else ''} but {target}{signature} also needs "
                + ", ".join(f"`{name}`" for name in missing),
                hint="Add them to the list under `args:` (or to `static:`).",
            )
    for name, value in spec.static:
        if signature is not None and name not in signature.parameters:
            raise _unknown(spec, "static", name, signature, target)
        bound.append(BoundArg(name, keyword=True, static=True, value=value))
    return CallPlan(tuple(bound))


def _bind_by_name(spec: Spec, signature: inspect.Signature, target: str) -> CallPlan:
    given: dict[str, tuple[bool, Any]] = {str(n): (False, v) for n, v in spec.args}
    given.update({n: (True, v) for n, v in spec.static})
    params = signature.parameters
    accepts_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for name in given:
        if name not in params and not accepts_kwargs:
            section = "static" if given[name][0] else "args"
            raise _unknown(spec, section, name, signature, target)
    bound: list[BoundArg] = []
    keyword_only_from_here = False
    for param in params.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.name not in given:
            if param.default is param.empty:
                raise SpecError(
                    f"{spec.source}: missing parameter `{param.name}` of {target}{signature}",
                    hint=f"Add `{param.name}:` under `args:` (or `static:`).",
                )
            # Skipping a defaulted parameter means later ones must go by keyword.
            keyword_only_from_here = True
            continue
        is_static, value = given.pop(param.name)
        keyword = keyword_only_from_here or param.kind is param.KEYWORD_ONLY
        if param.kind is param.POSITIONAL_ONLY and keyword_only_from_here:
            raise SpecError(
                f"{spec.source}: positional-only `{param.name}` follows a skipped parameter"
            )
        bound.append(_bound(param.name, keyword, is_static, value))
    for name, (is_static, value) in given.items():  # extra names for **kwargs
        bound.append(_bound(name, True, is_static, value))
    return CallPlan(tuple(bound))


def _mark_donated(plan: CallPlan, spec: Spec, target: str) -> CallPlan:
    if not spec.donate:
        return plan
    by_name = {a.name: a for a in plan.args}
    for name in spec.donate:
        arg = by_name.get(name)
        if arg is None:
            raise SpecError(
                f"{spec.source}: donate: {target} is called without an argument `{name}`"
                f"{did_you_mean(name, list(by_name))}"
            )
        if arg.static:
            raise SpecError(
                f"{spec.source}: donate: `{name}` is static; only traced arguments can be donated"
            )
    donated = set(spec.donate)
    return CallPlan(tuple(replace(a, donated=a.name in donated) for a in plan.args))


def _bound(name: str, keyword: bool, is_static: bool, value: Any) -> BoundArg:
    if is_static:
        return BoundArg(name, keyword=keyword, static=True, value=value)
    return BoundArg(name, keyword=keyword, static=False, node=value)


def _positional_names(signature: inspect.Signature | None) -> list[str]:
    if signature is None:
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in signature.parameters.values() if p.kind in kinds]


def _unknown(
    spec: Spec, section: str, name: str, signature: inspect.Signature, target: str
) -> SpecError:
    return SpecError(
        f"{spec.source}: {section}.{name}: {target}{signature} has no parameter `{name}`"
        f"{did_you_mean(name, signature.parameters)}"
    )
