"""Benchmark `jaxinspect stages --topology h100:8 --format json` against a plain script.

The reference does by hand what the command reports: describe eight H100s with
``jax.experimental.topologies`` from the same target config (CUDA left out of JAX's platforms,
so the plugin registers without a driver), place the arguments on a mesh of them, trace, lower
and compile, and read the three texts, the CPU client's cost analysis of the optimized module
(the GPU executable has none) and the memory analysis. Prints the median ratio of paired
fresh-process wall times per sample. Run with `make bench`. Goal: <= 1.10. Needs the cuda extra.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_topology import COMPILE, LOAD, compare

from jaxinspect.topologies.gpu import missing_pieces, parse_target

TOPOLOGY = "h100:8"

DESCRIBE = r"""
jax.config.update("jax_platforms", "cpu")
devices = topologies.get_topology_desc(
    platform="cuda", topology=sys.argv[4], target_config=open(sys.argv[5]).read()).devices
"""
REFERENCE = (
    LOAD
    + DESCRIBE
    + COMPILE
    + r"""
from jax._src.lib import xla_client
module = compiled.runtime_executable().hlo_modules()[0]
cost = xla_client._xla.hlo_module_cost_analysis(jax.devices("cpu")[0].client, module)
mem = compiled.memory_analysis()
print(json.dumps({"flops": cost.get("flops"), "args": mem.argument_size_in_bytes,
                  "chars": sum(map(len, texts))}))
"""
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    pairs = parser.parse_args().pairs
    missing = missing_pieces()
    if missing is not None:
        print(f"bench_gpu: {missing}; skipped")
        return
    config = Path(__file__).parents[2] / "jaxinspect" / "gpus" / "h100_sxm.txtpb"
    plugin = parse_target(TOPOLOGY).plugin_topology
    # The eight GPUs in one `data` axis; arguments replicated.
    compare(TOPOLOGY, 8, REFERENCE, [plugin, str(config)], pairs)


if __name__ == "__main__":
    main()
