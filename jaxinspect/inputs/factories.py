"""Evaluate ``from:`` factories abstractly (``jax.eval_shape``): pytrees with no array memory."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax

from jaxinspect.errors import SpecError, StageError, TargetError
from jaxinspect.inputs.filtered import Filtered, combine, is_array, partition
from jaxinspect.inputs.fromnode import FromNode, ValueNode
from jaxinspect.inputs.numbers import is_number, number_mask, weak_scalar
from jaxinspect.inputs.spec import Node, Spec
from jaxinspect.inputs.target import load_target, parse_target
from jaxinspect.process.usercode import user_code

_EVAL_HINT = (
    "A factory runs abstractly (jax.eval_shape): it cannot read array values. "
    "Run with --debug for the full Python traceback."
)
#: JAX's errors for reading a traced value in Python (``if x > 0``, ``int(x)``, ``np.asarray``).
_CONCRETE_VALUE_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
)


class Resolver:
    """Evaluates each factory once per run and hands out the parts ``from:`` nodes select.

    Every node gets the same static objects for the same factory call, so two arguments (or two
    cases) built by one factory share one jit cache entry, as a real program's would.
    """

    def __init__(self, *, traced_numbers: bool = False) -> None:
        """``traced_numbers``: Python numbers in results are traced (``inputs.numbers``)."""
        self._results: dict[tuple[str, str | None, str], Any] = {}
        self._resolved: dict[int, tuple[Node, Filtered]] = {}
        self._traced_numbers = traced_numbers
        self._concrete: dict[tuple[str, str | None, str], Any] = {}

    def resolve(self, node: FromNode | ValueNode) -> Filtered:
        """The abstract arrays (``ShapeDtypeStruct``) and static part of the node's pytree.

        Raises:
            SpecError: The factory cannot be found, or ``path`` selects nothing.
            StageError: The factory raised (stage ``from``).
        """
        done = self._resolved.get(id(node))
        if done is not None:
            return done[1]
        if isinstance(node, ValueNode):
            filtered = _abstract(partition(node.value))
        else:
            part = select(self.result(node), node)
            traced = number_mask(part) if self._traced_numbers else None
            filtered = partition(part, traced=traced, abstract=weak_scalar)
        # The node is kept alive with its result, so its id cannot be reused meanwhile.
        self._resolved[id(node)] = (node, filtered)
        return filtered

    def concrete_arrays(self, node: FromNode | ValueNode) -> tuple[Any, ...]:
        """The node's arrays with the values the factory (or the caller) gave them.

        The factory runs once more, for real (``inputs: factory``); its array leaves must
        match the abstract run's, whose static part the program was traced with.

        Raises:
            StageError: The factory raised (stage ``from``).
            SpecError: The concrete result differs from the abstract one in structure,
                shape or dtype (a factory whose result depends on more than its kwargs).
        """
        abstract = self.resolve(node)
        if isinstance(node, ValueNode):
            made = partition(node.value)
            where, label = node.where, "the given value"
        else:
            key = (node.ref, node.folder, repr(node.kwargs))
            if key not in self._concrete:
                factory = load_factory(node)
                with user_code("from", node.where, step=f"factory {node.ref}"):
                    self._concrete[key] = factory(**dict(node.kwargs))
            part = select(self._concrete[key], node)
            # The numbers traced when the program was (``resolve``) stay Python numbers here,
            # as jit gets them; the caller passes them as they are.
            made = partition(part, traced=number_mask(part) if self._traced_numbers else None)
            where, label = node.where, node.label
        # Compared as given: jax.numpy.dtype() refuses PRNG key dtypes.
        shapes = [(tuple(a.shape), a.dtype) for a in abstract.arrays]
        found = [_shape_dtype(a) for a in made.arrays]
        if shapes != found or any(isinstance(a, jax.ShapeDtypeStruct) for a in made.arrays):
            raise SpecError(
                f"{where}: {label} gave arrays of other shapes or dtypes when run for its "
                "values than when traced, or shapes without values",
                hint="inputs: factory needs a factory that returns the same arrays each time; "
                "use inputs: random for one that returns ShapeDtypeStructs.",
            )
        return tuple(made.arrays)

    def result(self, node: FromNode) -> Any:
        """The factory's whole result, arrays as ``ShapeDtypeStruct``s (evaluated once)."""
        key = (node.ref, node.folder, repr(node.kwargs))
        if key not in self._results:
            factory = load_factory(node)
            check_kwargs(factory, node)
            self._results[key] = evaluate_abstractly(factory, dict(node.kwargs), node)
        return self._results[key]


def _shape_dtype(leaf: Any) -> tuple[tuple[int, ...], Any]:
    """A concrete leaf's shape and dtype; a traced Python number's as ``weak_scalar`` has it."""
    if is_number(leaf):
        return (), weak_scalar(leaf).dtype
    return tuple(leaf.shape), leaf.dtype


def load_factory(node: FromNode) -> Callable[..., Any]:
    """Import the node's factory, a relative ``file.py`` taken from the spec file's folder.

    Raises:
        SpecError: The file, module or function does not exist (naming the spec key).
        StageError: Importing the factory's module raised.
    """
    ref = parse_target(node.ref)
    text = node.ref
    if ref.is_file and node.folder is not None and not Path(ref.module).is_absolute():
        text = f"{Path(node.folder) / ref.module}:{'.'.join(ref.attribute)}"
    try:
        return load_target(text).function
    except TargetError as exc:
        message = exc.message.replace(f"target {text!r}: ", "", 1)
        raise SpecError(f"{node.where}.from: {node.ref}: {message}", hint=exc.hint) from None
    except StageError as exc:
        raise StageError("from", f"{node.where}: {exc.message}") from exc


def check_kwargs(factory: Callable[..., Any], node: FromNode) -> None:
    """Refuse keyword arguments the factory's signature does not accept.

    Raises:
        SpecError: Naming the spec key and the signature.
    """
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return  # nothing to check against: the call itself will tell
    try:
        signature.bind(**dict(node.kwargs))
    except TypeError as exc:
        given = ", ".join(k for k, _ in node.kwargs) or "no arguments"
        raise SpecError(
            f"{node.where}.kwargs: {node.ref}{signature} cannot take {given}: {exc}"
        ) from None


def evaluate_abstractly(factory: Callable[..., Any], kwargs: dict[str, Any], node: FromNode) -> Any:
    """``factory(**kwargs)`` traced as ``jax.eval_shape`` does: no array is allocated.

    Array leaves of the result come back as ``ShapeDtypeStruct``s; every other leaf (a function,
    a Python number) is returned as the factory made it.

    Raises:
        StageError: The factory raised, naming the spec key and showing the user's frames.
    """
    captured: list[Filtered] = []
    order: list[Any] = []

    @functools.wraps(factory)  # JAX's messages then name the factory, not this wrapper
    def arrays_only() -> tuple[Any, ...]:
        made = factory(**kwargs)
        if type(made) is dict:  # jax sorts dict keys; keep the factory's order of arguments
            order[:] = list(made)
        result = partition(made)
        captured.append(result)
        # A factory may describe arrays as ShapeDtypeStructs: make them traced zeros.
        return tuple(_as_traced(leaf) for leaf in result.arrays)

    # The user's code: its prints go to stderr; anything it raises (sys.exit too) is exit 3.
    try:
        with user_code("from", node.where, step=f"factory {node.ref}"):
            shapes = jax.eval_shape(arrays_only)
    except StageError as exc:
        if isinstance(exc.__cause__, _CONCRETE_VALUE_ERRORS):
            exc.hint = _EVAL_HINT
        raise
    result = combine(Filtered(captured[-1].static, tuple(shapes)))
    return {key: result[key] for key in order} if order else result


def _as_traced(leaf: Any) -> Any:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return jax.numpy.zeros(leaf.shape, leaf.dtype)
    return leaf


def _abstract(filtered: Filtered) -> Filtered:
    """Arrays given as values (the pytest fixture's ``args=``) become ``ShapeDtypeStruct``s."""

    def shape_of(leaf: Any) -> Any:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            return leaf
        return jax.ShapeDtypeStruct(
            leaf.shape, leaf.dtype, weak_type=bool(getattr(leaf, "weak_type", False))
        )

    return Filtered(filtered.static, tuple(shape_of(a) for a in filtered.arrays))


def select(result: Any, node: FromNode) -> Any:
    """The part of a factory's result that ``node.path`` names (mapping keys, indices, attributes).

    Raises:
        SpecError: A step of the path does not exist.
    """
    value = result
    for i, step in enumerate(node.path):
        try:
            indexable = isinstance(step, int) and isinstance(value, Sequence)
            if isinstance(value, Mapping) or indexable:
                value = value[step]
            else:
                value = getattr(value, str(step))
        except (KeyError, IndexError, AttributeError, TypeError):
            walked = "".join(f"[{p!r}]" for p in node.path[:i])
            raise SpecError(
                f"{node.where}.path: the result of {node.ref}{walked} "
                f"({type(value).__name__}) has no {step!r}"
            ) from None
    return value


def expand_args_from(spec: Spec, resolver: Resolver) -> Spec:
    """Turn ``args: {from: f}`` into one ``from:`` node per argument of ``f``'s result.

    A mapping result names the arguments; a list or tuple passes them positionally.

    Raises:
        SpecError: The result is neither, or a key is not a parameter name.
        StageError: The factory raised.
    """
    node = spec.args_from
    if node is None:
        return spec
    result = select(resolver.result(node), node)
    where = f"{node.where} ({node.label})"
    args: list[tuple[str | None, Node]]
    if isinstance(result, Mapping):
        for key in result:
            if not isinstance(key, str) or not key.isidentifier():
                raise SpecError(f"{where}: the result's key {key!r} is not a parameter name")
        args = [(str(k), _part(node, k)) for k in result]
    elif isinstance(result, list | tuple):
        args = [(None, _part(node, i)) for i in range(len(result))]
    else:
        kind = "an array" if is_array(result) else f"a {type(result).__name__}"
        raise SpecError(
            f"{where}: a factory of all the arguments returns a mapping by parameter name or "
            f"a tuple of positional arguments, not {kind}",
            hint="Return e.g. {'state': state, 'x': x} or (state, x), or put `from:` under "
            "one argument instead.",
        )
    return dataclasses.replace(spec, args=tuple(args), args_from=None)


def _part(node: FromNode, step: str | int) -> FromNode:
    label = f".{step}" if isinstance(step, str) else f"[{step}]"
    return dataclasses.replace(node, path=(*node.path, step), where=f"{node.where}{label}")
