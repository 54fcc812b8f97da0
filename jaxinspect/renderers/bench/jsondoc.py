"""The ``bench`` report as one JSON document (schema: ``jaxinspect/schemas/bench.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.renderers.jsondoc import failure_to_dict, json_text
from jaxinspect.renderers.stages.jsondoc import inputs_to_dict
from jaxinspect.reports.bench import (
    BenchReport,
    BenchResult,
    CachedStats,
    ColdRound,
    PersistentCacheReport,
    PhaseStats,
    SpecFailure,
    SpecOutcome,
)
from jaxinspect.reports.bench_gate import GateVerdict

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "bench.schema.json"
SCHEMA_VERSION = 1


def render_bench_json(report: BenchReport, verdict: GateVerdict | None = None) -> str:
    """Indented JSON with sorted keys; with a latency gate's verdict under ``gate``."""
    document = bench_to_dict(report)
    if verdict is not None:
        document["gate"] = gate_to_dict(verdict)
    return json_text(document)


def gate_to_dict(verdict: GateVerdict) -> dict[str, Any]:
    """``gate.failed``, ``gate.rules[]`` (ratio, bounds, regressed), ``gate.environment_notes``."""
    return {
        "baseline": verdict.baseline,
        "confidence": verdict.confidence,
        "failed": verdict.failed,
        "strict_environment": verdict.strict_environment,
        "environment_notes": list(verdict.environment_notes),
        "rules": [
            {
                "rule": o.rule.text,
                "metric": o.rule.metric,
                "threshold": o.rule.threshold,
                "ratio": o.ratio,
                "low": o.low,
                "high": o.high,
                "regressed": o.regressed,
                "samples": o.samples,
                "baseline_samples": o.baseline_samples,
                "method": o.method,
            }
            for o in verdict.outcomes
        ],
    }


def bench_to_dict(report: BenchReport) -> dict[str, Any]:
    """Stable paths: ``bench.cold.<phase>.*``, ``bench.cached.*``, ``bench.pipelined.*``..."""
    env = report.environment
    settings = report.settings
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "bench",
        "target": report.target,
        "environment": None
        if env is None
        else {
            "backend": env.backend,
            "device": env.device,
            "device_kind": env.device_kind,
            "jax_version": env.jax_version,
            "jaxlib_version": env.jaxlib_version,
            "python_version": env.python_version,
            "platform": env.platform,
            "cpu_count": env.cpu_count,
            "x64": env.x64,
        },
        "settings": {
            "cold_runs": settings.cold_runs,
            "runs": settings.runs,
            "time_budget_s": settings.time_budget_s,
            "seed": settings.seed,
            "max_input_bytes": settings.max_input_bytes,
            "compilation_cache": settings.compilation_cache,
        },
        "bench": _outcome(report.result),
        "compare": [_outcome(r) for r in report.compare],
        "notes": list(report.notes),
        "unavailable": dict(report.unavailable),
    }


def _outcome(outcome: SpecOutcome) -> dict[str, Any]:
    """One spec's measurements, or ``{"spec", "error"}`` for a spec that failed."""
    if isinstance(outcome, SpecFailure):
        return {"spec": outcome.spec, "error": failure_to_dict(outcome.failure)}
    return _result(outcome)


def _result(result: BenchResult) -> dict[str, Any]:
    """One spec's measurements."""
    pipelined = result.pipelined
    dispatch = result.dispatch
    return {
        "spec": result.spec,
        "input_bytes": result.input_bytes,
        "donated": list(result.donated),
        "cold": _round_phases(result.cold),
        "cold_processes": _round_processes(result.cold),
        "cached": _cached(result.cached),
        "pipelined": {
            "per_call_s": pipelined.per_call_s,
            "calls": pipelined.calls,
            "rounds": pipelined.rounds,
            "round_per_call_s": list(pipelined.round_per_call_s),
        },
        "dispatch": {
            "tiny_call_s": dispatch.tiny_call_s,
            "tiny_dispatch_s": dispatch.tiny_dispatch_s,
            "count": dispatch.count,
        },
        "persistent_cache": _persistent(result.persistent_cache),
        "inputs": None if result.inputs is None else inputs_to_dict(result.inputs),
        "data_dependent_loops": result.data_dependent_loops,
        "caveat": result.caveat,
    }


def _phase(stats: PhaseStats) -> dict[str, Any]:
    return {
        "min_s": stats.min_s,
        "median_s": stats.median_s,
        "max_s": stats.max_s,
        "samples_s": list(stats.samples_s),
    }


def _round_phases(cold: ColdRound) -> dict[str, Any]:
    return {name: _phase(stats) for name, stats in cold.phases}


def _round_processes(cold: ColdRound) -> dict[str, Any]:
    return {
        "cache": cold.cache,
        "count": len(cold.samples),
        "total_s": [s.process_total_s for s in cold.samples],
        "cache_requests": [s.cache_requests for s in cold.samples],
        "cache_hits": [s.cache_hits for s in cold.samples],
    }


def _cached(cached: CachedStats) -> dict[str, Any]:
    return {
        "min_s": cached.min_s,
        "median_s": cached.median_s,
        "mean_s": cached.mean_s,
        "p90_s": cached.p90_s,
        "p99_s": cached.p99_s,
        "max_s": cached.max_s,
        "stdev_s": cached.stdev_s,
        "count": cached.count,
        "warmup": cached.warmup,
        "dispatch_median_s": cached.dispatch_median_s,
        "spread": cached.spread,
        "noisy": cached.noisy,
        "noisy_reason": cached.noisy_reason,
        "histogram": {
            "edges_s": list(cached.histogram.edges_s),
            "counts": list(cached.histogram.counts),
        },
    }


def _persistent(cache: PersistentCacheReport | None) -> dict[str, Any] | None:
    if cache is None:
        return None
    return {
        "directory": cache.directory,
        "min_compile_time_secs": cache.min_compile_time_secs,
        "min_entry_size_bytes": cache.min_entry_size_bytes,
        "entries_written": cache.entries_written,
        "entry_bytes": cache.entry_bytes,
        "already_populated": cache.already_populated,
        "populated": _round_phases(cache.populated),
        "populated_processes": _round_processes(cache.populated),
        "saved_s": dict(cache.saved_s),
        "unexpected_misses": list(cache.unexpected_misses),
        "all_hits": not cache.unexpected_misses,
    }
