"""Benchmark: each command on 12, 48 and 96 unrolled transformer blocks against a plain script.

The program is ``sample_programs/transformer_stack.py:stack`` with a ``layers:`` list of N
copies of ``transformer_stack.yaml``'s layer (the specs are written to a temporary folder).
The plain script does what a user would write by hand with ``jax.stages``: ``trace``,
``lower``, ``compile``, ``cost_analysis()``, ``memory_analysis()`` and ``as_text()``.

For each size, fresh processes run in rounds, the plain script and each command alternating
(the order reversed every other round, so a change of load on a shared machine weighs on both
sides alike). Printed per command and size: the median wall seconds of each side, the median
of the per-pair ratios, and the ratio of peak resident memory (``ru_maxrss`` of each child,
from ``os.wait4``). Then, per command, its growth from 48 to 96 layers against the plain
script's.

Goals: ``cost`` and ``memory`` <= 1.15x, ``report`` <= 1.35x, ``stages --no-execute`` <=
1.05x the plain script at every size; from 48 to 96 layers no command grows faster than the
plain script; peak RSS <= 1.5x.

Also printed: the median ratio of CPU seconds (user + system, all threads), steadier than
wall seconds when other work loads the machine.

Run: .venv/bin/python tests/benchmarks/bench_scale.py [--layers 12,48,96] [--runs 3]
[--commands stages,report]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_programs"
TARGET = f"{SAMPLES / 'transformer_stack.py'}:stack"

# What a user would hand-write to get the same facts from JAX (argv: path, layers).
PLAIN = r"""
import importlib.util, sys
import jax, jax.numpy as jnp
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
f32 = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.float32)
square = ("wq", "wk", "wv", "wo")
layer = {**{k: f32(128, 128) for k in square}, "ln1": f32(128), "ln2": f32(128),
         "w1": f32(128, 512), "w2": f32(512, 128)}
layers = [dict(layer) for _ in range(int(sys.argv[2]))]
traced = jax.jit(mod.stack, static_argnames=("num_heads",)).trace(layers, f32(2, 64, 128), 4)
lowered = traced.lower()
compiled = lowered.compile()
cost = compiled.cost_analysis()
memory = compiled.memory_analysis()
texts = [str(traced.jaxpr), lowered.as_text(), compiled.as_text()]
print(cost.get("flops"), memory.temp_size_in_bytes, sum(map(len, texts)))
"""

#: Command -> (arguments after the target and spec, goal as a ratio to the plain script).
COMMANDS = {
    "stages": (["stages", "--no-execute", "-f", "json"], 1.05),
    "cost": (["cost", "-f", "json"], 1.15),
    "memory": (["memory", "-f", "json"], 1.15),
    "report": (["report", "-o", "{out}/report.html"], 1.35),
}
RSS_GOAL = 1.5

# Measure an installed tool as users run it: with bytecode caching on.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Sample:
    """Wall seconds and peak resident bytes of one process."""

    seconds: float
    rss: int
    #: User + system CPU seconds of the process (all its threads): steadier than wall seconds
    #: on a loaded machine.
    cpu: float = 0.0


def spec_text(layers: int) -> str:
    """``transformer_stack.yaml`` with ``layers`` copies of its layer."""
    lines = (SAMPLES / "transformer_stack.yaml").read_text().splitlines()
    out = [f"# {layers} transformer blocks (bench_scale.py)"]
    for line in lines[1:]:
        if line.strip() == "- *layer":
            continue
        out.append(line)
        if line.strip().startswith("- &layer"):
            out += ["    - *layer"] * (layers - 1)
    return "\n".join(out) + "\n"


def run(command: list[str], log: Path) -> Sample:
    """Run ``command`` to completion; its wall time and its own peak RSS (not the tree's max)."""
    with log.open("wb") as err:
        start = perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=ENV)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}):\n{log.read_text()}")
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return Sample(seconds, usage.ru_maxrss * scale, usage.ru_utime + usage.ru_stime)


def measure(
    layers: int, runs: int, tmp: Path, warm: bool, names: list[str]
) -> dict[str, list[tuple[Sample, Sample]]]:
    """Per command, ``runs`` pairs (plain script, command) at ``layers`` blocks.

    ``warm``: first run both sides once, uncounted, to fill the OS file cache.
    """
    spec = tmp / f"stack{layers}.yaml"
    spec.write_text(spec_text(layers))
    plain = [sys.executable, "-c", PLAIN, str(SAMPLES / "transformer_stack.py"), str(layers)]
    log = tmp / "stderr.txt"
    commands = {}
    for name, (args, _) in ((n, COMMANDS[n]) for n in names):
        ours = [sys.executable, "-m", "jaxinspect", args[0], TARGET, "-s", str(spec)]
        commands[name] = ours + [a.format(out=tmp) for a in args[1:]]
    if warm:
        run(plain, log), run(commands[names[0]], log)
    pairs: dict[str, list[tuple[Sample, Sample]]] = {name: [] for name in names}
    for r in range(runs):
        for name, ours in commands.items():
            if r % 2:
                theirs, mine = run(plain, log), run(ours, log)
            else:
                mine, theirs = run(ours, log), run(plain, log)
            pairs[name].append((theirs, mine))
            print(
                f"  {layers:>3} layers, run {r + 1}: {name:<7} {mine.seconds:7.2f} s, "
                f"plain {theirs.seconds:7.2f} s",
                file=sys.stderr,
                flush=True,
            )
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="12,48,96", help="sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="pairs per command and size")
    parser.add_argument(
        "--commands", default=",".join(COMMANDS), help="commands to measure, comma-separated"
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.layers.split(",")]
    names = [n for n in args.commands.split(",") if n]
    unknown = sorted(set(names) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown commands {unknown}; known: {', '.join(COMMANDS)}")
    results: dict[int, dict[str, list[tuple[Sample, Sample]]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for layers in sizes:
            results[layers] = measure(
                layers, args.runs, Path(folder), warm=layers == sizes[0], names=names
            )
    print(
        f"{'layers':>6} {'command':<8}{'plain s':>9}{'command s':>11}{'ratio':>7}{'goal':>6}"
        f"{'CPU ratio':>11}{'RSS ratio':>11}  verdict"
    )
    medians: dict[tuple[int, str], tuple[float, float]] = {}
    for layers, by_command in results.items():
        for name, pairs in by_command.items():
            goal = COMMANDS[name][1]
            plain = statistics.median(p.seconds for p, _ in pairs)
            ours = statistics.median(c.seconds for _, c in pairs)
            ratio = statistics.median(c.seconds / p.seconds for p, c in pairs)
            rss = statistics.median(c.rss / p.rss for p, c in pairs)
            cpu = statistics.median(c.cpu / p.cpu for p, c in pairs)
            medians[layers, name] = (plain, ours)
            verdict = "ok" if ratio <= goal and rss <= RSS_GOAL else "OVER"
            print(
                f"{layers:>6} {name:<8}{plain:>9.2f}{ours:>11.2f}{ratio:>7.2f}{goal:>6.2f}"
                f"{cpu:>11.2f}{rss:>11.2f}  {verdict}"
            )
    if 48 in results and 96 in results:
        print("growth from 48 to 96 layers (command / plain script's; goal: command <= plain):")
        for name in names:
            plain = medians[96, name][0] / medians[48, name][0]
            ours = medians[96, name][1] / medians[48, name][1]
            verdict = "ok" if ours <= plain else "OVER"
            print(f"  {name:<8} {ours:5.2f}x, plain script {plain:5.2f}x  {verdict}")
    print(
        f"(median of {args.runs} pairs of fresh processes per command and size; "
        f"RSS goal <= {RSS_GOAL}x)"
    )


if __name__ == "__main__":
    main()
