"""The compile log as JSON (schema: ``jaxinspect/schemas/runlog.schema.json``)."""

from __future__ import annotations

from typing import Any

from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.runlog.model import IN_MEMORY_HITS_UNAVAILABLE, SCHEMA_VERSION, CompileLog

#: The schema this document follows (bump ``SCHEMA_VERSION`` with it).
SCHEMA = "runlog.schema.json"


def render_log_json(log: CompileLog) -> str:
    """Indented JSON with sorted keys."""
    return json_text(log_to_dict(log))


def log_to_dict(log: CompileLog) -> dict[str, Any]:
    """The one JSON shape of a compile log."""
    return {
        "schema_version": SCHEMA_VERSION,
        "program": log.program,
        "exit_code": log.exit_code,
        "interrupted": log.interrupted,
        "max_compiles": log.max_compiles,
        "exceeded": bool(log.over_limit),
        "total_compiles": len(log.compilations),
        "total_recompiles": len(log.recompilations),
        "total_compile_s": log.total_compile_s,
        "in_memory_cache_hits": None,
        "in_memory_cache_hits_unavailable": IN_MEMORY_HITS_UNAVAILABLE,
        "persistent_cache": {
            "hits": log.persistent_cache.get("hit", 0),
            "misses": log.persistent_cache.get("miss", 0),
        },
        "functions": [
            {
                "function": f.function,
                "defined_at": f.defined_at,
                "compiles": f.compiles,
                "compile_s": f.compile_s,
                "persistent_hits": f.persistent_hits,
            }
            for f in log.functions
        ],
        "compilations": [c.to_dict() for c in log.compilations],
    }
