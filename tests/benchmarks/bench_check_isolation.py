"""Reliability benchmark: ``check`` verdicts are the same for any --jobs, --shard split and order.

Writes a project whose targets misbehave the ways research code does: a module that turns on
``jax_enable_x64`` at import, one that sets ``jax_default_matmul_precision`` at import, one that
``os.chdir``s and ``sys.path.insert(0, here)``s beside a ``rich.py`` that raises, and a function
that updates the configuration while it is traced; their neighbours build constants at import
and multiply matrices. The snapshots are written once (``check --update``, manifest order,
one job), then every run of the matrix must print ``unchanged`` for every target:
``--jobs 1``, ``--jobs 2``, ``--shard 1/2`` + ``2/2``, ``--shard 1/3`` + ``2/3`` + ``3/3``,
and the manifest in reversed order with ``--jobs 1`` and ``--jobs 2``.

Run: .venv/bin/python tests/benchmarks/bench_check_isolation.py
Goal: identical verdicts in every run (0 targets differ), exit 0 everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULES = {
    "x64_at_import.py": """
import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
OFFSET = jnp.arange(4)


def f(x):
    return OFFSET + x
""",
    "precision_at_import.py": """
import jax

jax.config.update("jax_default_matmul_precision", "highest")


def f(x):
    return x @ x.T
""",
    "chdir_at_import.py": """
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)  # beside rich.py, which raises if anyone imports it
os.makedirs(os.path.join(here, "elsewhere"), exist_ok=True)
os.chdir(os.path.join(here, "elsewhere"))


def f(x):
    return x * 3
""",
    "config_in_trace.py": """
import jax


def f(x):
    jax.config.update("jax_default_matmul_precision", "bfloat16")
    return x @ x.T
""",
    "plain.py": """
import jax.numpy as jnp

SCALE = jnp.arange(4)


def scaled(x):
    return SCALE * x


def gram(x):
    return x @ x.T


def shifted(x):
    return x + 1
""",
    "rich.py": 'raise RuntimeError("a neighbour named rich.py shadowed jaxinspect\'s rich")\n',
}
#: (target, name, argument) in manifest order: mutators first, so that without isolation
#: their changes reach the neighbours compiled after them.
TARGETS = (
    ("x64_at_import.py:f", "x64", "x=f32[4]"),
    ("plain.py:scaled", "scaled", "x=f32[4]"),
    ("precision_at_import.py:f", "precision", "x=f32[4,4]"),
    ("plain.py:gram", "gram", "x=f32[4,4]"),
    ("chdir_at_import.py:f", "chdir", "x=f32[4]"),
    ("plain.py:shifted", "shifted", "x=f32[4]"),
    ("config_in_trace.py:f", "in_trace", "x=f32[4,4]"),
    ("plain.py:gram", "gram_after", "x=f32[8,4]"),
)
#: Runs of the matrix: label and the argument lists whose verdicts are merged.
MATRIX = (
    ("--jobs 1", (["--jobs", "1"],)),
    ("--jobs 2", (["--jobs", "2"],)),
    ("--shard 1/2 + 2/2", (["--shard", "1/2"], ["--shard", "2/2"])),
    ("--shard 1/3 + 2/3 + 3/3", (["--shard", "1/3"], ["--shard", "2/3"], ["--shard", "3/3"])),
    ("reversed, --jobs 1", (["--manifest", "reversed.yaml", "--jobs", "1"],)),
    ("reversed, --jobs 2", (["--manifest", "reversed.yaml", "--jobs", "2"],)),
)
SMALL_MATRIX = (MATRIX[1], MATRIX[2], MATRIX[5])


def write_project(folder: Path) -> None:
    """The modules, ``jaxinspect.yaml`` and ``reversed.yaml`` (the same targets, reversed)."""
    for name, text in MODULES.items():
        (folder / name).write_text(text.lstrip())
    rows = [f"  - target: {t}\n    name: {n}\n    args: [{a!r}]\n" for t, n, a in TARGETS]
    head = "snapshot_dir: snaps\ntargets:\n"
    (folder / "jaxinspect.yaml").write_text(head + "".join(rows))
    (folder / "reversed.yaml").write_text(head + "".join(reversed(rows)))


def check(folder: Path, *args: str) -> tuple[int, dict[str, str], str]:
    """Exit code, status by target name, and stderr of one ``check --format json`` process."""
    options = list(args)
    if "--manifest" not in options:
        options += ["--manifest", "jaxinspect.yaml"]
    at = options.index("--manifest") + 1
    options[at] = str(folder / options[at])
    # -m puts the working folder on sys.path (the console script would not): run from the
    # parent, so the project's rich.py is reached only through the path its neighbour adds.
    done = subprocess.run(
        [sys.executable, "-m", "jaxinspect", "check", "--format", "json", *options],
        cwd=folder.parent,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
        capture_output=True,
        text=True,
    )
    try:
        rows = json.loads(done.stdout)["targets"]
    except (ValueError, KeyError):
        return done.returncode, {}, done.stderr
    return done.returncode, {row["name"]: row["status"] for row in rows}, done.stderr


def update(folder: Path) -> None:
    """Write every snapshot once: manifest order, one job."""
    code, verdicts, stderr = check(folder, "--update", "--jobs", "1")
    if code != 0 or set(verdicts.values()) != {"new"}:
        raise SystemExit(f"check --update failed ({code}): {verdicts}\n{stderr}")


def run_matrix(
    folder: Path, matrix: tuple[tuple[str, tuple[list[str], ...]], ...]
) -> list[tuple[str, tuple[int, ...], dict[str, str], float]]:
    """Each run's label, exit codes, merged verdicts and wall seconds."""
    out = []
    for label, runs in matrix:
        start = time.perf_counter()
        codes, merged = [], {}
        for args in runs:
            code, verdicts, _ = check(folder, *args)
            codes.append(code)
            merged.update(verdicts)
        out.append((label, tuple(codes), merged, time.perf_counter() - start))
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "project"
        folder.mkdir()
        write_project(folder)
        update(folder)
        names = [name for _, name, _ in TARGETS]
        results = run_matrix(folder, MATRIX)
    print(f"check of {len(TARGETS)} targets (config-mutating, chdir-ing and plain)")
    reference = dict.fromkeys(names, "unchanged")
    bad = 0
    for label, codes, verdicts, wall in results:
        differ = sorted(n for n in names if verdicts.get(n) != reference[n])
        bad += len(differ) + sum(1 for c in codes if c != 0)
        shown = (
            "identical"
            if not differ
            else "DIFFER: " + ", ".join(f"{n}={verdicts.get(n)}" for n in differ)
        )
        print(f"  {label:<26} exit {','.join(map(str, codes)):<6} {shown} ({wall:.1f} s)")
    verdict = "ok" if bad == 0 else "FAILED"
    print(f"  targets differing from the --update run, or nonzero exits: {bad} (goal 0) {verdict}")
    if bad:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
