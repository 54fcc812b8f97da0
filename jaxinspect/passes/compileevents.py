"""The events of one profiled run, as a tree of timed steps under JAX's trace, lower and compile.

The profile (``jax.profiler.ProfileData``) holds one line of complete events per thread. On
the Python thread, ``pipeline/stages.py`` marks each step with a ``jaxinspect.STEP`` event;
the events inside it nest by time. XLA compiles on a thread of its own while the Python
thread waits in ``backend_compile_and_load``: that thread's events (one per pass pipeline,
naming the module, and one per pass inside it) are hung under the innermost Python event
that contains them, and so are other threads' events while the thread that started them
waits. Events that run alongside listed work (the CPU backend's code generation workers)
are summed apart, never added to a total: the children of an event never overlap.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from jaxinspect.passes.timereport import EVENT, FUNCTION, PASS, PIPELINE, STAGE, TimedStep
from jaxinspect.pipeline.stages import STEP_EVENT

#: Events that only mark the profiler's own work, or that are instants.
_NOISE = ("ParseArguments", "PythonRefManager::CollectGarbage", "ThreadpoolListener::")
_JIT_CALL = "PjitFunction("
#: The HLO verifier a pipeline runs between passes: a check, not a pass.
_VERIFIER = "RunInvariantCheckers"


@dataclass(slots=True)
class _Node:
    name: str
    start: int
    end: int
    module: str | None
    children: list[_Node] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return (self.end - self.start) * 1e-9


@dataclass(frozen=True, slots=True)
class StageEvents:
    """The rows under each of JAX's steps, and the concurrent workers' busy time."""

    children: dict[str, tuple[TimedStep, ...]]  # stage -> its rows (depth 1 onwards)
    worker_s: float | None
    #: Whether the profile had the step's own event (the ``jaxinspect.`` annotation).
    found: frozenset[str]


def read_stage_events(profile: Any) -> StageEvents:
    """Group the events of ``profile`` (a ``jax.profiler.ProfileData``) under JAX's steps."""
    lines = [_forest(line.events) for plane in profile.planes for line in plane.lines]
    python = next((f for f in lines if any(n.name.startswith(STEP_EVENT) for n in f)), [])
    stages = {n.name[len(STEP_EVENT) :]: n for n in python if n.name.startswith(STEP_EVENT)}
    worker_s = None
    compile_node = stages.get("compile")
    if compile_node is not None:
        worker_s = _hang_compiler_thread(compile_node, [f for f in lines if f is not python])
    children = {stage: tuple(_rows(node.children, 1)) for stage, node in stages.items()}
    return StageEvents(children, worker_s, frozenset(stages))


def _forest(events: Iterable[Any]) -> list[_Node]:
    """One thread's events nested by time: the top-level ones, each with its children."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    for event in sorted(events, key=lambda e: (e.start_ns, -e.duration_ns)):
        name = str(event.name)
        if event.duration_ns <= 0 or name.startswith("$") or name.startswith(_NOISE):
            continue  # "$file.py:12 f": the Python tracer's, when a caller turned it on
        start = int(event.start_ns)
        node = _Node(name, start, start + int(event.duration_ns), _module(event.stats))
        while stack and stack[-1].end <= start:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _module(stats: Iterable[tuple[str, Any]]) -> str | None:
    return next((str(value) for key, value in stats if key == "module"), None)


def _hang_compiler_thread(compile_node: _Node, others: list[list[_Node]]) -> float | None:
    """Hang other threads' events under the events that waited for them; return the busy
    time of those that ran alongside listed work (``None``: no other thread had events).

    Threads are taken busiest first. An event is hung under the innermost event containing
    it when none of that event's children overlaps it (its thread was waiting); one that
    overlaps ran concurrently (code generation workers) and joins no total.
    """
    inside = [
        [n for n in forest if compile_node.start <= n.start and n.end <= compile_node.end]
        for forest in others
    ]
    inside = sorted((f for f in inside if f), key=lambda f: -sum(n.end - n.start for n in f))
    if not inside:
        return None
    concurrent = 0.0
    for forest in inside:
        for node in forest:
            parent = _innermost(compile_node, node)
            if any(c.start < node.end and node.start < c.end for c in parent.children):
                concurrent += node.seconds
                continue
            parent.children.append(node)
            parent.children.sort(key=lambda n: n.start)
    return concurrent


def _innermost(parent: _Node, node: _Node) -> _Node:
    for child in parent.children:
        if child.start <= node.start and node.end <= child.end:
            return _innermost(child, node)
    return parent


def _label(node: _Node, in_pipeline: bool) -> tuple[str, str]:
    """(name, kind): a pipeline's name without its `` (module)`` suffix, a jit call's function."""
    if node.module is not None and node.name.endswith(f" ({node.module})"):
        return node.name[: -len(node.module) - 3], PIPELINE
    if node.name.startswith(_JIT_CALL) and node.name.endswith(")"):
        return node.name[len(_JIT_CALL) : -1], FUNCTION
    if node.name == _VERIFIER:
        return node.name, EVENT
    return node.name, PASS if in_pipeline else EVENT


def _collapsed(node: _Node, in_pipeline: bool) -> tuple[str, str, list[_Node]]:
    """A node whose only child bears its name is one step (a pass that runs a pipeline of
    its own name, a jit call's two nested events): the child's kind, the child's children."""
    name, kind = _label(node, in_pipeline)
    children = node.children
    while len(children) == 1 and _label(children[0], in_pipeline)[0] == name:
        child_kind = _label(children[0], in_pipeline)[1]
        kind = PIPELINE if PIPELINE in (kind, child_kind) else kind
        children = children[0].children
    return name, kind, children


def _rows(nodes: list[_Node], depth: int, in_pipeline: bool = False) -> Iterator[TimedStep]:
    """Rows of ``nodes`` and their children: same-named siblings grouped, largest first."""
    groups: dict[tuple[str, str], list[tuple[float, list[_Node]]]] = {}
    for node in nodes:
        name, kind, children = _collapsed(node, in_pipeline)
        groups.setdefault((name, kind), []).append((node.seconds, children))
    ordered = sorted(groups.items(), key=lambda item: -sum(s for s, _ in item[1]))
    for (name, kind), runs in ordered:
        seconds = sum(s for s, _ in runs)
        children = [c for _, nodes_ in runs for c in nodes_]
        inner = list(_rows(children, depth + 1, in_pipeline or kind == PIPELINE))
        below = sum(r.seconds for r in inner if r.depth == depth + 1)
        yield TimedStep(depth, name, kind, len(runs), seconds, max(seconds - below, 0.0))
        yield from inner


def stage_row(stage: str, seconds: float, children: tuple[TimedStep, ...]) -> TimedStep:
    """The depth-0 row of one of JAX's steps, timed outside the profiler."""
    below = sum(r.seconds for r in children if r.depth == 1)
    return TimedStep(0, stage, STAGE, 1, seconds, max(seconds - below, 0.0))
