"""Benchmark `jaxinspect stages --topology v5e:2x2 --format json` against a plain script.

The reference does by hand what the command reports: describe the slice with
``jax.experimental.topologies``, place the arguments on a mesh of its chips, trace, lower and
compile for it, and read the three texts, the cost and the memory analysis. Prints the median
ratio of paired fresh-process wall times per sample. Run with `make bench`. Goal: <= 1.10.
Needs the tpu extra (libtpu).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from bench_stages import CASES, SAMPLES, paired_ratio

TOPOLOGY = "v5e:2x2"

#: The reference's start: the sample, its shapes, ``topologies``; ``DESCRIBE`` follows.
LOAD = r"""
import importlib.util, json, os, sys
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import topologies
path, name, shapes = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spec = importlib.util.spec_from_file_location("m", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
"""
DESCRIBE = r"""
devices = topologies.get_topology_desc(topology_name=sys.argv[4], platform="tpu").devices
"""
#: The reference's middle: trace, lower and compile on a mesh of ``devices``, read the texts.
COMPILE = r"""
mesh = jax.sharding.Mesh(np.array(devices, dtype=object), ("data",))
rep = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())

def tree(node):
    if isinstance(node, dict):
        return {k: tree(v) for k, v in node.items()}
    return jax.ShapeDtypeStruct(tuple(node), jnp.float32, sharding=rep)

static = shapes["static"]
traced = jax.jit(getattr(mod, name), static_argnames=tuple(static)).trace(
    **tree(shapes["args"]), **static)
lowered = traced.lower()
compiled = lowered.compile()
texts = [str(traced.jaxpr), lowered.as_text(), compiled.as_text()]
"""
REFERENCE = (
    LOAD
    + DESCRIBE
    + COMPILE
    + r"""
cost = compiled.cost_analysis()
mem = compiled.memory_analysis()
print(json.dumps({"flops": cost.get("flops"), "optimal": cost.get("optimal_seconds"),
                  "args": mem.argument_size_in_bytes, "chars": sum(map(len, texts))}))
"""
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    pairs = parser.parse_args().pairs
    if importlib.util.find_spec("libtpu") is None:
        print("bench_topology: libtpu is not installed (pip install 'jaxinspect[tpu]'); skipped")
        return
    # The chips of v5e:2x2, all in one `data` axis; arguments replicated.
    compare(TOPOLOGY, 4, REFERENCE, [TOPOLOGY], pairs)


def compare(topology: str, devices: int, reference: str, extra: list[str], pairs: int) -> None:
    """A row per sample: ``stages --topology`` against ``reference`` (argv: the sample's
    file, function, shapes as JSON, then ``extra``), median of ``pairs`` paired runs."""
    exe = str(Path(sys.executable).parent / "jaxinspect")
    print(f"{'benchmark':<40}{'jaxinspect':>12}{'reference':>12}{'ratio':>8}{'goal':>7}")
    for label, (file, name, spec, shapes) in CASES.items():
        ours = [
            exe,
            "stages",
            f"{SAMPLES / file}:{name}",
            "--shapes",
            str(SAMPLES / spec),
            "--topology",
            topology,
            "--mesh",
            f"data={devices}",
            "--format",
            "json",
        ]
        ref = [sys.executable, "-c", reference, str(SAMPLES / file), name, json.dumps(shapes)]
        ratio, o, r = paired_ratio(ours, [*ref, *extra], pairs)
        print(
            f"{f'stages {label} --topology {topology}':<40}{o:>11.3f}s{r:>11.3f}s"
            f"{ratio:>8.3f}{'1.10':>7}"
        )
    print(f"(median of {pairs} paired fresh-process runs each; nothing executes on a topology)")


if __name__ == "__main__":
    main()
