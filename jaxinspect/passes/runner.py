"""The ``passes`` use case: XLA's module after each pass, read off one compilation's dump.

``run_passes`` compiles once with pass snapshots dumped; ``build_passes_report`` turns a
dump that is already read into the report (the HTML report calls it with the dump it shares
with the memory report); ``find_step`` and ``step_diff`` serve ``--diff PASS``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from jaxinspect.errors import UsageError
from jaxinspect.passes.report import (
    INPUT_PIPELINE,
    INPUT_STEP,
    OUTPUT_PIPELINE,
    OUTPUT_STEP,
    PassesReport,
    PassStep,
    PassTotals,
)
from jaxinspect.suggest import did_you_mean
from jaxinspect.textdiff.linediff import diff_lines, unified_diff
from jaxinspect.xla.hlotext import count_instructions

if TYPE_CHECKING:
    from jaxinspect.base.inspection import InspectionReport
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.inputs.target import LoadedTarget
    from jaxinspect.pipeline.dumps import DumpedModule
    from jaxinspect.stages.runner import InspectOptions


def run_passes(loaded: LoadedTarget, spec: Spec, options: InspectOptions) -> PassesReport:
    """Trace, lower and compile ``loaded`` once, dumping the module after every XLA pass.

    ``options.sections`` and ``execute`` are overridden: nothing runs, nothing else is
    analysed.

    Raises:
        SpecError: The spec does not fit the function.
        UsageError: The backend is unavailable.
        StageError: The function failed in a stage.
    """
    from jaxinspect.pipeline.dumps import compilation_dump
    from jaxinspect.stages.runner import run_inspection

    with compilation_dump(passes=True) as dump:
        dumped_options = replace(
            options, sections=("hlo",), execute=False, compiler_options=dump.compiler_options
        )
        source, artifacts = run_inspection(loaded, spec, dumped_options)
        dumped = dump.read(artifacts.compiled)
    return build_passes_report(source, dumped)


def build_passes_report(source: InspectionReport, dumped: DumpedModule) -> PassesReport:
    """The ``passes`` report of a compilation whose dump is already read.

    Args:
        source: The stages report of the same run (target, backend, the StableHLO).
        dumped: What the compilation dumped, with pass snapshots
            (``compilation_dump(passes=True)``).
    """
    reasons: list[tuple[str, str]] = []
    stablehlo = source.stage("stablehlo")
    snapshots = _snapshots(dumped, reasons)
    steps: list[PassStep] = []
    previous = "" if stablehlo is None else stablehlo.text
    ops = None if stablehlo is None else sum(count for _, count in stablehlo.op_counts)
    for pipeline, name, sequence, text in snapshots:
        index = len(steps)
        diff = diff_lines(previous, text)
        # Most snapshots repeat the one before (a pipeline's start): count only what changed.
        same = not diff.changes and index > 0
        after = ops if same else _instructions(text, f"passes[{index}].ops_after", reasons)
        added = sum(len(change.added) for change in diff.changes)
        removed = sum(len(change.removed) for change in diff.changes)
        steps.append(
            PassStep(
                index,
                pipeline,
                name,
                bool(diff.changes),
                ops,
                after,
                added,
                removed,
                sequence,
                text,
            )
        )
        previous, ops = text, after
    if stablehlo is None:
        reasons.append(("passes[0].ops_before", "the run has no StableHLO stage"))
    return PassesReport(
        source=source,
        module=dumped.name,
        steps=tuple(steps) if steps else None,
        totals=_totals(steps),
        unavailable=tuple(reasons),
    )


def _snapshots(
    dumped: DumpedModule, reasons: list[tuple[str, str]]
) -> list[tuple[str, str, int | None, str]]:
    """(pipeline, name, XLA's sequence, text): entering XLA, each pass, the scheduled module."""
    if dumped.passes is None or dumped.before_optimizations is None:
        missing = "passes" if dumped.passes is None else "before_optimizations"
        reasons.append(("passes", dumped.reason(missing) or "XLA wrote no pass snapshots"))
        return []
    out: list[tuple[str, str, int | None, str]] = [
        (INPUT_PIPELINE, INPUT_STEP, None, dumped.before_optimizations)
    ]
    out += [(s.pipeline, s.after, s.sequence, s.text) for s in dumped.passes]
    if dumped.after_optimizations is not None:
        out.append((OUTPUT_PIPELINE, OUTPUT_STEP, None, dumped.after_optimizations))
    else:
        reasons.append(("passes.output", dumped.reason("after_optimizations") or "not dumped"))
    return out


def _instructions(text: str, path: str, reasons: list[tuple[str, str]]) -> int | None:
    """Instructions in every computation of a printed module (fused computations included)."""
    try:
        return count_instructions(text)
    except ValueError as error:  # an XLA printing jaxinspect's parser does not know
        reasons.append((path, f"the module text did not parse: {error}"))
        return None


def _totals(steps: list[PassStep]) -> PassTotals:
    if not steps:
        return PassTotals(0, 0, None, None, None, 0, 0)
    passes = steps[1:]
    return PassTotals(
        steps=len(steps),
        changed=sum(step.changed for step in steps),
        stablehlo_ops=steps[0].ops_before,
        ops_entering=steps[0].ops_after,
        ops_scheduled=steps[-1].ops_after,
        lines_added=sum(step.lines_added for step in passes),
        lines_removed=sum(step.lines_removed for step in passes),
    )


def find_step(report: PassesReport, key: str) -> PassStep:
    """The step ``--diff KEY`` names: an index, a pass name, or ``pipeline/name``.

    A name several steps share picks the one of them that changed the module.

    Raises:
        UsageError: No step, or more than one, matches ``key``.
    """
    steps = report.steps or ()
    if not steps:
        raise UsageError(f"--diff {key}: there are no pass snapshots ({report.reason('passes')})")
    if key.lstrip("-").isdigit():
        index = int(key)
        if not 0 <= index < len(steps):
            raise UsageError(f"--diff {key}: no step #{index}; steps are #0 to #{len(steps) - 1}")
        return steps[index]
    matches = [s for s in steps if key in (s.name, f"{s.pipeline}/{s.name}")]
    if len(matches) > 1:
        matches = [s for s in matches if s.changed] or matches
    if len(matches) == 1:
        return matches[0]
    if not matches:
        names = dict.fromkeys(n for s in steps for n in (s.name, f"{s.pipeline}/{s.name}"))
        raise UsageError(
            f"--diff {key}: no pass of that name{did_you_mean(key, names)}",
            hint="`jaxinspect passes` lists them; --diff also takes a step's number.",
        )
    listed = ", ".join(s.label for s in matches[:8]) + (", …" if len(matches) > 8 else "")
    raise UsageError(
        f"--diff {key}: {len(matches)} steps changed the module under that name ({listed})",
        hint="Give the step's number, e.g. --diff " + str(matches[0].index),
    )


def step_diff(report: PassesReport, step: PassStep, context: int = 3) -> str:
    """The unified diff of ``step``: the module before it (``---``) and after (``+++``)."""
    before, after = report.text_before(step), step.text
    where = f"{step.label}"
    return "".join(
        unified_diff(
            before.splitlines(),
            after.splitlines(),
            f"{where} (before)",
            f"{where} (after)",
            context,
        )
    )
