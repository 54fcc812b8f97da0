"""How well do the static rankings of `cost` agree with measured time per op?

Runs `jaxinspect cost --measure --device epyc-9654 --format json` on the transformer sample in
fresh processes and prints, as medians over the runs: Spearman's rank correlation of the
measured op times with FLOPs, bytes and the roofline time estimate (the roofline's order
depends only on the profile's ridge point), and how much of a call the measured ops cover,
against the cached call outside the profiler and under it. Run with `make bench`.
Goal: the measured ops sum to within 20 % of the cached call (raw, the profiler's slowdown
included; and scaled by the ratio of the plain to the profiled call, jaxinspect's estimate).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_programs"


def one_run(exe: str) -> dict[str, float]:
    out = subprocess.run(
        [
            exe,
            "cost",
            f"{SAMPLES / 'transformer.py'}:block",
            "--shapes",
            str(SAMPLES / "transformer.yaml"),
            "--measure",
            "--device",
            "epyc-9654",
            "--format",
            "json",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    measured = json.loads(out)["cost"]["measured"]
    return {
        **{f"spearman {k}": v for k, v in measured["rank_agreement"].items()},
        "ops / cached call": measured["total_s"] / measured["call_median_s"],
        "ops / profiled call": measured["total_s"] / measured["profiled_call_median_s"],
        "scaled ops / cached call": measured["scaled_coverage"],
        "profiler overhead": measured["profiled_call_median_s"] / measured["call_median_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    exe = str(Path(sys.executable).parent / "jaxinspect")
    results = [one_run(exe) for _ in range(runs)]
    print(f"{'cost --measure, transformer sample':<36}{'median':>8}{'min':>8}{'max':>8}")
    for key in results[0]:
        values = [r[key] for r in results if r[key] is not None]
        print(f"{key:<36}{statistics.median(values):>8.3f}{min(values):>8.3f}{max(values):>8.3f}")
    print(f"({runs} fresh processes; 20 profiled calls each; roofline on the epyc-9654 profile)")
    # The goal, on the raw trace times (scaled ones equal ops / profiled call by construction).
    raw = statistics.median(r["ops / cached call"] for r in results)
    verdict = "met" if abs(raw - 1) <= 0.2 else "not met (the profiler's overhead and the load)"
    print(f"goal: ops within 20 % of the cached call: {verdict}, median {raw:.2f}")


if __name__ == "__main__":
    main()
