"""The ENTRY computation of the optimized HLO as a layered graph, laid out in Python.

Nodes are the entry's instructions (fusions, dots, parameters, tuples ...), edges their data
flow (operand -> user). Each node sits in the layer of its longest path from a source; within
a layer, nodes are ordered by the mean position of their operands (one barycentre sweep), which
keeps most edges short without a graph-layout dependency.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.cost.hlotext import HloText


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One instruction of the entry computation, placed."""

    name: str
    opcode: str
    shape: str
    layer: int
    x: float  # centre, in the SVG's units
    y: float
    weight: float  # what sizes the node: measured seconds, else FLOPs (0: smallest)
    op_name: str | None  # JAX's op_name: the jaxpr equation's path
    source: str | None  # file:line function, where metadata names one


@dataclass(frozen=True, slots=True)
class Graph:
    """The placed nodes and the edges between them (operand index -> user index)."""

    nodes: tuple[GraphNode, ...]
    edges: tuple[tuple[int, int], ...]
    width: float
    height: float
    #: What the node sizes show: "measured time", "FLOPs" or "" (all alike).
    weighted_by: str


LAYER_GAP = 90.0
NODE_GAP = 150.0
MARGIN = 80.0


def entry_graph(
    hlo: HloText,
    weights: dict[str, float],
    sources: dict[str, str],
    weighted_by: str,
) -> Graph:
    """Lay out ``hlo``'s ENTRY computation; ``weights``/``sources`` are by instruction name."""
    entry = hlo.entry
    names = [instr.name for instr in entry.instructions]
    index = {name: i for i, name in enumerate(names)}
    operands = [
        [index[o] for o in dict.fromkeys(instr.operands) if o in index]
        for instr in entry.instructions
    ]
    layers = [0] * len(names)
    for i in range(len(names)):  # instructions are printed after their operands
        layers[i] = 1 + max((layers[j] for j in operands[i] if j < i), default=-1)
    by_layer: dict[int, list[int]] = {}
    for i, layer in enumerate(layers):
        by_layer.setdefault(layer, []).append(i)
    position: dict[int, float] = {}
    for layer in sorted(by_layer):
        members = by_layer[layer]
        members.sort(key=lambda i: _barycentre(operands[i], position, i))
        for slot, i in enumerate(members):
            position[i] = float(slot)
    widest = max((len(m) for m in by_layer.values()), default=1)
    nodes = []
    for i, instr in enumerate(entry.instructions):
        members = by_layer[layers[i]]
        offset = (widest - len(members)) / 2  # centre each layer under the widest
        nodes.append(
            GraphNode(
                name=instr.name,
                opcode=instr.opcode,
                shape=instr.shape,
                layer=layers[i],
                x=MARGIN + (position[i] + offset) * NODE_GAP,
                y=MARGIN / 2 + layers[i] * LAYER_GAP,
                weight=weights.get(instr.name, 0.0),
                op_name=instr.op_name,
                source=sources.get(instr.name),
            )
        )
    edges = tuple((j, i) for i, ops in enumerate(operands) for j in ops)
    width = 2 * MARGIN + (widest - 1) * NODE_GAP
    height = MARGIN + (max(layers, default=0)) * LAYER_GAP
    return Graph(tuple(nodes), edges, width, height, weighted_by)


def _barycentre(operands: list[int], position: dict[int, float], own: int) -> tuple[float, int]:
    placed = [position[j] for j in operands if j in position]
    return (sum(placed) / len(placed) if placed else float("inf"), own)
