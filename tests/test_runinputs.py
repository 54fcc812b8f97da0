"""Shared run inputs: one declaration on every TARGET command; outcomes to exit codes."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from jaxinspect.cli.exits import Outcome, outcome_exit_code
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import ExitCode

#: Shared options a TARGET command leaves out, and why it may.
LEFT_OUT = {
    "bench": {"topology", "gpu_config"},  # it runs the program: no compile-only targets
    "snapshot": {"case"},  # one snapshot per folder: the manifest names cases (check)
    "recompile": {"arg", "case"},  # sweeps a spec's cases; its own --case is repeatable
}
TARGET_COMMANDS = (
    "stages",
    "jaxpr",
    "stablehlo",
    "hlo",
    "bench",
    "cost",
    "snapshot",
    "recompile",
    "report",
    "memory",
    "passes",
)


def _click_command(name: str) -> typer.core.TyperCommand:
    from jaxinspect.cli.app import command_app

    group = typer.main.get_command(command_app())
    return group.commands[name]  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("name", TARGET_COMMANDS)
def test_every_target_command_offers_the_shared_inputs(name: str) -> None:
    names = [param.name for param in _click_command(name).params]
    expected = [
        f.name for f in dataclasses.fields(RunInputs) if f.name not in LEFT_OUT.get(name, ())
    ]
    assert [n for n in names if n in expected] == expected  # all of them, in one order
    assert names[0] == "target" and names[-1] == "debug"


def _probe_app(seen: list[tuple[RunInputs, dict[str, object]]]) -> typer.Typer:
    app = typer.Typer()

    @run_inputs_command(without=("topology",))
    def probe(
        inputs: RunInputs,
        out: Annotated[str, typer.Option("--out")],
        top: Annotated[int, typer.Option("--top")] = 5,
        *,
        last: Annotated[bool, typer.Option("--last")] = False,
    ) -> Outcome:
        """Probe."""
        seen.append((inputs, {"out": out, "top": top, "last": last}))
        return Outcome(differences=top == 0)

    app.command(name="probe")(probe)
    app.command(name="other")(lambda: None)  # two commands: typer keeps the name
    return app


def test_the_decorator_places_the_shared_options_around_the_command_s_own() -> None:
    seen: list[tuple[RunInputs, dict[str, object]]] = []
    group = typer.main.get_command(_probe_app(seen))
    names = [param.name for param in group.commands["probe"].params]  # type: ignore[attr-defined]
    assert names == [
        "target",
        "out",  # a required option right after TARGET
        "shapes",
        "arg",
        "backend",
        "top",  # own options after --backend
        "case",
        "mesh",
        "devices",
        "gpu_config",  # --topology left out
        "last",  # keyword-only: after the shared options, before --debug
        "debug",
    ]


def test_the_command_gets_run_inputs_and_its_outcome_is_the_exit_code() -> None:
    seen: list[tuple[RunInputs, dict[str, object]]] = []
    app = _probe_app(seen)
    argv = ["probe", "f.py:g", "--out", "o", "--mesh", "data=2", "--arg", "x=f32[2]", "--debug"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    inputs, own = seen[0]
    assert inputs == RunInputs(target="f.py:g", arg=["x=f32[2]"], mesh="data=2", debug=True)
    assert inputs.placement.words() == ["--mesh", "data=2"]
    assert own == {"out": "o", "top": 5, "last": False}
    assert CliRunner().invoke(app, [*argv, "--top", "0"]).exit_code == ExitCode.DIFFERENCES


def test_leaving_out_an_unknown_or_the_debug_option_is_refused() -> None:
    with pytest.raises(ValueError, match="sharpes"):
        run_inputs_command(without=("sharpes",))
    with pytest.raises(ValueError, match="debug"):
        run_inputs_command(without=("debug",))


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (None, ExitCode.OK),
        (Outcome(), ExitCode.OK),
        (Outcome(differences=True), ExitCode.DIFFERENCES),
        (Outcome(failures=(ExitCode.TARGET_FAILED,)), ExitCode.TARGET_FAILED),
        # A failed case outranks a difference: its exit code says more.
        (Outcome(differences=True, failures=(ExitCode.USAGE_ERROR,)), ExitCode.USAGE_ERROR),
        (
            Outcome(failures=(ExitCode.USAGE_ERROR, ExitCode.TARGET_FAILED)),
            ExitCode.TARGET_FAILED,
        ),
    ],
    ids=["none", "nothing", "differences", "failure", "failure-over-difference", "worst"],
)
def test_outcomes_map_to_exit_codes(outcome: Outcome | None, code: ExitCode) -> None:
    assert outcome_exit_code(outcome) == code
