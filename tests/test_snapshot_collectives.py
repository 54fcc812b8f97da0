"""Snapshots record each kind of collective (executions per run, bytes per device) and
``--fail-on`` gates on them: ``new-op:all-gather``, ``collectives>N``, ``collective_bytes>+N%``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from jaxinspect.renderers.jsondoc import SCHEMAS_DIR
from jaxinspect.snapshot.compare import diff_snapshots
from jaxinspect.snapshot.model import COST_KEYS, MEMORY_KEYS, Snapshot, SnapshotSummary
from jaxinspect.snapshot.thresholds import evaluate, parse_rules

TARGET = """\
import jax
from jax.sharding import PartitionSpec as P


def _summed(block, trips):
    return jax.lax.fori_loop(0, trips, lambda i, a: a + jax.lax.psum(a, "data"), block)


def _run(x, trips):
    mesh = jax.sharding.Mesh(jax.devices()[:8], ("data",))
    body = lambda block: _summed(block, trips)
    return jax.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)


def three(x):
    return _run(x, 3)


def six(x):
    return _run(x, 6)
"""
#: Each device's block of the f32[64,32] argument split over 8 devices: one psum's bytes.
BLOCK = (64 // 8) * 32 * 4


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Snapshots of a psum in a loop of 3 and of 6 trips (the same HLO ops)."""
    from typer.testing import CliRunner

    from jaxinspect.cli.app import app

    root = tmp_path_factory.mktemp("collectives")
    (root / "loops.py").write_text(TARGET)
    out = []
    for name in ("three", "six"):
        args = [f"{root}/loops.py:{name}", "--arg", "x=f32[64,32]", "--devices", "8"]
        result = CliRunner().invoke(app, ["snapshot", *args, "--out", str(root / name)])
        assert result.exit_code == 0, result.output
        out.append(root / name)
    return out[0], out[1]


def test_summary_records_executions_and_bytes(folders: tuple[Path, Path]) -> None:
    schema = json.loads((SCHEMAS_DIR / "snapshot-summary.schema.json").read_text())
    three, six = (json.loads((f / "summary.json").read_text()) for f in folders)
    jsonschema.validate(three, schema)
    assert (three["collectives"], three["collective_bytes"]) == (
        {"all-reduce": 3},
        {"all-reduce": 3 * BLOCK},
    )
    assert (six["collectives"], six["collective_bytes"]) == (
        {"all-reduce": 6},
        {"all-reduce": 6 * BLOCK},
    )
    # The instructions are the same: only the loop's trip count changed.
    assert three["ops"]["hlo"] == six["ops"]["hlo"]


@pytest.mark.parametrize(
    ("rules", "code"),
    [
        ("new-op:all-reduce", 1),  # executions per run rose, 3 -> 6
        ("new-op:all-gather", 0),
        ("collectives>2", 1),  # +3 executions
        ("collectives>3", 0),
        ("collective_bytes>+50%", 1),  # +100 %
        ("collective_bytes>+100%", 0),
        ("collective_bytes>3000", 1),  # + 3 x 1 KiB
    ],
)
def test_rules_gate_on_collectives(
    run_cli: Callable[..., Any], folders: tuple[Path, Path], rules: str, code: int
) -> None:
    result = run_cli("diff", *folders, "--fail-on", rules, "--no-text")
    assert result.exit_code == code, result.stdout + result.stderr


def test_diff_json_shows_the_collectives(
    run_cli: Callable[..., Any], folders: tuple[Path, Path]
) -> None:
    result = run_cli("diff", *folders, "--format", "json", "--fail-on", "new-op:all-reduce")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS_DIR / "snapshot-diff.schema.json").read_text()))
    assert doc["ops"] == [{"stage": "collectives", "op": "all-reduce", "before": 3, "after": 6}]
    assert doc["tripped"] == ["new-op:all-reduce: all-reduce in collectives: 3 -> 6"]
    changed = doc["metrics"]["collective_bytes"]
    assert (changed["before"], changed["after"], changed["percent"]) == (
        3 * BLOCK,
        6 * BLOCK,
        100.0,
    )
    console = run_cli("diff", *folders, "--no-text", "--fail-on", "collective_bytes>+10%")
    assert (
        "fails collective_bytes>+10%: collective_bytes 3 KiB -> 6 KiB (+100.0%)" in console.stdout
    )


def test_a_snapshot_without_collective_bytes_still_matches(
    run_cli: Callable[..., Any], folders: tuple[Path, Path], tmp_path: Path
) -> None:
    # A snapshot written before collective_bytes was recorded: nothing else differs.
    old = tmp_path / "old"
    old.mkdir()
    for file in folders[0].iterdir():
        (old / file.name).write_bytes(file.read_bytes())
    summary = json.loads((old / "summary.json").read_text())
    del summary["collective_bytes"]
    (old / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    assert run_cli("diff", old, folders[0]).exit_code == 0
    rules = ("--fail-on", "collective_bytes>+0%", "--format", "json")
    gated = run_cli("diff", old, folders[0], *rules)
    assert gated.exit_code == 0
    assert json.loads(gated.stdout)["identical"]
    # Against a changed snapshot the rule cannot be evaluated, and says why.
    notes = json.loads(run_cli("diff", old, folders[1], *rules).stdout)["notes"]
    assert notes == [
        "collective_bytes>+0%: collective_bytes is not recorded on both sides (a loose text "
        "file, or a snapshot written by an older jaxinspect); not evaluated"
    ]


def test_a_misspelt_metric_names_collective_bytes(
    run_cli: Callable[..., Any], folders: tuple[Path, Path]
) -> None:
    result = run_cli("diff", *folders, "--fail-on", "collective-bytes>+10%")
    assert result.exit_code == 2
    assert "unknown metric 'collective-bytes' (did you mean collective_bytes" in result.stderr


def _summary(hlo: dict[str, int], collectives: dict[str, int]) -> Snapshot:
    summary = SnapshotSummary(
        ops=(("hlo", tuple(hlo.items())),),
        fusion_count=0,
        collectives=tuple(collectives.items()),
        cost=tuple((k, None) for k in COST_KEYS),
        memory=tuple((k, None) for k in MEMORY_KEYS),
        collective_bytes=tuple((op, 4096) for op in collectives),
    )
    return Snapshot(header=None, summary=summary, texts=())


def test_new_op_sees_an_async_collective_by_its_name() -> None:
    # On TPU and GPU the histogram holds all-gather-start/-done, not all-gather.
    old = _summary({"fusion": 1}, {})
    new = _summary({"fusion": 1, "all-gather-start": 1, "all-gather-done": 1}, {"all-gather": 1})
    diff = diff_snapshots(old, new, "a", "b")
    verdict = evaluate(parse_rules("new-op:all-gather"), diff)
    assert verdict.tripped == ("new-op:all-gather: all-gather in collectives: 0 -> 1",)
    assert evaluate(parse_rules("collectives>0"), diff).failed
    assert evaluate(parse_rules("new-op:*"), diff).tripped == (
        "new-op:*: all-gather-done appeared in hlo",
    )
