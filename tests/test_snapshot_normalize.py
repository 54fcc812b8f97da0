"""Snapshot normalization on real JAX: invariant to non-changes, sensitive to real changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxinspect.inputs.spec import parse_spec_text
from jaxinspect.inputs.target import load_target
from jaxinspect.snapshot.capture import capture_snapshot
from jaxinspect.snapshot.model import SNAPSHOT_FILES, STAGE_FILES, Snapshot
from jaxinspect.snapshot.normalize import normalize_hlo, normalize_stablehlo
from jaxinspect.snapshot.store import write_snapshot

BASE = """
import jax
import jax.numpy as jnp


def f(x, w):
    h = jnp.tanh(x @ w)

    def body(c, _):
        return jnp.sin(c) * 0.5, None

    h, _ = jax.lax.scan(body, h, None, length=3)
    return (h - jnp.cos(h)).sum()
"""
SPEC = "args:\n  - f32[8,16]\n  - f32[16,4]\n"
CONSTANT = """
import numpy as np

C = np.arange(256, dtype=np.float32).reshape(16, 16) / 7.0


def f(x, w):
    return (x[:, :16] @ C).sum() + w.sum()
"""

# name -> (source, function name): each must snapshot exactly like "base".
SAME = {
    "moved": (BASE, "f"),
    "blank_lines_and_comments": ("# a comment\n\n\n# another\n" + BASE, "f"),
    "renamed_function": (BASE.replace("def f(", "def g("), "g"),
    "renamed_argument": (BASE.replace("(x, w)", "(inp, w)").replace("x @ w", "inp @ w"), "f"),
}
# name -> (source, function name, stages expected to differ): each must differ from "base".
DIFFERENT = {
    "constant": (BASE.replace("* 0.5", "* 0.25"), "f", ("jaxpr", "stablehlo", "hlo")),
    "loop_length": (BASE.replace("length=3", "length=4"), "f", ("jaxpr", "stablehlo", "hlo")),
    "op": (BASE.replace("jnp.sin(c)", "jnp.exp(c)"), "f", ("jaxpr", "stablehlo", "hlo")),
    "operand_order": (
        BASE.replace("h - jnp.cos(h)", "jnp.cos(h) - h"),
        "f",
        ("jaxpr", "stablehlo", "hlo"),
    ),
    "large_constant": (CONSTANT.replace("/ 7.0", "/ 9.0"), "f", ("stablehlo", "hlo")),
}


def _capture(folder: Path, source: str, name: str) -> Snapshot:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prog.py"
    path.write_text(textwrap.dedent(source))
    return capture_snapshot(load_target(f"{path}:{name}"), parse_spec_text(SPEC, source="spec"))


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Snapshot]:
    root = tmp_path_factory.mktemp("programs")
    out = {"base": _capture(root / "base", BASE, "f")}
    out["constant_base"] = _capture(root / "constant_base", CONSTANT, "f")
    for key, (source, name) in SAME.items():
        out[key] = _capture(root / key / "deeper", source, name)
    for key, (source, name, _) in DIFFERENT.items():
        out[key] = _capture(root / key, source, name)
    return out


@pytest.mark.parametrize("variant", sorted(SAME))
def test_non_changes_leave_every_compared_text_identical(
    snapshots: dict[str, Snapshot], variant: str
) -> None:
    base, other = snapshots["base"], snapshots[variant]
    for stage, _ in STAGE_FILES:
        assert other.text(stage) == base.text(stage), stage
    assert other.summary == base.summary
    assert other.header == base.header


def test_provenance_keeps_what_normalization_removed(snapshots: dict[str, Snapshot]) -> None:
    renamed = snapshots["renamed_argument"].provenance
    assert renamed is not None and snapshots["base"].provenance is not None
    assert renamed.parameter_names[0].startswith("inp")
    assert snapshots["base"].provenance.parameter_names[0].startswith("x")
    assert snapshots["renamed_function"].provenance is not None
    assert snapshots["renamed_function"].provenance.module_name == "jit_g"
    assert snapshots["moved"].provenance is not None
    assert "deeper" in str(snapshots["moved"].provenance.source_file)


@pytest.mark.parametrize("variant", sorted(DIFFERENT))
def test_real_changes_show_in_the_expected_stages(
    snapshots: dict[str, Snapshot], variant: str
) -> None:
    base = snapshots["constant_base" if variant == "large_constant" else "base"]
    other = snapshots[variant]
    _, _, stages = DIFFERENT[variant]
    for stage in stages:
        assert other.text(stage) != base.text(stage), stage


def test_names_and_locations_are_gone(snapshots: dict[str, Snapshot]) -> None:
    hlo = snapshots["base"].text("hlo") or ""
    assert hlo.startswith("HloModule m,")
    assert "%arg0 = f32[8,16]{1,0} parameter(0)" in hlo
    for leaked in ("jit_f", "metadata=", "stack_frame_id", "FileNames", "prog.py", "%x."):
        assert leaked not in hlo
    assert (snapshots["base"].text("stablehlo") or "").startswith("module @m ")


def test_loop_trip_count_and_large_constants_are_kept(snapshots: dict[str, Snapshot]) -> None:
    assert '"known_trip_count":{"n":"3"}' in (snapshots["base"].text("hlo") or "")
    assert '"known_trip_count":{"n":"4"}' in (snapshots["loop_length"].text("hlo") or "")
    hlo = snapshots["constant_base"].text("hlo") or ""
    assert "{...}" not in hlo  # compiled.as_text() would elide the 16x16 constant


def test_layouts_are_kept_by_normalization(snapshots: dict[str, Snapshot]) -> None:
    # XLA's CPU backend ignores layout requests (with_layout_constraint, Format), so the
    # change is made in real compiler output: normalization must not erase it.
    hlo = snapshots["base"].text("hlo") or ""
    assert "{1,0}" in hlo
    relaid = hlo.replace("f32[8,16]{1,0}", "f32[8,16]{0,1}", 1)
    assert normalize_hlo(relaid) != normalize_hlo(hlo)


def test_normalizers_are_idempotent(snapshots: dict[str, Snapshot]) -> None:
    snap = snapshots["base"]
    assert normalize_hlo(snap.text("hlo") or "") == snap.text("hlo")
    assert normalize_stablehlo(snap.text("stablehlo") or "") == snap.text("stablehlo")


def test_separate_processes_write_byte_identical_snapshots(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(BASE))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    # The third process disables XLA's fusion pass: only the compiled form may change.
    flags = {"a": "", "b": "", "nofusion": "--xla_disable_hlo_passes=fusion"}
    procs = {
        key: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jaxinspect",
                "snapshot",
                f"{program}:f",
                "--shapes",
                str(spec),
                "--out",
                str(tmp_path / key),
            ],
            env={**env, "XLA_FLAGS": flag},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for key, flag in flags.items()
    }
    for key, proc in procs.items():
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (key, err.decode())
    for name in SNAPSHOT_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    for name in ("jaxpr.txt", "stablehlo.mlir"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "nofusion" / name).read_bytes()
    assert (tmp_path / "a" / "hlo.txt").read_text() != (
        tmp_path / "nofusion" / "hlo.txt"
    ).read_text()


def test_written_files_round_trip(snapshots: dict[str, Snapshot], tmp_path: Path) -> None:
    from jaxinspect.snapshot.store import read_snapshot

    write_snapshot(tmp_path / "s", snapshots["base"])
    assert read_snapshot(tmp_path / "s") == snapshots["base"]


@pytest.mark.parametrize("variant", ["base", "constant_base", "loop_length"])
def test_text_parser_counts_what_jax_objects_count(
    snapshots: dict[str, Snapshot], variant: str
) -> None:
    from jaxinspect.snapshot.loose import guess_stage, text_op_counts

    snap = snapshots[variant]
    for stage, _ in STAGE_FILES:
        text = snap.text(stage) or ""
        assert guess_stage(text) == stage
        assert dict(text_op_counts(stage, text)) == snap.summary.stage_ops(stage), stage


def test_persistent_cache_cannot_serve_stale_names(tmp_path: Path) -> None:
    # A warm persistent cache returns HLO printed with the first compile's parameter names
    # (its key ignores debug info); snapshot runs switch it off.
    for folder, arg in (("a", "x"), ("b", "inp")):
        (tmp_path / folder).mkdir()
        source = BASE.replace("(x, w)", f"({arg}, w)").replace("x @ w", f"{arg} @ w")
        (tmp_path / folder / "prog.py").write_text(textwrap.dedent(source))
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }

    def run(*args: str) -> str:
        cmd = [sys.executable, "-m", "jaxinspect", *args]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("hlo", f"{tmp_path}/a/prog.py:f", "--arg", "x=f32[8,16]", "--arg", "w=f32[16,4]")
    assert any(cache.iterdir())  # the cache is warm with x's compile
    run(
        "snapshot",
        f"{tmp_path}/b/prog.py:f",
        "--arg",
        "inp=f32[8,16]",
        "--arg",
        "w=f32[16,4]",
        "--out",
        str(tmp_path / "snap"),
    )
    provenance = json.loads((tmp_path / "snap" / "provenance.json").read_text())
    assert provenance["parameter_names"] == ["inp.1", "w.1"]


def test_text_parser_reads_raw_compiler_output_too() -> None:
    # compiled.as_text() carries source tables, metadata and stale names; counts must not care.
    from jaxinspect.inputs.spec import load_spec
    from jaxinspect.snapshot.loose import text_op_counts
    from jaxinspect.stages.runner import InspectOptions, run_inspection

    root = Path(__file__).resolve().parent.parent / "sample_programs"
    report, artifacts = run_inspection(
        load_target(f"{root}/rnn.py:run"),
        load_spec(root / "rnn.yaml"),
        InspectOptions(execute=False, sections=("hlo",)),
    )
    raw = artifacts.compiled.as_text()
    assert "FileNames" in raw and "metadata=" in raw
    stage = report.stage("hlo")
    assert stage is not None
    assert dict(text_op_counts("hlo", raw)) == dict(stage.op_counts)
    assert dict(stage.op_counts)["while"] == 1
