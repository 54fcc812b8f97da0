"""What `passes` adds to a compilation: XLA dumping every pass, then jaxinspect reading it.

For the MLP, the transformer block and a 12-layer stack of that block, in one process with the
function lowered once: compiles alternate between a plain ``Lowered.compile()`` and one with
``compilation_dump(passes=True)``'s options (each plain one a real compilation, not JAX's
in-process cache). Prints the medians, the median per-pair ratio dump / plain (XLA's own dumping
cost), and the time to read the dump and build the report (instruction counts and a line diff
for every snapshot) as a ratio to the plain compile. Goal: dump / plain <= 1.5.
Run with `make bench` (or `--pairs N`); exits 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxinspect.passes.runner import build_passes_report
from jaxinspect.pipeline.dumps import compilation_dump

SAMPLES = Path(__file__).resolve().parents[2] / "sample_programs"
PAIRS = 7
GOAL = 1.5
S = jax.ShapeDtypeStruct
F32 = jnp.float32


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, SAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _block_params() -> dict[str, Any]:
    square = ("wq", "wk", "wv", "wo")
    params = {k: S((128, 128), F32) for k in square}
    params.update(ln1=S((128,), F32), ln2=S((128,), F32))
    params.update(w1=S((128, 512), F32), w2=S((512, 128), F32))
    return params


def _lowered() -> dict[str, Any]:
    mlp, transformer = _module("mlp"), _module("transformer")
    mlp_params = {
        "w1": S((784, 256), F32),
        "b1": S((256,), F32),
        "w2": S((256, 10), F32),
        "b2": S((10,), F32),
    }

    def stack(layers: list[dict[str, Any]], x: Any) -> Any:
        for params in layers:
            x = transformer.block(params, x, num_heads=4)
        return x

    x = S((2, 64, 128), F32)
    return {
        "mlp": jax.jit(mlp.predict).lower(mlp_params, S((128, 784), F32)),
        "transformer": jax.jit(transformer.block, static_argnames="num_heads").lower(
            _block_params(), x, num_heads=4
        ),
        "transformer x12": jax.jit(stack).lower([_block_params() for _ in range(12)], x),
    }


def _pair(lowered: Any, index: int) -> tuple[float, float, float, int]:
    # Lowered.compile() caches by compiler options in the process: a pass regex never matched
    # (with no dump folder, nothing is dumped) makes each plain compilation a real one.
    unique = {"xla_dump_hlo_pass_re": f"^plain-{index}$"}
    start = time.perf_counter()
    lowered.compile(compiler_options=unique)
    plain = time.perf_counter() - start
    with compilation_dump(passes=True) as dump:
        start = time.perf_counter()
        compiled = lowered.compile(compiler_options=dump.compiler_options)
        dumped_s = time.perf_counter() - start
        start = time.perf_counter()
        dumped = dump.read(compiled)
        report = build_passes_report(_StablehloOnly(lowered.as_text()), dumped)  # type: ignore[arg-type]
        read_s = time.perf_counter() - start
    return plain, dumped_s, read_s, len(report.steps or ())


class _StablehloOnly:
    """Stands in for the stages report: the passes report reads its StableHLO stage only."""

    def __init__(self, text: str) -> None:
        self.text, self.op_counts = text, ()

    def stage(self, name: str) -> _StablehloOnly | None:
        return self if name == "stablehlo" else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    pairs = parser.parse_args().pairs
    ok = True
    print(f"{'program':<16} {'steps':>5} {'plain':>9} {'dumped':>9} {'ratio':>6}", end="")
    print(f" {'read':>9} {'ratio':>6}")
    for name, lowered in _lowered().items():
        runs = [_pair(lowered, i) for i in range(pairs)]
        plain = statistics.median(r[0] for r in runs)
        dumped = statistics.median(r[1] for r in runs)
        read = statistics.median(r[2] for r in runs)
        ratio = statistics.median(r[1] / r[0] for r in runs)
        read_ratio = statistics.median(r[2] / r[0] for r in runs)
        ok &= ratio <= GOAL
        print(
            f"{name:<16} {runs[0][3]:>5} {plain * 1e3:>7.1f}ms {dumped * 1e3:>7.1f}ms "
            f"{ratio:>6.2f} {read * 1e3:>7.1f}ms {read_ratio:>6.2f}"
        )
    print(f"goal: dumped / plain <= {GOAL} ({'met' if ok else 'missed'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
