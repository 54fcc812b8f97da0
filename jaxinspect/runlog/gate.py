"""``run --fail-on recompiles>N``: the ``--max-compiles`` gate in the grammar of ``check``.

The rule is read by ``snapshot/thresholds.py``'s parser (one grammar for every ``--fail-on``)
with ``recompiles`` its only metric: a function's compilations after its first. So
``recompiles>N`` is ``--max-compiles N+1``, and ``recompiles>=N`` is ``--max-compiles N``.
"""

from __future__ import annotations

from jaxinspect.errors import UsageError
from jaxinspect.runlog.model import CompileLog
from jaxinspect.snapshot.thresholds import parse_rules

#: The one metric ``run --fail-on`` knows.
RECOMPILES = "recompiles"


def compile_limit(fail_on: str) -> int:
    """The most compilations per function that ``fail_on`` allows.

    Raises:
        UsageError: The value is not one or more ``recompiles>N`` / ``recompiles>=N`` rules
            with N a whole number.
    """
    limits = []
    for rule in parse_rules(fail_on, metrics=(RECOMPILES,)):
        if rule.kind != "metric":
            raise UsageError(
                f"--fail-on {rule.text!r}: run gates on recompilations only",
                hint="e.g. --fail-on 'recompiles>2' (any, text and new-op rules are check's)",
            )
        whole = rule.value.is_integer() and rule.value >= 0
        if rule.op not in (">", ">=") or rule.relative or not whole:
            raise UsageError(
                f"--fail-on {rule.text!r}: expected recompiles>N or recompiles>=N, N a whole "
                "number of recompilations"
            )
        allowed = int(rule.value) if rule.op == ">" else int(rule.value) - 1
        limits.append(allowed + 1)  # the first compilation is not a recompilation
    return min(limits)


def over_limit_lines(log: CompileLog, gate: str) -> list[str]:
    """One line per function over the limit: its name, its count and why it recompiled.

    Args:
        log: The run's log (``log.max_compiles`` set).
        gate: How the user wrote the gate, for the message (``--fail-on 'recompiles>1'``).
    """
    lines = []
    for summary in log.over_limit:
        reasons = dict.fromkeys(
            "; ".join(str(change) for change in c.changes) or c.explanation or "reason unknown"
            for c in log.recompilations
            if (c.function, c.defined_at) == (summary.function, summary.defined_at)
        )
        recompiles = summary.compiles - 1
        lines.append(
            f"{gate}: {summary.function} recompiled {recompiles} "
            f"time{'s' if recompiles != 1 else ''} ({summary.compiles} compilations): "
            + " | ".join(reasons)
        )
    return lines
