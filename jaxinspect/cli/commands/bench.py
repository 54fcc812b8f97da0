"""``jaxinspect bench``: first-call phases from cold processes and steady-state latency."""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jaxinspect.cli.exits import Outcome
from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import (
    InputsOpt,
    MaxInputBytesOpt,
    SeedOpt,
    TableOrJsonOpt,
    TimeoutOpt,
)
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import SpecError, UsageError
from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES

if TYPE_CHECKING:
    from jaxinspect.bench.jobs import SpecSource
    from jaxinspect.bench.report import BenchReport
    from jaxinspect.bench.runner import Notice, Progress
    from jaxinspect.errors import ExitCode


_TIMEOUT_HINT = "Raise --timeout, or lower --cold-runs, --runs or --time-budget."


def register(app: typer.Typer) -> None:
    """Add the ``bench`` command to ``app``."""
    app.command(name="bench")(bench)


@run_inputs_command(without=("topology", "gpu_config"))
def bench(
    inputs: RunInputs,
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
    cold_runs: Annotated[
        int,
        typer.Option(min=1, max=1000, help="Fresh processes per cold round (min/median/max)."),
    ] = 3,
    runs: Annotated[
        int | None, typer.Option(min=1, help="Timed cached calls (default: --time-budget worth).")
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(min=0, help="Untimed calls before timing (default: 10% of the budget)."),
    ] = None,
    time_budget: Annotated[
        float, typer.Option(min=0.0, help="Seconds of timed cached calls when --runs is not given.")
    ] = 1.0,
    compilation_cache: Annotated[
        str | None,
        typer.Option(
            help="Folder for JAX's persistent compilation cache: cold starts with an "
            "empty, then a populated cache."
        ),
    ] = None,
    compare: Annotated[
        list[str] | None,
        typer.Option(help="Another YAML spec to benchmark side by side; repeatable."),
    ] = None,
    donate: Annotated[
        list[str] | None,
        typer.Option(help="Donate this argument's buffers (as the spec's donate:); repeatable."),
    ] = None,
    seed: SeedOpt = 0,
    values: InputsOpt = None,
    max_input_bytes: MaxInputBytesOpt = DEFAULT_MAX_INPUT_BYTES,
    save: Annotated[
        Path | None,
        typer.Option(help="Write the samples and environment as a latency baseline (JSON)."),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(help="Compare with a --save file; exit 1 when a --fail-on rule regresses."),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="With --baseline: rules such as 'cached.min>+10%,compile>+25%' "
            "(default cached.min>+10%).",
        ),
    ] = None,
    allow_other_baseline: Annotated[
        bool,
        typer.Option(
            "--allow-other-baseline",
            help="With --baseline: judge against a baseline saved for another target, spec "
            "or backend (refused by default).",
        ),
    ] = False,
    strict_env: Annotated[
        bool,
        typer.Option(
            "--strict-env", help="With --baseline: a different machine or toolchain fails too."
        ),
    ] = False,
    timeout: TimeoutOpt = None,
) -> Outcome:
    """Time TARGET's first call from cold processes and its cached calls in a steady state.

    With several specs (--compare, or a spec with `cases:`), a spec that fails is a row with
    its error, the others still run, and the run exits with the worst exit code.
    """
    from jaxinspect.bench.children import forward_sigterm, stop_children
    from jaxinspect.pipeline.timing.deadline import run_deadline

    target, backend = inputs.target, inputs.backend
    with forward_sigterm(), run_deadline(timeout, hint=_TIMEOUT_HINT, on_expire=stop_children):
        from jaxinspect.bench.baseline import check_identity, load_baseline, parse_gate_rules
        from jaxinspect.bench.runner import BenchOptions, run_bench

        if (fail_on is not None or strict_env or allow_other_baseline) and baseline is None:
            raise UsageError(
                "--fail-on, --strict-env and --allow-other-baseline compare with a --baseline FILE"
            )
        rules = parse_gate_rules(fail_on)
        if save is not None:  # resolved before the user's code can change the folder
            from jaxinspect.cli.outputs import output_path

            save = output_path(save, "--save", stdout_ok=False, why="stdout carries the report")
        stored = None if baseline is None else load_baseline(baseline)
        sources = _sources(inputs, compare, tuple(donate or ()))
        if values is not None:
            from dataclasses import replace

            from jaxinspect.inputs.spec import parse_input_source

            parse_input_source(values, "--inputs")  # refused before anything runs
            sources = tuple(replace(source, inputs=values) for source in sources)
        main, others = sources[0], sources[1:]
        identity = None if allow_other_baseline else stored
        if identity is not None:  # before anything is measured
            check_identity(identity, str(baseline), target=target, spec=main.label, backend=backend)
        options = BenchOptions(
            cold_runs=cold_runs,
            runs=runs,
            warmup=warmup,
            time_budget_s=time_budget,
            seed=seed,
            max_input_bytes=max_input_bytes,
            backend=backend,
            compilation_cache=compilation_cache,
            debug=inputs.debug,
            gate=save is not None or baseline is not None,
        )
        with _progress_bar() as (progress, notice):
            report = run_bench(target, main, others, options, progress, notice)
        from jaxinspect.bench.report import BenchResult

        verdict = None
        if stored is not None and isinstance(report.result, BenchResult):
            from jaxinspect.bench.baseline import check_identity, judge

            assert report.environment is not None  # the main spec was measured
            if identity is not None:
                check_identity(
                    identity,
                    str(baseline),
                    target=target,
                    spec=report.result.spec,
                    backend=report.environment.backend,
                )
            verdict = judge(
                stored,
                str(baseline),
                report.result,
                report.environment,
                rules,
                strict_environment=strict_env,
            )
        _render(report, output_format, verdict)
        if save is not None and isinstance(report.result, BenchResult):
            from jaxinspect.bench.baseline import baseline_document, save_baseline

            save_baseline(save, baseline_document(report))
            print(f"jaxinspect: wrote the latency baseline {save}", file=sys.stderr)
        failures = _report_failures(report, inputs.debug)
        if failures or verdict is None:  # a failed spec's exit code outranks the gate's
            return Outcome(failures=failures)
        for note in verdict.environment_notes:
            print(f"note: the baseline was measured elsewhere: {note}", file=sys.stderr)
        return Outcome(differences=verdict.failed)


def _sources(
    inputs: RunInputs, compare: list[str] | None, donate: tuple[str, ...]
) -> "tuple[SpecSource, ...]":
    """The main spec (every case of it) and each --compare spec, in order."""
    from jaxinspect.bench.jobs import SpecSource, spec_sources

    shapes, arg, case = inputs.shapes, inputs.arg, inputs.case
    mesh, devices = inputs.mesh, inputs.devices
    if shapes is not None and arg:
        raise UsageError("give either --shapes SPEC or --arg options, not both")
    if arg:
        if case is not None:
            raise UsageError("--case needs --shapes SPEC with `cases:`")
        sources: tuple[SpecSource, ...] = (
            SpecSource(None, tuple(arg), donate, None, mesh, devices),
        )
    else:
        sources = spec_sources(shapes, case, donate, mesh, devices)
    for path in compare or ():
        try:
            sources += spec_sources(path, None, donate, mesh, devices)
        except SpecError:  # loaded again when its turn comes, it fails in its own row
            sources += (SpecSource(path, (), donate, None, mesh, devices),)
    return sources


def _report_failures(report: "BenchReport", debug: bool) -> "tuple[ExitCode, ...]":
    """Name every spec that failed on stderr; their exit codes."""
    from jaxinspect.cli.sweep_exit import report_failed_cases

    failures = [(f.spec, f.failure) for f in report.failures]
    return report_failed_cases(failures, total=len(report.outcomes), debug=debug)


def _render(report: Any, output_format: OutputFormat, verdict: Any) -> None:
    if output_format is OutputFormat.JSON:
        from jaxinspect.bench.jsondoc import render_bench_json

        sys.stdout.write(render_bench_json(report, verdict))
        return
    from jaxinspect.bench.console import render_bench_console
    from jaxinspect.renderers.stdout import stdout_console

    console = stdout_console()
    console.print(render_bench_console(report))
    if verdict is not None:
        from jaxinspect.bench.gateconsole import render_gate

        console.print(render_gate(verdict))


@contextmanager
def _progress_bar() -> "Iterator[tuple[Progress, Notice]]":
    """A progress bar on stderr, one line per task, so stdout carries the report alone.

    Also a notice printer for the progress of slow calls: above the bar on a terminal, plain
    lines elsewhere (where the bar is not drawn).
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
    from rich.progress import Progress as RichProgress

    bar = RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict[str, Any] = {}

    def update(label: str, done: int, total: int) -> None:
        if label not in tasks:
            tasks[label] = bar.add_task(label, total=total)
        bar.update(tasks[label], completed=done, total=total)

    def notice(line: str) -> None:
        if bar.console.is_terminal:
            bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr, flush=True)

    with bar:
        yield update, notice
