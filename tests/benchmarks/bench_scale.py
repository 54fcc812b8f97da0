"""Benchmark: each command on 12, 48 and 96 unrolled transformer blocks against a plain script.

The program is ``sample_programs/transformer_stack.py:stack`` with a ``layers:`` list of N
copies of ``transformer_stack.yaml``'s layer (the specs are written to a temporary folder).
The plain script does what a user would write by hand with ``jax.stages``: ``trace``,
``lower``, ``compile``, ``cost_analysis()``, ``memory_analysis()`` and ``as_text()``.

For each size, fresh processes run in rounds, the reference(s) and each command alternating
(the order reversed every other round, so a change of load on a shared machine weighs on both
sides alike). Printed per command and size: the median wall seconds of each side, the median
of the per-pair ratios, and the ratio of peak resident memory (``ru_maxrss`` of each child,
from ``os.wait4``). Then, per command, its growth from 48 to 96 layers against its
reference's.

``report`` also runs the program: its first call and timed cached calls, on seeded random
inputs, which the plain script never does. So ``report`` has a second reference measured in
the same rounds, labelled ``plain+execution``: the plain script, then the same execution the
report does (inputs built as the report builds them, ``numpy.random.default_rng(0)``'s
``standard_normal`` per leaf put on the device, one first call, then as many cached calls as
the report's automatic count makes, each waited on). The ratio against it is the report's own
overhead, on which its goal is judged; the ratio against the plain script alone is printed
too, labelled as context.

Goals: ``cost`` and ``memory`` <= 1.15x, ``stages --no-execute`` <= 1.05x the plain script;
``report`` <= 1.35x plain+execution; at every size. From 48 to 96 layers no command grows
faster than its reference; peak RSS <= 1.5x.

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

# The plain script, then what the report runs (stages/runner.py's _time_execution): inputs
# drawn as inputs/arrays.py draws them, a first call, then cached calls, each waited on, as
# many as pipeline/execute.py's automatic count makes: until 0.25 s is spent, at least 5 (3
# when 5 would take over 5 s), at most 1000 (pipeline/timing/calls.py's CallCount).
PLAIN_EXECUTION = (
    PLAIN
    + r"""
import statistics, time
import numpy as np
rng = np.random.default_rng(0)
concrete = lambda s: jax.device_put(np.asarray(rng.standard_normal(s.shape)).astype(s.dtype))
args = jax.tree.map(concrete, (layers, f32(2, 64, 128)))
start = time.perf_counter()
compiled(*args).block_until_ready()
estimate, times, loop = time.perf_counter() - start, [], time.perf_counter()
while (len(times) < (5 if estimate * 5 <= 5.0 else 3)
       or (time.perf_counter() - loop < 0.25 and len(times) < 1000)):
    start = time.perf_counter()
    compiled(*args).block_until_ready()
    times.append(time.perf_counter() - start)
    estimate = statistics.median(times)
print(len(times), "cached calls", file=sys.stderr)
"""
)

#: Command -> (arguments after the target and spec, goal as a ratio to its reference).
COMMANDS = {
    "stages": (["stages", "--no-execute", "-f", "json"], 1.05),
    "cost": (["cost", "-f", "json"], 1.15),
    "memory": (["memory", "-f", "json"], 1.15),
    "report": (["report", "-o", "{out}/report.html"], 1.35),
}
#: Commands that run the program, judged against plain+execution.
EXECUTING = {"report"}
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


#: The references: the plain script, and the plain script followed by the report's execution.
PLAIN_REF, EXECUTION_REF = "plain", "plain+execution"

#: One round of one command: the command's sample and each reference's, by name.
Round = dict[str, Sample]


def measure(
    layers: int, runs: int, tmp: Path, warm: bool, names: list[str]
) -> dict[str, list[Round]]:
    """Per command, ``runs`` rounds (its references, the command) at ``layers`` blocks.

    ``warm``: first run both sides once, uncounted, to fill the OS file cache.
    """
    spec = tmp / f"stack{layers}.yaml"
    spec.write_text(spec_text(layers))
    program = [str(SAMPLES / "transformer_stack.py"), str(layers)]
    references = {
        PLAIN_REF: [sys.executable, "-c", PLAIN, *program],
        EXECUTION_REF: [sys.executable, "-c", PLAIN_EXECUTION, *program],
    }
    log = tmp / "stderr.txt"
    commands = {}
    for name, (args, _) in ((n, COMMANDS[n]) for n in names):
        ours = [sys.executable, "-m", "jaxinspect", args[0], TARGET, "-s", str(spec)]
        commands[name] = ours + [a.format(out=tmp) for a in args[1:]]
    if warm:
        run(references[PLAIN_REF], log), run(commands[names[0]], log)
    rounds: dict[str, list[Round]] = {name: [] for name in names}
    for r in range(runs):
        for name in commands:
            refs = [PLAIN_REF, EXECUTION_REF] if name in EXECUTING else [PLAIN_REF]
            order = [*refs, name] if r % 2 else [name, *refs]
            samples = {
                key: run(commands[key] if key == name else references[key], log) for key in order
            }
            rounds[name].append(samples)
            seen = ", ".join(f"{key} {samples[key].seconds:.2f} s" for key in refs)
            mine = samples[name].seconds
            print(
                f"  {layers:>3} layers, run {r + 1}: {name:<7} {mine:7.2f} s, {seen}",
                file=sys.stderr,
                flush=True,
            )
    return rounds


def reference_of(name: str) -> str:
    """The reference a command's goal is judged against."""
    return EXECUTION_REF if name in EXECUTING else PLAIN_REF


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="12,48,96", help="sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="rounds per command and size")
    parser.add_argument(
        "--commands", default=",".join(COMMANDS), help="commands to measure, comma-separated"
    )
    args = parser.parse_args()
    sizes = [int(n) for n in args.layers.split(",")]
    names = [n for n in args.commands.split(",") if n]
    unknown = sorted(set(names) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown commands {unknown}; known: {', '.join(COMMANDS)}")
    results: dict[int, dict[str, list[Round]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for layers in sizes:
            results[layers] = measure(
                layers, args.runs, Path(folder), warm=layers == sizes[0], names=names
            )
    print(
        f"{'layers':>6} {'command':<8}{'against':<17}{'ref s':>7}{'command s':>11}{'ratio':>7}"
        f"{'goal':>6}{'CPU ratio':>11}{'RSS ratio':>11}  verdict"
    )
    medians: dict[tuple[int, str, str], tuple[float, float]] = {}
    for layers, by_command in results.items():
        for name, rounds in by_command.items():
            for ref in (PLAIN_REF, EXECUTION_REF):
                if ref not in rounds[0]:
                    continue
                judged = ref == reference_of(name)
                theirs = statistics.median(r[ref].seconds for r in rounds)
                ours = statistics.median(r[name].seconds for r in rounds)
                ratio = statistics.median(r[name].seconds / r[ref].seconds for r in rounds)
                rss = statistics.median(r[name].rss / r[ref].rss for r in rounds)
                cpu = statistics.median(r[name].cpu / r[ref].cpu for r in rounds)
                medians[layers, name, ref] = (theirs, ours)
                goal = COMMANDS[name][1]
                verdict = "ok" if ratio <= goal and rss <= RSS_GOAL else "OVER"
                print(
                    f"{layers:>6} {name:<8}{ref:<17}{theirs:>7.2f}{ours:>11.2f}{ratio:>7.2f}"
                    + (f"{goal:>6.2f}" if judged else f"{'-':>6}")
                    + f"{cpu:>11.2f}{rss:>11.2f}  "
                    + (verdict if judged else "(context: includes running the program)")
                )
    if 48 in results and 96 in results:
        print(
            "growth from 48 to 96 layers (command / its reference's; goal: command <= reference):"
        )
        for name in names:
            for ref in (PLAIN_REF, EXECUTION_REF):
                if (48, name, ref) not in medians:
                    continue
                theirs = medians[96, name, ref][0] / medians[48, name, ref][0]
                ours = medians[96, name, ref][1] / medians[48, name, ref][1]
                verdict = "ok" if ours <= theirs else "OVER"
                if ref != reference_of(name):
                    verdict = "(context)"
                print(f"  {name:<8} {ours:5.2f}x, {ref} {theirs:5.2f}x  {verdict}")
    print(
        f"(median of {args.runs} rounds of fresh processes per command and size; the verdict "
        f"judges wall seconds against the command's reference ({EXECUTION_REF} for "
        f"{', '.join(sorted(EXECUTING))}, the plain script for the others); RSS goal <= "
        f"{RSS_GOAL}x)"
    )


if __name__ == "__main__":
    main()
