"""Cold samples: spawn fresh Python processes, collect their phases, summarize per phase."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jaxinspect
from jaxinspect.bench.children import run_child
from jaxinspect.bench.coldchild import MARKER
from jaxinspect.bench.jobs import SpecSource, make_job
from jaxinspect.bench.report import COLD_PHASES, ColdRound, ColdSample
from jaxinspect.bench.stats import phase_stats
from jaxinspect.errors import (
    JaxInspectError,
    SpecError,
    StageError,
    TargetError,
    UsageError,
)
from jaxinspect.process.hashseed import hash_seed

_ERRORS: dict[str, type[UsageError]] = {
    "UsageError": UsageError,
    "TargetError": TargetError,
    "SpecError": SpecError,
}


@dataclass(frozen=True, slots=True)
class ColdConfig:
    """What every cold process of one spec is asked to do."""

    target: str
    source: SpecSource
    backend: str | None
    seed: int
    max_input_bytes: int
    #: Whether a failing process adds its Python traceback to the error (``--debug``).
    debug: bool = False


def run_cold_round(
    config: ColdConfig,
    runs: int,
    cache: str,
    cache_dirs: Callable[[int], str | None],
    on_sample: Callable[[], None],
) -> ColdRound:
    """Run ``runs`` fresh processes, the i-th with persistent cache directory ``cache_dirs(i)``.

    Raises:
        JaxInspectError: A process failed (the same error type it raised, or an internal one).
    """
    samples = []
    for i in range(runs):
        samples.append(run_cold_sample(config, cache_dirs(i)))
        on_sample()
    return summarize_round(cache, tuple(samples))


def summarize_round(cache: str, samples: tuple[ColdSample, ...]) -> ColdRound:
    """Min, median and max of each phase over the samples."""
    phases = tuple(
        (name, phase_stats([dict(s.phases)[name] for s in samples])) for name in COLD_PHASES
    )
    return ColdRound(cache=cache, samples=samples, phases=phases)


def run_cold_sample(config: ColdConfig, cache_dir: str | None) -> ColdSample:
    """One fresh ``python -m jaxinspect.bench.coldchild`` process.

    Raises:
        JaxInspectError: The process failed.
    """
    env = dict(os.environ)
    # The child must import this very jaxinspect, installed or not.
    package_root = str(Path(jaxinspect.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONHASHSEED"] = hash_seed()  # the same traced program in every cold process
    start = time.perf_counter()
    job = make_job(
        config.target,
        config.source,
        backend=config.backend,
        seed=config.seed,
        max_input_bytes=config.max_input_bytes,
        cache_dir=cache_dir,
        spawn_wall=time.time(),
        debug=config.debug,
    )
    # Registered while it runs, so that SIGTERM or --timeout stops it with this process.
    done = run_child([sys.executable, "-m", "jaxinspect.bench.coldchild", json.dumps(job)], env)
    total = time.perf_counter() - start
    result = parse_result(done.stdout, done.stderr, done.returncode)
    return ColdSample(
        phases=tuple((name, float(result["phases"][name])) for name in COLD_PHASES),
        process_total_s=total,
        cache_requests=int(result["cache"]["requests"]),
        cache_hits=int(result["cache"]["hits"]),
    )


def parse_result(stdout: str, stderr: str, returncode: int) -> dict[str, Any]:
    """The result line of a cold-run process, re-raising the error it reported.

    Raises:
        JaxInspectError: The process reported an error, or printed no result line.
    """
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        raise JaxInspectError(
            f"a cold-run process exited with status {returncode} without a result:\n{tail}"
        )
    result: dict[str, Any] = json.loads(lines[-1][len(MARKER) :])
    error = result.get("error")
    if error is None:
        return result
    message = f"in a fresh process: {error['message']}"
    if error["type"] == "StageError":
        raise StageError(error["stage"] or "execute", message, hint=error["hint"])
    if error["type"] in _ERRORS:
        raise _ERRORS[error["type"]](message, hint=error["hint"])
    raise JaxInspectError(f"a cold-run process failed: {error['type']}: {error['message']}")
