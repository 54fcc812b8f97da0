"""The ENTRY computation of the optimized HLO as a folded, layered graph.

Nodes are the entry's instructions (fusions, dots, parameters, tuples ...), edges their data
flow (operand -> user). folding.py groups them (user functions and name scopes; runs of
identical groups, a model's layers, as one ``×count`` group). Parameters and constants join
the innermost group holding all their users.

Each group's children are placed in rows here, once per distinct group structure (96
identical layers are laid out once): a child sits in the row of its longest path from the
group's inputs, except sources (parameters, constants), which sit just above their first
user; within a row, children are ordered by the mean place of their neighbours (barycentre
sweeps down, up and down again). The page sizes the boxes and stacks the rows, so a group
expands in place. A fusion's fused computation is laid out the same way, once per distinct
body.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from jaxinspect.htmlreport.folding import Folder, Ref
from jaxinspect.xla.collectives import COLLECTIVES
from jaxinspect.xla.hlotext import HloComputation, HloInstr, HloText

#: The figures a node can be coloured by, in this order in ``GraphNode.values``.
METRICS = ("time", "flops", "bytes")

Values = tuple[float | None, float | None, float | None]
#: (row, place in the row) of each child of a group, in the group's child order.
Layout = tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One instruction of the entry computation."""

    name: str
    opcode: str
    shape: str
    op_name: str | None  # JAX's op_name: the jaxpr equation's path
    source: str | None  # file:line function, where metadata names one
    group: int  # the innermost group holding it (index into Graph.groups; 0 is the top)
    #: Measured seconds, FLOPs, bytes accessed (``None``: not known for this node).
    values: Values
    body: int | None  # a fusion: its fused computation (index into Graph.bodies)
    layer: int  # its row within its group
    collective: bool

    @property
    def label(self) -> str:
        """A parameter by the argument it holds, anything else by its name (as in the tables)."""
        if self.opcode == "parameter" and self.op_name:
            return self.op_name
        return self.name


@dataclass(frozen=True, slots=True)
class GraphGroup:
    """A foldable group of nodes and groups."""

    label: str  # the function or name scope; a repeat's ends in ``×count``
    kind: str  # "root", "repeat" (identical members), "member" (one copy) or "scope"
    count: int  # a repeat's members; 0 otherwise
    parent: int  # -1 for the root
    #: Items in order: node ``i`` is ``i``, group ``g`` is ``len(nodes) + g``.
    children: tuple[int, ...]
    values: tuple[float, float, float]  # sums of its nodes' values (unknown counts 0)
    layout: int  # index into Graph.layouts


@dataclass(frozen=True, slots=True)
class FusedBody:
    """A fusion's fused computation: instruction labels, edges, layout."""

    labels: tuple[str, ...]
    shapes: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    layout: Layout


@dataclass(frozen=True, slots=True)
class Graph:
    """The nodes, their edges (operand index -> user index), groups and layouts."""

    nodes: tuple[GraphNode, ...]
    edges: tuple[tuple[int, int], ...]
    groups: tuple[GraphGroup, ...]
    layouts: tuple[Layout, ...]
    bodies: tuple[FusedBody, ...]
    #: What the page colours by at first: "time" (with --measure), else "flops".
    weighted_by: str


def entry_graph(
    hlo: HloText,
    values: dict[str, Values],
    sources: dict[str, str],
    weighted_by: str,
    scopes: dict[str, tuple[str, ...]] | None = None,
) -> Graph:
    """Fold and lay out ``hlo``'s ENTRY computation.

    Args:
        hlo: The optimized module.
        values: By instruction name: measured seconds, FLOPs, bytes (see ``METRICS``).
        sources: By instruction name: ``file:line function``.
        weighted_by: The metric the page colours by first.
        scopes: By instruction name: the user functions that made it, outermost first.
    """
    instrs = hlo.entry.instructions
    index = {instr.name: i for i, instr in enumerate(instrs)}
    operands = [[index[o] for o in dict.fromkeys(instr.operands) if o in index] for instr in instrs]
    paths = [_scope_path(instr, (scopes or {}).get(instr.name, ())) for instr in instrs]
    folder = Folder([_token(instr) for instr in instrs], paths)
    is_source = [not ops for ops in operands]
    folder.fold_root([i for i in range(len(instrs)) if not is_source[i]])
    n = len(instrs)
    parent, children = _placed(folder, n, operands, is_source)
    edges = tuple((j, i) for i, ops in enumerate(operands) for j in ops)
    # Sources by kind and shape only: each layer's own weights make identical layers.
    shapes: list[Hashable] = [
        ("source", x.opcode, x.shape) if is_source[i] else _token(x) for i, x in enumerate(instrs)
    ]
    layouts, group_layout, rows = _layouts(folder, n, children, parent, edges, shapes)
    bodies, body_of = _bodies(hlo, instrs)
    empty: Values = (None, None, None)
    nodes = tuple(
        GraphNode(
            name=instr.name,
            opcode=instr.opcode,
            shape=instr.shape,
            op_name=_unescape(instr.op_name),
            source=sources.get(instr.name),
            group=parent[i],
            values=values.get(instr.name, empty),
            body=body_of.get(i),
            layer=rows[i],
            collective=_is_collective(instr.opcode),
        )
        for i, instr in enumerate(instrs)
    )
    sums = _sums(nodes, parent, folder)
    groups = tuple(
        GraphGroup(g.label, g.kind, g.count, g.parent, tuple(children[k]), sums[k], group_layout[k])
        for k, g in enumerate(folder.groups)
    )
    return Graph(nodes, edges, groups, tuple(layouts), bodies, weighted_by)


def _token(instr: HloInstr) -> Hashable:
    """What makes two instructions the same up to their names (and their operands')."""
    return (instr.opcode, instr.fusion_kind, instr.shape, instr.op_name, instr.stack_frame_id)


def _scope_path(instr: HloInstr, functions: tuple[str, ...]) -> tuple[str, ...]:
    """User functions (outermost first), then JAX's name scopes from ``op_name`` (its
    ``jit(...)``/``transpose(...)`` wrappers and the primitive's own name left out)."""
    op_name = _unescape(instr.op_name) or ""
    named = tuple(part for part in op_name.split("/")[:-1] if part and "(" not in part)
    return functions + named


def _placed(
    folder: Folder, n: int, operands: list[list[int]], is_source: list[bool]
) -> tuple[list[int], list[list[int]]]:
    """Each node's group and each group's children (item ids); sources join the innermost
    group holding all their users (the top when unused)."""
    parent = [0] * n
    children: list[list[int]] = [[] for _ in folder.groups]
    for k, group in enumerate(folder.groups):
        for child in group.children:
            if isinstance(child, Ref):
                children[k].append(n + child.group)
            else:
                children[k].append(child)
                parent[child] = k
    depth = [0] * len(folder.groups)
    for k, group in enumerate(folder.groups):  # a parent is created before its children
        depth[k] = 0 if group.parent < 0 else depth[group.parent] + 1
    users: list[list[int]] = [[] for _ in range(n)]
    for i, ops in enumerate(operands):
        for j in ops:
            users[j].append(i)
    sources_of: list[list[int]] = [[] for _ in folder.groups]
    for i in range(n):
        if not is_source[i]:
            continue
        home: int | None = None
        for u in users[i]:
            home = parent[u] if home is None else _common(home, parent[u], folder, depth)
        if home is not None and folder.groups[home].kind == "repeat":
            home = folder.groups[home].parent  # a repeat's box holds its members only
        parent[i] = 0 if home is None else home
        sources_of[parent[i]].append(i)
    return parent, [sources_of[k] + children[k] for k in range(len(folder.groups))]


def _common(a: int, b: int, folder: Folder, depth: list[int]) -> int:
    while a != b:
        if depth[a] >= depth[b]:
            a = folder.groups[a].parent
        else:
            b = folder.groups[b].parent
    return a


def _layouts(
    folder: Folder,
    n: int,
    children: list[list[int]],
    parent: list[int],
    edges: tuple[tuple[int, int], ...],
    tokens: Sequence[Hashable],
) -> tuple[list[Layout], list[int], list[int]]:
    """Rows and places of each group's children, computed once per distinct structure."""
    groups = folder.groups
    owner = parent + [g.parent for g in groups]  # the group holding each item
    inner: list[set[tuple[int, int]]] = [set() for _ in groups]
    position = [0] * (n + len(groups))
    for items in children:
        for p, item in enumerate(items):
            position[item] = p
    depth = [0] * len(groups)
    for k, group in enumerate(groups):
        depth[k] = 0 if group.parent < 0 else depth[group.parent] + 1
    for a, b in edges:  # each edge joins the two children of the groups' common group
        ia, ib = a, b
        while owner[ia] != owner[ib]:
            if depth[owner[ia]] >= depth[owner[ib]]:
                ia = n + owner[ia]
            else:
                ib = n + owner[ib]
        if ia != ib:
            inner[owner[ia]].add((position[ia], position[ib]))
    keys: list[int] = [0] * len(groups)
    interned: dict[Hashable, int] = {}
    cache: dict[int, int] = {}
    layouts: list[Layout] = []
    chosen = [0] * len(groups)
    rows = [0] * n
    for k in reversed(range(len(groups))):  # children are created after their parents
        kinds = tuple(("g", keys[item - n]) if item >= n else tokens[item] for item in children[k])
        key = (groups[k].kind, groups[k].label.split(" ")[0], kinds, tuple(sorted(inner[k])))
        keys[k] = interned.setdefault(key, len(interned))
        if keys[k] not in cache:
            cache[keys[k]] = len(layouts)
            layouts.append(layered(len(children[k]), sorted(inner[k])))
        chosen[k] = cache[keys[k]]
        for p, item in enumerate(children[k]):
            if item < n:
                rows[item] = layouts[chosen[k]][p][0]
    return layouts, chosen, rows


def layered(count: int, edges: Sequence[tuple[int, int]]) -> Layout:
    """(row, place) of ``count`` items joined by ``edges`` (operand position, user position)."""
    operands: list[list[int]] = [[] for _ in range(count)]
    users: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        operands[b].append(a)
        users[a].append(b)
    layers = _layers(operands, users)
    by_layer: dict[int, list[int]] = {}
    for i, layer in enumerate(layers):
        by_layer.setdefault(layer, []).append(i)
    place = _order(by_layer, operands, users)
    return tuple((layers[i], place[i]) for i in range(count))


def _layers(operands: list[list[int]], users: list[list[int]]) -> list[int]:
    """Longest path from a source; a source moves down to just above its first user."""
    layers = [0] * len(operands)
    for i, ops in enumerate(operands):  # items come after their operands
        layers[i] = 1 + max((layers[j] for j in ops if j < i), default=-1)
    for i, ops in enumerate(operands):
        if not ops and users[i]:
            layers[i] = min(layers[u] for u in users[i]) - 1
    top = min(layers, default=0)  # every source moved down: no empty first row
    return [layer - top for layer in layers]


def _order(
    by_layer: dict[int, list[int]], operands: list[list[int]], users: list[list[int]]
) -> dict[int, float]:
    """Order each layer's members by the mean place of their neighbours; return each node's
    place, layers centred under the widest (a layer's slots + its offset)."""
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


def _bodies(
    hlo: HloText, instrs: Sequence[HloInstr]
) -> tuple[tuple[FusedBody, ...], dict[int, int]]:
    """Each fusion's fused computation, one body per distinct structure (names aside)."""
    by_name = {comp.name: comp for comp in hlo.computations}
    bodies: list[FusedBody] = []
    seen: dict[Hashable, int] = {}
    body_of: dict[int, int] = {}
    for i, instr in enumerate(instrs):
        called = instr.callee("calls") if instr.opcode == "fusion" else None
        comp = by_name.get(called) if called else None
        if comp is None:
            continue
        key, edges = _body_key(comp)
        if key not in seen:
            seen[key] = len(bodies)
            labels = tuple(
                f"param {x.literal}" if x.opcode == "parameter" else x.opcode
                for x in comp.instructions
            )
            shapes = tuple(x.shape for x in comp.instructions)
            bodies.append(FusedBody(labels, shapes, edges, layered(len(labels), edges)))
        body_of[i] = seen[key]
    return tuple(bodies), body_of


def _body_key(comp: HloComputation) -> tuple[Hashable, tuple[tuple[int, int], ...]]:
    index = {x.name: i for i, x in enumerate(comp.instructions)}
    edges = tuple(
        (index[o], i)
        for i, x in enumerate(comp.instructions)
        for o in dict.fromkeys(x.operands)
        if o in index
    )
    key = (tuple((x.opcode, x.shape, x.literal) for x in comp.instructions), edges)
    return key, edges


def _sums(
    nodes: tuple[GraphNode, ...], parent: list[int], folder: Folder
) -> list[tuple[float, float, float]]:
    totals = [[0.0, 0.0, 0.0] for _ in folder.groups]
    for node, group in zip(nodes, parent, strict=True):
        k = group
        while k >= 0:
            for m, value in enumerate(node.values):
                totals[k][m] += value or 0.0
            k = folder.groups[k].parent
    return [(t[0], t[1], t[2]) for t in totals]


def _is_collective(opcode: str) -> bool:
    """Collectives (async ``-start``/``-done`` halves included)."""
    return opcode.removesuffix("-start").removesuffix("-done") in COLLECTIVES


def _unescape(op_name: str | None) -> str | None:
    """HLO prints ``params['w']`` as ``params[\\'w\\']``: show it as JAX wrote it."""
    return None if op_name is None else op_name.replace("\\'", "'")
