"""The report's graph at scale: folding, layout and page data against XLA's own compile.

Compiles transformer_stack.py unrolled to LAYERS blocks (96 by default: ~32,000 lines of
optimized HLO) once, then times each step the report adds for its graph on that module:
parsing the text, the user-code stacks, folding and layout, the page's JSON. Prints each
step's seconds and its ratio to the compile measured in the same run.

    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/bench_report_graph.py [LAYERS]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]


def main(layers: int) -> None:
    import jax

    from jaxinspect import jaxapi
    from jaxinspect.htmlreport.graph import entry_graph
    from jaxinspect.htmlreport.graphpage import graph_section
    from jaxinspect.htmlreport.sources import user_stacks
    from jaxinspect.inputs.target import load_target
    from jaxinspect.xla.hlotext import parse_module
    from jaxinspect.xla.ownership import UserCode
    from jaxinspect.xla.sourcemap import parse_frame_table

    stack = load_target(f"{ROOT / 'sample_programs' / 'transformer_stack.py'}:stack").function
    f32 = jax.numpy.float32
    shapes: dict[str, tuple[int, ...]] = {"wq": (128, 128), "wk": (128, 128), "wv": (128, 128)}
    shapes |= {"wo": (128, 128)}
    shapes |= {"ln1": (128,), "ln2": (128,), "w1": (128, 512), "w2": (512, 128)}
    layer = {k: jax.ShapeDtypeStruct(v, f32) for k, v in shapes.items()}
    x = jax.ShapeDtypeStruct((2, 64, 128), f32)
    lowered = jax.jit(stack, static_argnums=2).trace([layer] * layers, x, 4).lower()
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - start
    steps: list[tuple[str, float]] = []

    def timed(name: str, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        out = fn()
        steps.append((name, time.perf_counter() - t0))
        return out

    module = jaxapi.optimized_hlo_module(compiled, "bench")
    text = timed("print module", lambda: jaxapi.hlo_module_text(module, metadata=True))
    hlo = timed("parse", lambda: parse_module(text))
    user = UserCode((str(ROOT / "sample_programs") + "/",))
    stacks = timed("stacks", lambda: user_stacks(hlo, parse_frame_table(text), user))
    scopes = stacks.scopes(hlo.entry.instructions)
    graph = timed("fold+layout", lambda: entry_graph(hlo, {}, {}, "flops", scopes))
    html = timed("page data", lambda: graph_section(graph))
    print(f"{layers} layers: {len(text.splitlines()):,} HLO lines, {len(graph.nodes):,} entry")
    print(f"  {len(graph.groups)} groups, {len(graph.layouts)} layouts, {len(html):,} chars")
    print(f"  compile (XLA)        {compile_s:8.2f} s   1.00")
    for name, secs in steps:
        print(f"  {name:20} {secs:8.2f} s   {secs / compile_s:.3f}")
    graph_s = sum(s for n, s in steps if n in ("stacks", "fold+layout", "page data"))
    print(f"  graph part           {graph_s:8.2f} s   {graph_s / compile_s:.3f} of compile")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 96)
