"""jaxinspect/jaxapi.py: the one home of private JAX access, its checks, and its guard."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxinspect import jaxapi
from jaxinspect.errors import ExitCode, JaxInspectError
from tests.conftest import ROOT

PACKAGE = ROOT / "jaxinspect"
HOME = PACKAGE / "jaxapi.py"
# Private modules and attributes of JAX and jaxlib, the undocumented-as-typed executable
# object, and jax.monitoring event names (string literals starting with "/jax/").
PRIVATE = re.compile(
    r"jax\._src|jaxlib\._(?!_)|from jaxlib import _|\._xla\b|import _xla|[.'\"]_lowering\b"
    r"|runtime_executable|xla_client|xla_bridge|source_info_util|HloPrintOptions"
    r"|hlo_module_from_text|hlo_module_cost_analysis|kept_var_idx|_include_paths"
    r"|['\"]/jax/"
)
F32 = jax.ShapeDtypeStruct((3,), jnp.float32)


def _hits(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(lines, 1)
        if PRIVATE.search(line)
    ]


def test_private_jax_access_lives_only_in_jaxapi():
    hits = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != HOME for hit in _hits(path)]
    assert hits == [], "private JAX/jaxlib access outside jaxinspect/jaxapi.py:\n" + "\n".join(hits)
    # The pattern finds what it is meant to find (the guard cannot pass by matching nothing).
    found = "\n".join(_hits(HOME))
    for needle in ("jax._src", "jaxlib import _hlo", "._xla.", '"_lowering"', "/jax/core"):
        assert needle in found


def _compile_counts(fn) -> dict[str, int]:
    """jax.monitoring events counted while a fresh jit of ``fn`` compiles for real."""
    counts: dict[str, int] = {}

    def listen(event: str, duration: float, **_: object) -> None:
        counts[event] = counts.get(event, 0) + 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        jax.jit(fn).trace(F32).lower().compile()
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return counts


def test_the_compile_event_names_fire_for_a_real_compile():
    counts = _compile_counts(lambda x: x * 3.0 + 1.0)
    events = (jaxapi.TRACE_EVENT, jaxapi.LOWER_EVENT, jaxapi.COMPILE_EVENT)
    jaxapi.require_events(counts, events, "in this test")  # raises if JAX renamed one
    assert all(counts[e] == 1 for e in events)


def test_an_event_that_never_fires_is_a_loud_internal_error():
    counts = _compile_counts(lambda x: x - 2.0)
    renamed = "/jax/core/compile/backend_compile_duration_v2"
    with pytest.raises(JaxInspectError) as info:
        jaxapi.require_events(counts, (jaxapi.COMPILE_EVENT, renamed), "for the first case")
    assert info.value.exit_code == ExitCode.INTERNAL_ERROR
    # Only the event that never fired is named (the real compile event did fire).
    assert info.value.message.startswith(f"jax.monitoring event {renamed} never fired for the ")
    assert "jaxapi.py" in (info.value.hint or "")


def test_kept_argument_indices_name_the_arguments_jax_kept():
    lowered = jax.jit(lambda unused, used: used * 2.0).trace(F32, F32).lower()
    assert jaxapi.kept_argument_indices(lowered) == (1,)


def test_a_stage_without_the_private_lowering_is_loud_not_a_guess():
    traced = jax.jit(lambda x: x + 1.0).trace(F32)  # a real JAX stage with no `_lowering`
    with pytest.raises(
        JaxInspectError, match=r"compile_args\['kept_var_idx'\] is missing on Traced"
    ):
        jaxapi.kept_argument_indices(traced)


def test_compiled_accessors_return_checked_values():
    compiled = jax.jit(lambda x: jnp.sin(x) * x).trace(F32).lower().compile()
    text = jaxapi.optimized_hlo_text(compiled)
    assert text == compiled.as_text() and text.startswith("HloModule ")
    module = jaxapi.optimized_hlo_module(compiled, "this test")
    assert jaxapi.hlo_module_text(module).split(",", 1)[0] == text.split(",", 1)[0]
    modules = jaxapi.optimized_hlo_modules(compiled)
    assert modules is not None and len(modules) == 1
    assert jaxapi.executable_devices(compiled) == [jax.devices("cpu")[0]]
    assert jaxapi.executable_identity(compiled) is jaxapi.executable_identity(compiled)
    bare = jaxapi.hlo_module_text(module, metadata=False)
    assert "metadata=" in jaxapi.hlo_module_text(module, metadata=True) and "metadata=" not in bare


def test_cost_analysis_of_parsed_hlo_text():
    compiled = jax.jit(lambda x: x * x + x).trace(F32).lower().compile()
    text = jaxapi.hlo_module_text(jaxapi.optimized_hlo_module(compiled, "this test"))
    cost = jaxapi.hlo_cost_analysis(
        jaxapi.executable_client(compiled), jaxapi.parse_hlo_module(text)
    )
    assert cost["flops"] == 6.0  # 3 multiplies and 3 adds
    with pytest.raises(Exception, match="parse"):
        jaxapi.parse_hlo_module("not an HLO module")


def test_the_per_op_cost_client_of_a_cpu_executable_is_its_own():
    compiled = jax.jit(lambda x: x * x + x).trace(F32).lower().compile()
    client = jaxapi.executable_client(compiled)
    assert client is compiled.runtime_executable().client and client.platform == "cpu"


def test_compilation_cache_disabled_restores_the_old_setting():
    original = jax.config.jax_enable_compilation_cache
    try:
        for old in (True, False):
            jax.config.update("jax_enable_compilation_cache", old)
            with jaxapi.compilation_cache_disabled():
                assert jax.config.jax_enable_compilation_cache is False
            assert jax.config.jax_enable_compilation_cache is old
    finally:
        jax.config.update("jax_enable_compilation_cache", original)


def test_source_inclusions_are_added_for_the_block_only(tmp_path):
    jax_folder = str(Path(jax.__file__).resolve().parent) + "/"
    user_folder = str(tmp_path) + "/"  # already user code: nothing to add
    with jaxapi.source_inclusions([jax_folder, user_folder]) as added:
        assert added == (jax_folder,)
        with jaxapi.source_inclusions([jax_folder]) as nested:
            assert nested == ()  # counted as user code inside the block
    with jaxapi.source_inclusions([jax_folder]) as again:
        assert again == (jax_folder,)  # removed after the block


def test_backend_platforms_and_cache_entries(tmp_path):
    assert "cpu" in jaxapi.backend_platforms()
    (tmp_path / "key1-cache").write_bytes(b"x")
    (tmp_path / "key1-atime").write_bytes(b"x")
    assert jaxapi.cache_entries(str(tmp_path)) == 1
    assert jaxapi.cache_entries(str(tmp_path / "missing")) == 0
