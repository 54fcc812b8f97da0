"""pipeline/dumps.py on real compilations: the files of one module, read back, folder removed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxinspect.errors import JaxInspectError
from jaxinspect.pipeline.dumps import compilation_dump, read_dump_folder
from jaxinspect.xla.hlotext import parse_module


def _lowered(scale: float = 2.0):
    def f(x):
        return jnp.sin(x) * scale + 1.0

    return jax.jit(f).lower(jax.ShapeDtypeStruct((8,), jnp.float32))


def test_pass_snapshots_are_read_in_order_and_the_folder_is_removed():
    lowered = _lowered()
    with compilation_dump(passes=True) as dump:
        assert dump.compiler_options["xla_dump_hlo_pass_re"] == ".*"
        compiled = lowered.compile(compiler_options=dump.compiler_options)
        module = dump.read(compiled)
        folder = dump.folder
        assert folder.is_dir()
    assert not folder.exists()
    assert module.name == "jit_f"
    assert module.passes is not None and len(module.passes) > 5
    sequences = [p.sequence for p in module.passes]
    assert sequences == sorted(sequences)
    first = module.passes[0]
    assert (first.after, first.text) == ("pipeline-start", module.before_optimizations)
    # The last snapshot is the scheduled module XLA compiled, as JAX prints it.
    assert module.passes[-1].text == module.after_optimizations
    assert "is_scheduled=true" in (module.after_optimizations or "")
    assert parse_module(module.after_optimizations or "").entry.instructions
    assert any(p.after == "fusion" for p in module.passes)
    assert (module.buffer_assignment or "").startswith("BufferAssignment:")
    assert (module.live_range or "").startswith("HloLiveRange")
    assert "Total bytes" in (module.memory_usage_report or "")
    assert module.reasons == ()


def test_without_passes_the_memory_files_still_come_and_passes_say_why():
    lowered = _lowered(3.0)
    with compilation_dump() as dump:
        assert "xla_dump_hlo_pass_re" not in dump.compiler_options
        module = dump.read(lowered.compile(compiler_options=dump.compiler_options))
    assert module.passes is None
    assert module.reason("passes") == "pass-by-pass snapshots were not asked for"
    assert module.buffer_assignment is not None and module.live_range is not None
    assert module.reason("buffer_assignment") is None


def test_without_passes_the_module_texts_come_without_metadata_and_the_buffers_unchanged():
    # Nothing reads the module texts then: XLA prints them without metadata (less to print
    # inside the compile); the buffer assignment and live ranges print none, so they are the
    # same text as with metadata.
    lowered = _lowered(5.0)
    with compilation_dump() as dump:
        assert dump.compiler_options["xla_dump_disable_metadata"] is True
        bare = dump.read(lowered.compile(compiler_options=dump.compiler_options))
    with compilation_dump(passes=True) as dump:
        assert "xla_dump_disable_metadata" not in dump.compiler_options
        full = dump.read(lowered.compile(compiler_options=dump.compiler_options))
    assert "metadata={" in (full.after_optimizations or "")
    assert "metadata={" not in (bare.after_optimizations or "metadata={")
    texts = ("buffer_assignment", "live_range", "memory_usage_report")
    assert [getattr(bare, t) for t in texts] == [getattr(full, t) for t in texts]


def test_the_folder_is_removed_when_the_block_raises():
    with pytest.raises(KeyboardInterrupt), compilation_dump(passes=True) as dump:
        _lowered(4.0).compile(compiler_options=dump.compiler_options)
        folder = dump.folder
        raise KeyboardInterrupt
    assert not folder.exists()


def test_the_persistent_cache_is_off_inside_the_block():
    before = jax.config.jax_enable_compilation_cache
    with compilation_dump():
        assert jax.config.jax_enable_compilation_cache is False
    assert jax.config.jax_enable_compilation_cache == before


def test_only_the_named_module_is_read(tmp_path):
    for ident, name in ((2, "jit_f"), (4, "jit_g")):
        (tmp_path / f"module_{ident:04d}.{name}.before_optimizations.txt").write_text(name)
        after = f"module_{ident:04d}.{name}.0003.simplification.after_algsimp.before_dce.txt"
        (tmp_path / after).write_text(name + " after")
    # Names XLA writes: a pipeline named "after_...", a snapshot taken inside a pass.
    for rest in (
        "0009.after_layout_assignment.after_pipeline-start.before_pipeline-end.txt",
        "0001.copy-insertion.after_adding_copies_to_resolve_interference.txt",
    ):
        (tmp_path / f"module_0004.jit_g.{rest}").write_text(rest[:4])
    module = read_dump_folder(tmp_path, module_name="jit_g", passes=True)
    assert (module.module_id, module.before_optimizations) == (4, "jit_g")
    assert module.passes is not None
    assert [(p.pipeline, p.after, p.before, p.text) for p in module.passes] == [
        ("copy-insertion", "adding_copies_to_resolve_interference", None, "0001"),
        ("simplification", "algsimp", "dce", "jit_g after"),
        ("after_layout_assignment", "pipeline-start", "pipeline-end", "0009"),
    ]
    assert module.reason("after_optimizations") is not None
    with pytest.raises(JaxInspectError, match="not one module"):
        read_dump_folder(tmp_path, module_name=None, passes=True)


def test_a_folder_without_the_module_is_an_internal_error(tmp_path):
    with pytest.raises(JaxInspectError, match="did not reach the compilation"):
        read_dump_folder(tmp_path, module_name="jit_f", passes=True)
