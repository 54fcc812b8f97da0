"""The ENTRY computation of the optimized HLO as a layered graph, laid out in Python.

Nodes are the entry's instructions (fusions, dots, parameters, tuples ...), edges their data
flow (operand -> user). Each node sits in the layer of its longest path from a source, except
sources (parameters, constants), which sit just above their first user: with every parameter
on the top row, a 12-layer model's graph was 97 nodes wide and its edges crossed the whole
page. Within a layer, nodes are ordered by the mean position of their neighbours (barycentre
sweeps down, up and down again), which keeps most edges short without a graph-layout
dependency.
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
    users: list[list[int]] = [[] for _ in names]
    for i, ops in enumerate(operands):
        for j in ops:
            users[j].append(i)
    layers = _layers(operands, users)
    by_layer: dict[int, list[int]] = {}
    for i, layer in enumerate(layers):
        by_layer.setdefault(layer, []).append(i)
    place = _order(by_layer, operands, users)
    widest = max((len(m) for m in by_layer.values()), default=1)
    nodes = []
    for i, instr in enumerate(entry.instructions):
        nodes.append(
            GraphNode(
                name=instr.name,
                opcode=instr.opcode,
                shape=instr.shape,
                layer=layers[i],
                x=MARGIN + place[i] * NODE_GAP,
                y=MARGIN / 2 + layers[i] * LAYER_GAP,
                weight=weights.get(instr.name, 0.0),
                op_name=_unescape(instr.op_name),
                source=sources.get(instr.name),
            )
        )
    edges = tuple((j, i) for i, ops in enumerate(operands) for j in ops)
    width = 2 * MARGIN + (widest - 1) * NODE_GAP
    height = MARGIN + (max(layers, default=0)) * LAYER_GAP
    return Graph(tuple(nodes), edges, width, height, weighted_by)


def _layers(operands: list[list[int]], users: list[list[int]]) -> list[int]:
    """Longest path from a source; a source moves down to just above its first user."""
    layers = [0] * len(operands)
    for i, ops in enumerate(operands):  # instructions are printed after their operands
        layers[i] = 1 + max((layers[j] for j in ops if j < i), default=-1)
    for i, ops in enumerate(operands):
        if not ops and users[i]:
            layers[i] = min(layers[u] for u in users[i]) - 1
    top = min(layers, default=0)  # every source moved down: no empty first row
    return [layer - top for layer in layers]


def _order(
    by_layer: dict[int, list[int]], operands: list[list[int]], users: list[list[int]]
) -> dict[int, float]:
    """Order each layer's members (in place) by the mean place of their neighbours; return
    each node's place, layers centred under the widest (a layer's slots + its offset)."""
    widest = max((len(m) for m in by_layer.values()), default=1)
    place: dict[int, float] = {}
    sweeps = (sorted(by_layer), sorted(by_layer, reverse=True), sorted(by_layer))
    for sweep, layer_order in enumerate(sweeps):
        first, second = (users, operands) if sweep == 1 else (operands, users)
        for layer in layer_order:
            members = by_layer[layer]
            # A node with no placed neighbour on the sweep's side (a parameter on the way
            # down) follows its other side, then stays where it was.
            members.sort(key=lambda i: (_barycentre(first[i], place, second[i], i), i))
            offset = (widest - len(members)) / 2
            for slot, i in enumerate(members):
                place[i] = slot + offset
    return place


def _barycentre(
    neighbours: list[int], place: dict[int, float], others: list[int], own: int
) -> float:
    for group in (neighbours, others):
        placed = [place[j] for j in group if j in place]
        if placed:
            return sum(placed) / len(placed)
    return place.get(own, float("inf"))


def _unescape(op_name: str | None) -> str | None:
    """HLO prints ``params['w']`` as ``params[\\'w\\']``: show it as JAX wrote it."""
    return None if op_name is None else op_name.replace("\\'", "'")
