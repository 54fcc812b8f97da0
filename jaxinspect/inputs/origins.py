"""Which executed inputs were random and which came from factories, for notes and hints."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from jaxinspect.base.inspection import InputOrigins
from jaxinspect.errors import StageError
from jaxinspect.inputs.binding import CallPlan
from jaxinspect.inputs.fromnode import FromNode, ValueNode
from jaxinspect.inputs.leaves import LeafSpec
from jaxinspect.inputs.spec import DictNode, ListNode, Node


def input_origins(plan: CallPlan, source: str) -> InputOrigins:
    """The traced arguments' origins under ``source`` (``random`` or ``factory``).

    Parts are named as deep as their origin changes: ``x`` when all of ``x`` is random,
    ``state.params`` and ``state.step`` when a YAML mapping mixes the two.
    """
    random: list[str] = []
    factory: list[str] = []
    for arg in plan.args:
        if arg.static or arg.node is None:
            continue
        for path, from_factory in _parts(arg.node, arg.name, source == "factory"):
            (factory if from_factory else random).append(path)
    return InputOrigins(source, tuple(random), tuple(factory))


def _parts(node: Node, path: str, factory: bool) -> list[tuple[str, bool]]:
    """``(path, from a factory)`` of each part, a subtree of one origin named once."""
    if isinstance(node, LeafSpec):
        return [(path, False)]
    if isinstance(node, FromNode | ValueNode):
        return [(path, factory)]
    children = (
        [(f"{path}[{i}]", item) for i, item in enumerate(node.items)]
        if isinstance(node, ListNode)
        else [(f"{path}.{key}", item) for key, item in node.items]
        if isinstance(node, DictNode)
        else []
    )
    parts = [part for sub, item in children for part in _parts(item, sub, factory)]
    origins = {from_factory for _, from_factory in parts}
    return [(path, origins.pop())] if len(origins) == 1 else parts


def inputs_hint(origins: InputOrigins, built: tuple[str, ...], skip: str) -> str:
    """What an execution failure adds: which inputs were random and how to change that.

    ``built``: the arguments a factory builds (``input_origins(plan, "factory").factory``);
    ``skip``: how this command avoids executing at all.
    """
    if not origins.random:
        return "The inputs were the arrays the `from:` factories returned (--inputs factory)."
    names = ", ".join(origins.random)
    said = (
        f"The inputs {names} were seeded random values (floats N(0,1), integers in [0, 10)), "
        "which a function that checks its inputs' values may refuse."
    )
    if origins.source == "random" and built:
        return (
            f"{said} Run with --inputs factory (or `inputs: factory` in the spec) to execute on "
            f"the arrays the factories return for {', '.join(built)}, or {skip}."
        )
    return (
        f"{said} Build them with a `from:` factory and run with --inputs factory (or "
        f"`inputs: factory` in the spec) to execute on real values, or {skip}."
    )


@contextmanager
def explained_inputs(plan: CallPlan, source: str, skip: str) -> Iterator[None]:
    """Add ``inputs_hint`` to an execution failure of the user's program (stage ``execute``)."""
    try:
        yield
    except StageError as exc:
        if exc.stage == "execute":
            built = input_origins(plan, "factory").factory
            hint = inputs_hint(input_origins(plan, source), built, skip)
            exc.hint = f"{hint}\n{exc.hint}" if exc.hint else hint
        raise
