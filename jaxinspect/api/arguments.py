"""The arguments of a Python call as a ``Spec``: what ``jaxinspect.inspect`` compiles for.

Each argument is a ``ValueNode``, evaluated as a ``from:`` result is (and as the pytest
fixture's ``args=``): array and ``ShapeDtypeStruct`` leaves are traced, other leaves static,
as ``jax.jit`` does. ``mesh=`` and ``topology=`` go through the spec parser, so a mistake
reads as it does in a spec file.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from jaxinspect.errors import SpecError
from jaxinspect.inputs.fromnode import ValueNode
from jaxinspect.inputs.spec import Node, Spec, parse_spec_document

#: Where the arguments came from, in error messages (a spec's file name in the CLI).
SOURCE = "jaxinspect.inspect"


def call_spec(
    function: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    static: Mapping[str, Any],
    mesh: Any,
    topology: str | None,
) -> Spec:
    """The spec of ``function(*args, **kwargs)`` with ``static`` as compile-time constants.

    ``mesh``: ``{"axis": size, ...}`` as under a spec's ``mesh:``, or a ``jax.sharding.Mesh``
    (its axis names and sizes).

    Raises:
        SpecError: A mesh or topology the spec grammar rejects, a parameter given twice, or
            keyword arguments beside more positional ones than ``function`` names.
    """
    document: dict[str, Any] = {"args": []}
    if mesh is not None:
        document["mesh"] = _mesh_document(mesh)
    if topology is not None:
        document["topology"] = topology
    spec = parse_spec_document(document, source=SOURCE)
    for name in static:
        if name in kwargs:
            raise SpecError(f"{SOURCE}: `{name}` is given both in kwargs= and in static=")
    nodes: tuple[tuple[str | None, Node], ...]
    if kwargs:
        nodes = _named(function, args, kwargs, static)
    else:
        nodes = tuple((None, ValueNode(v, f"{SOURCE}: argument {i}")) for i, v in enumerate(args))
    return replace(spec, args=nodes, static=tuple((str(k), v) for k, v in static.items()))


def _named(
    function: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    static: Mapping[str, Any],
) -> tuple[tuple[str | None, Node], ...]:
    """Every argument by parameter name: a spec binds either a list or a mapping."""
    names: list[str] = []
    if args:
        try:
            parameters = list(inspect.signature(function).parameters.values())
        except (TypeError, ValueError):  # no signature to name the positional arguments by
            parameters = []
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        names = [p.name for p in parameters if p.kind in kinds]
        if len(args) > len(names):
            raise SpecError(
                f"{SOURCE}: {len(args)} positional arguments beside kwargs=, but the function "
                f"names {len(names)} positional parameters",
                hint="Pass every argument positionally, or name them all in kwargs=.",
            )
    out: list[tuple[str | None, Node]] = []
    for name, value in zip(names, args, strict=False):
        if name in kwargs or name in static:
            raise SpecError(f"{SOURCE}: `{name}` is given positionally and by name")
        out.append((name, ValueNode(value, f"{SOURCE}: argument {name}")))
    out += [(str(k), ValueNode(v, f"{SOURCE}: argument {k}")) for k, v in kwargs.items()]
    return tuple(out)


def _mesh_document(mesh: Any) -> Any:
    """A ``jax.sharding.Mesh`` as the spec's ``mesh:`` mapping; anything else as given."""
    shape = getattr(mesh, "shape", None)
    if isinstance(shape, Mapping) and hasattr(mesh, "axis_names"):
        return {str(name): int(size) for name, size in shape.items()}
    return mesh
