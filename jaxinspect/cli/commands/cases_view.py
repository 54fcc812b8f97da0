"""``stages`` over every case of a multi-case spec: run each once, print one comparison."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.pipeline.inspection import InspectOptions


def show_case_comparison(
    target: str,
    cases: tuple[tuple[str, Spec], ...],
    options: InspectOptions,
    *,
    json: bool,
    debug: bool = False,
) -> None:
    """Inspect ``target`` per case and print the comparison (JSON or a table) to stdout.

    A failed case is a row with its error; after the report every failure is printed on stderr,
    naming its case, and the command exits with the worst failure's exit code.
    """
    from rich.console import Console

    from jaxinspect.cli.case_errors import exit_for_failed_cases
    from jaxinspect.pipeline.cases import compare_cases
    from jaxinspect.renderers.cases.console import render_cases_console, render_cases_json
    from jaxinspect.renderers.stdout import stdout_console

    with Console(stderr=True).status(f"inspecting {target} for {len(cases)} cases …"):
        comparison = compare_cases(target, cases, options)
    if json:
        sys.stdout.write(render_cases_json(comparison))
    else:
        stdout_console().print(render_cases_console(comparison))
    failed = [(case.name, case.error) for case in comparison.cases if case.error is not None]
    exit_for_failed_cases(failed, total=len(comparison.cases), debug=debug)
