"""The ``recompile`` report as JSON (schema: ``jaxinspect/schemas/recompile.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.recompile.cachekey import CacheKey
from jaxinspect.renderers.jsondoc import failure_to_dict, json_text
from jaxinspect.reports.recompile import CaseOutcome, FailedCase, SweepReport

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "recompile.schema.json"
SCHEMA_VERSION = 1


def render_sweep_json(report: SweepReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(sweep_to_dict(report))


def sweep_to_dict(report: SweepReport) -> dict[str, Any]:
    """The one JSON shape of a sweep; paths are stable across versions of schema 1."""
    return {
        "schema_version": SCHEMA_VERSION,
        "target": report.target,
        "composition": report.composition,
        "backend": report.backend,
        "jax_version": report.jax_version,
        "jaxlib_version": report.jaxlib_version,
        "x64": report.x64,
        "total_compiles": report.total_compiles,
        "helper_compiles": _helpers_to_list(report.helper_compiles),
        "max_compiles": report.max_compiles,
        "exceeded": report.exceeded,
        "cases": [_case_to_dict(c) for c in report.cases],
    }


def _case_to_dict(case: CaseOutcome | FailedCase) -> dict[str, Any]:
    if isinstance(case, FailedCase):
        return {"name": case.name, "source": case.source, "error": failure_to_dict(case.error)}
    return {
        "name": case.name,
        "source": case.source,
        "compiled": case.compiled,
        "events": {"traces": case.traces, "lowerings": case.lowerings, "compiles": case.compiles},
        "compile_s": case.compile_s,
        "wall_s": case.wall_s,
        "shares_executable_with": case.shares_with,
        "nearest": case.nearest,
        "changes": [
            {
                "path": c.path,
                "component": c.component,
                "before": c.before,
                "after": c.after,
                "text": str(c),
            }
            for c in case.changes
        ],
        "key": _key_to_dict(case.key),
        "helper_compiles": _helpers_to_list(case.helper_compiles),
        "error": None,
    }


def _helpers_to_list(helpers: tuple[tuple[str, int], ...]) -> list[dict[str, Any]]:
    return [{"name": name, "count": count} for name, count in helpers]


def _key_to_dict(key: CacheKey) -> dict[str, Any]:
    return {
        "args": [
            {
                "path": leaf.path,
                "shape": list(leaf.shape),
                "dtype": leaf.dtype,
                "weak_type": leaf.weak_type,
                "sharding": leaf.sharding,
            }
            for leaf in key.leaves
        ],
        "static": dict(key.static),
        "structure": key.structure,
    }
