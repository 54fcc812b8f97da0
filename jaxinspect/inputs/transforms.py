"""The ``--transform`` grammar: ``"vmap(in_axes=(None, 0))"`` text to frozen, validated transforms.

Parsed with :mod:`ast` and ``ast.literal_eval`` (never ``eval``); jax is not imported here, so
options are checked before JAX starts. ``transform_apply`` turns them into JAX calls.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jaxinspect.errors import UsageError
from jaxinspect.suggest import did_you_mean

Check = Callable[[Any], str | None]  # returns why the value is bad, or None


def _is_bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "expected true or false"


def _is_argnums(value: Any) -> str | None:
    def ok(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if ok(value) or (isinstance(value, tuple) and value and all(ok(v) for v in value)):
        return None
    return "expected a non-negative integer or a tuple of them, e.g. 0 or (0, 1)"


def _is_axes(value: Any) -> str | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    if isinstance(value, tuple) and all(_is_axes(v) is None for v in value):
        return None
    if isinstance(value, dict) and all(_is_axes(v) is None for v in value.values()):
        return None
    return "expected an integer axis, None, or a tuple/dict of them, e.g. (None, 0)"


def _is_size(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return None if ok else "expected a positive integer"


def _is_name(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "expected a non-empty string"


def _is_names(value: Any) -> str | None:
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return None
    return "expected a tuple of names, e.g. ('hidden',)"


_GRAD: Mapping[str, Check] = {
    "argnums": _is_argnums,
    "has_aux": _is_bool,
    "holomorphic": _is_bool,
    "allow_int": _is_bool,
}
_JAC: Mapping[str, Check] = {"argnums": _is_argnums, "has_aux": _is_bool, "holomorphic": _is_bool}

#: Every transform and the keyword options it accepts.
CATALOG: Mapping[str, Mapping[str, Check]] = {
    "grad": _GRAD,
    "value_and_grad": _GRAD,
    "vmap": {
        "in_axes": _is_axes,
        "out_axes": _is_axes,
        "axis_size": _is_size,
        "axis_name": _is_name,
        "spmd_axis_name": _is_name,
    },
    "jacfwd": _JAC,
    "jacrev": {**_JAC, "allow_int": _is_bool},
    "hessian": _JAC,
    "jvp": {"has_aux": _is_bool},
    "vjp": {"has_aux": _is_bool},
    "checkpoint": {"policy": _is_name, "names": _is_names, "prevent_cse": _is_bool},
}

#: Transforms whose header shows ``argnums`` even when left at its default.
_DIFFERENTIATING = ("grad", "value_and_grad", "jacfwd", "jacrev", "hessian")
#: YAML-style spellings accepted in option values.
_LITERAL_NAMES = {"true": True, "false": False, "null": None, "none": None}


@dataclass(frozen=True, slots=True)
class Transform:
    """One JAX transformation and its keyword options, in the order written."""

    name: str
    options: tuple[tuple[str, Any], ...] = ()
    text: str = ""  # as the user wrote it, for error messages

    def option(self, key: str, default: Any = None) -> Any:
        """The value of option ``key``, or ``default``."""
        return dict(self.options).get(key, default)

    def describe(self, inner: str) -> str:
        """``name(inner, k=v, ...)``, as the composition would be written in Python."""
        shown = list(self.options)
        if self.name in _DIFFERENTIATING and "argnums" not in dict(shown):
            shown.insert(0, ("argnums", 0))
        parts = [inner, *(f"{k}={v!r}" for k, v in shown)]
        return f"{self.name}({', '.join(parts)})"


def parse_transform(text: str) -> Transform:
    """Parse one ``--transform`` value such as ``grad`` or ``"vmap(in_axes=(None, 0))"``.

    Raises:
        UsageError: Unknown transform, bad syntax, or an unknown or ill-typed option (the
            message names the transform and the option).
    """
    where = f"--transform {text!r}"
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise UsageError(
            f"{where}: not valid syntax ({exc.msg}); write e.g. grad(argnums=0)"
        ) from None
    if isinstance(tree, ast.Name):
        name, keywords = tree.id, []
    elif isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name):
        name, keywords = tree.func.id, tree.keywords
        if tree.args:
            raise UsageError(f"{where}: {name} takes keyword options only, e.g. {name}(key=value)")
    else:
        raise UsageError(f"{where}: expected NAME or NAME(key=value, ...)")
    if name not in CATALOG:
        raise UsageError(
            f"{where}: unknown transform `{name}`{did_you_mean(name, CATALOG)}",
            hint=f"Transforms: {', '.join(CATALOG)}.",
        )
    options = tuple(_parse_option(name, kw, where) for kw in keywords)
    seen = [key for key, _ in options]
    for key in seen:
        if seen.count(key) > 1:
            raise UsageError(f"{where}: {name}: option `{key}` is given twice")
    return _checked(Transform(name, options, text))


def parse_transforms(texts: list[str] | None) -> tuple[Transform, ...]:
    """Parse repeated ``--transform`` options, innermost first."""
    return tuple(parse_transform(t) for t in texts or ())


def _parse_option(name: str, keyword: ast.keyword, where: str) -> tuple[str, Any]:
    allowed = CATALOG[name]
    if keyword.arg is None:
        raise UsageError(f"{where}: {name}: `**` is not supported; write key=value options")
    if keyword.arg not in allowed:
        choices = ", ".join(allowed)
        raise UsageError(
            f"{where}: {name} has no option `{keyword.arg}`"
            f"{did_you_mean(keyword.arg, list(allowed))} (options: {choices})"
        )
    try:
        value = ast.literal_eval(_LiteralNames().visit(keyword.value))
    except (ValueError, TypeError, SyntaxError):
        raise UsageError(
            f"{where}: {name}: option `{keyword.arg}` must be a literal "
            f"(number, string, true/false, None, tuple), not {ast.unparse(keyword.value)!r}"
        ) from None
    value = _tuples(value)
    problem = allowed[keyword.arg](value)
    if problem is not None:
        raise UsageError(f"{where}: {name}: option `{keyword.arg}`={value!r}: {problem}")
    return keyword.arg, value


def _checked(transform: Transform) -> Transform:
    """Cross-option rules that a single option's check cannot see."""
    if transform.name != "checkpoint":
        return transform
    needs_names = transform.option("policy") in NAMED_POLICIES
    if needs_names != (transform.option("names") is not None):
        where = f"--transform {transform.text!r}: checkpoint"
        if needs_names:
            policy = transform.option("policy")
            raise UsageError(f"{where}: option `names` is required by policy={policy!r}")
        raise UsageError(
            f"{where}: option `names` only goes with policy="
            + " or ".join(repr(p) for p in NAMED_POLICIES)
        )
    return transform


#: ``jax.checkpoint_policies`` factories that take the names given by ``checkpoint(names=...)``.
NAMED_POLICIES = (
    "save_only_these_names",
    "save_any_names_but_these",
    "save_anything_except_these_names",
)


class _LiteralNames(ast.NodeTransformer):
    """Let users write true/false/null as in YAML, beside Python's True/False/None."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _LITERAL_NAMES:
            return ast.copy_location(ast.Constant(_LITERAL_NAMES[node.id]), node)
        return node


def _tuples(value: Any) -> Any:
    # jax wants tuples (hashable) where users may type lists.
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def describe_composition(function_name: str, transforms: tuple[Transform, ...]) -> str:
    """The chain as Python, e.g. ``vmap(grad(loss_fn, argnums=0), in_axes=(None, 0))``."""
    text = function_name
    for transform in transforms:
        text = transform.describe(text)
    return text
