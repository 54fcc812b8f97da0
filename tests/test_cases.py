"""Multi-case specs: parsing, --case, and the comparative `stages` table and JSON."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console
from typer.testing import Result

from conftest import ROOT, sample, validate_document
from jaxinspect.errors import SpecError
from jaxinspect.inputs.cases import load_spec_cases, parse_spec_cases_text
from jaxinspect.inputs.spec import load_spec
from jaxinspect.stages.casereport import CaseComparison
from jaxinspect.stages.caserunner import compare_cases
from jaxinspect.stages.casesconsole import render_cases_console
from jaxinspect.stages.casesjsondoc import cases_to_dict
from jaxinspect.stages.runner import InspectOptions

STAGES_SCHEMA = json.loads((ROOT / "jaxinspect/schemas/stages.schema.json").read_text())
AXPY = sample("simple.py") + ":axpy"

TWO = """
cases:
  small: {args: {x: 'f32[4]', y: 'f32[4]'}}
  large: {args: {x: 'f32[64]', y: 'f32[64]'}, donate: [y]}
"""


def test_cases_parse_in_order_with_sources() -> None:
    spec_file = parse_spec_cases_text(TWO, source="s.yaml")
    assert spec_file.names == ("small", "large")
    assert spec_file.has_cases
    small, large = (spec for _, spec in spec_file.cases)
    assert small.source == "s.yaml: cases.small"
    assert large.donate == ("y",)
    assert spec_file.select("large") == (spec_file.cases[1],)
    assert spec_file.single("small") is small


def test_plain_spec_is_one_default_case() -> None:
    spec_file = load_spec_cases(sample("linreg.yaml"))
    assert spec_file.names == ("default",)
    assert not spec_file.has_cases
    with pytest.raises(SpecError, match=r"--case b64: .*linreg.yaml has no `cases:`"):
        spec_file.select("b64")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cases: []", "s.yaml: cases must be a non-empty mapping"),
        ("cases: {}", "s.yaml: cases must be a non-empty mapping"),
        (
            "cases: {a: {args: {x: 'f32[2]'}}}\nargs: {x: 'f32[2]'}",
            "s.yaml: with `cases:`, the top level holds nothing else (found `args`)",
        ),
        ("cases: {'a b': {args: []}}", "s.yaml: cases: 'a b' is not a case name"),
        ("cases: {a: 'f32[2]'}", "s.yaml: cases.a: a case is a mapping with `args:`"),
        ("cases: {a: {static: {n: 1}}}", "s.yaml: cases.a: missing top-level key `args`"),
        ("cases: {a: {args: {x: 'f32[x]'}}}", "s.yaml: cases.a: args.x: dimension 'x'"),
        ("cases: {a: {args: {x: 'f32[2]'}, donate: [z]}}", "s.yaml: cases.a: donate: `z`"),
        ("cases: {a: {args: {x: 'f32[2]'}, stat: {}}}", "s.yaml: cases.a: unknown top-level key"),
        ("cases: {a: {cases: {}}}", "s.yaml: cases.a: `cases:` holds several argument sets"),
    ],
)
def test_malformed_case_is_a_spec_error_naming_path_and_key(text: str, message: str) -> None:
    with pytest.raises(SpecError, match="^" + re.escape(message)):
        parse_spec_cases_text(text, source="s.yaml")


def test_unknown_case_suggests_names() -> None:
    spec_file = parse_spec_cases_text(TWO, source="s.yaml")
    with pytest.raises(SpecError, match=r"has no case `smal` \(did you mean small\?\)"):
        spec_file.select("smal")


def test_single_spec_loader_refuses_cases(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(TWO)
    with pytest.raises(SpecError, match="`cases:` holds several argument sets"):
        load_spec(path)


@pytest.fixture(scope="module")
def comparison() -> CaseComparison:
    cases = parse_spec_cases_text(TWO, source="s.yaml").cases
    return compare_cases(AXPY, cases, InspectOptions(execute=False))


def test_each_case_runs_once_with_its_own_figures(comparison: CaseComparison) -> None:
    small, large = comparison.cases
    assert small.report.cost is not None and large.report.cost is not None
    assert (small.report.cost.flops, large.report.cost.flops) == (8, 128)  # a*x + y
    assert small.distinct_args == ("x f32[4]", "y f32[4]")
    assert large.report.memory is not None
    assert large.report.memory.donated == ("y",)
    assert comparison.composition == "jit(axpy)"


def test_comparative_table(comparison: CaseComparison) -> None:
    out = io.StringIO()
    Console(width=100, file=out, color_system=None).print(render_cases_console(comparison))
    text = out.getvalue()
    assert re.search(r"FLOPs\s+│\s+8 │\s+128 │", text)
    assert "jit(axpy): 2 cases" in text
    assert "│ large │ x f32[64], y f32[64] │" in text
    assert "n/a timings.cached_call_s: --no-execute" in text


def test_cli_stages_compares_cases_and_case_picks_one(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(TWO)
    result = run_cli("stages", AXPY, "-s", path, "--no-execute", "-f", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert [c["name"] for c in document["cases"]] == ["small", "large"]
    validate_document(document, "cases.schema.json")
    for case in document["cases"]:
        jsonschema.validate(case["report"], STAGES_SCHEMA)
    one = run_cli("stages", AXPY, "-s", path, "--case", "large", "--no-execute", "-f", "json")
    assert one.exit_code == 0, one.stderr
    assert json.loads(one.stdout)["args"][1]["shape"] == [64]
    hlo = run_cli("hlo", AXPY, "-s", path)
    assert hlo.exit_code == 2
    assert "has 2 cases (small, large); this command runs one: add --case NAME" in hlo.stderr
    assert run_cli("hlo", AXPY, "-s", path, "--case", "small").exit_code == 0


# ok and ok2 run; mismatch fails in the user's code (exit 3), typo does not bind (exit 2).
FAILING = """
cases:
  ok: {args: {x: 'f32[4]', y: 'f32[4]'}}
  mismatch: {args: {x: 'f32[4]', y: 'f32[5]'}}
  typo: {args: {x: 'f32[4]', z: 'f32[4]'}}
  ok2: {args: {x: 'f32[8]', y: 'f32[8]'}}
"""


def test_failing_cases_are_rows_in_json_and_the_worst_code_wins(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    path = tmp_path / "failing.yaml"
    path.write_text(FAILING)
    result = run_cli("stages", AXPY, "-s", path, "--no-execute", "-f", "json")
    assert result.exit_code == 3, result.stderr  # the worst of 3 (mismatch) and 2 (typo)
    document = json.loads(result.stdout)
    validate_document(document, "cases.schema.json")
    cases = {c["name"]: c for c in document["cases"]}
    assert list(cases) == ["ok", "mismatch", "typo", "ok2"]
    assert cases["ok"]["error"] is None and cases["ok2"]["error"] is None
    assert cases["ok2"]["report"]["cost"]["flops"] == 16
    assert cases["ok2"]["distinct_args"] == ["x f32[8]", "y f32[8]"]
    mismatch, typo = cases["mismatch"], cases["typo"]
    assert (mismatch["report"], mismatch["distinct_args"]) == (None, [])
    assert mismatch["error"]["exit_code"] == 3
    assert mismatch["error"]["stage"] == "trace"
    assert mismatch["error"]["message"].startswith(f"{AXPY}: trace failed: TypeError: add got")
    assert typo["error"] == {
        "message": f"{path}: cases.typo: args.z: {AXPY}(x, y) has no parameter `z`",
        "exit_code": 2,
        "stage": None,
        "hint": None,
    }
    assert f"Error: case mismatch: {AXPY}: trace failed: TypeError" in result.stderr
    assert f"Error: case typo: {path}: cases.typo: args.z:" in result.stderr
    assert "Error: 2 of 4 cases failed (mismatch, typo); the others ran" in result.stderr


def test_failing_case_in_the_table_and_a_spec_error_alone_exits_2(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    path = tmp_path / "failing.yaml"
    path.write_text(FAILING.replace("  mismatch: {args: {x: 'f32[4]', y: 'f32[5]'}}\n", ""))
    result = run_cli("stages", AXPY, "-s", path, "--no-execute")
    assert result.exit_code == 2, result.stderr
    assert "jit(axpy): 3 cases, 1 failed" in result.stdout
    assert re.search(r"FLOPs\s+│\s+8 │\s+failed │\s+16 │", result.stdout)
    assert re.search(r"│ typo\s+│ \(failed\)\s+│", result.stdout)
    assert "case typo failed (exit 2): " in result.stdout
    assert "Error: case typo: " in result.stderr


def test_every_case_failing_still_prints_every_row(tmp_path: Path) -> None:
    cases = parse_spec_cases_text(
        "cases:\n  a: {args: {z: 'f32[2]'}}\n  b: {args: {x: 'f32[2]', y: 'f32[3]'}}\n",
        source="s.yaml",
    ).cases
    comparison = compare_cases(AXPY, cases, InspectOptions(execute=False))
    assert [c.name for c in comparison.failures] == ["a", "b"]
    assert comparison.exit_code == 3
    assert comparison.composition is None
    validate_document(cases_to_dict(comparison), "cases.schema.json")
    out = io.StringIO()
    Console(width=100, file=out, color_system=None).print(render_cases_console(comparison))
    text = out.getvalue()
    assert ":axpy: 2 cases, 2 failed" in text  # no composition: the target names the table
    assert re.search(r"FLOPs\s+│\s+failed │\s+failed │", text)
    assert "case a failed (exit 2): s.yaml: cases.a: args.z:" in text


def test_the_cases_schema_wants_a_report_or_an_error_and_two_cases() -> None:
    error = {"message": "boom", "exit_code": 3, "stage": "trace", "hint": None}
    case = {"name": "a", "source": "s.yaml: cases.a", "distinct_args": [], "report": None}
    document = {"schema_version": 1, "target": "t.py:f", "composition": None}
    validate_document({**document, "cases": [{**case, "error": error}] * 2}, "cases.schema.json")
    for cases in ([{**case, "error": None}] * 2, [{**case, "error": error}]):
        with pytest.raises(jsonschema.ValidationError):
            validate_document({**document, "cases": cases}, "cases.schema.json")
