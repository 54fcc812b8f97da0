"""Which donated input buffers the executable reuses for outputs (HLO input_output_alias)."""

from __future__ import annotations

import re
from typing import Any

from jaxinspect import jaxapi
from jaxinspect.base.inspection import BufferAlias
from jaxinspect.inputs.binding import CallPlan

# The module header prints `input_output_alias={ {1}: (0, {}, may-alias), {}: (2, {0}, ...) }`:
# output shape index -> (parameter number, parameter shape index, kind).
_HEADER_ALIAS = re.compile(r"input_output_alias=\{(.*?)\}(?:,\s*\w+=|\s*$)")
_ENTRY = re.compile(r"\{([\d,\s]*)\}:\s*\((\d+),\s*\{([\d,\s]*)\},\s*([\w-]+)\)")


def parse_input_output_alias(header: str) -> tuple[tuple[tuple[int, ...], int, str], ...]:
    """``(output shape index, parameter number, kind)`` per entry of an HLO module header line.

    Only entries whose parameter shape index is ``{}`` are kept: JAX passes every leaf as its
    own parameter, so parameters are never tuples.
    """
    match = _HEADER_ALIAS.search(header)
    if match is None:
        return ()
    out = []
    for output, parameter, param_index, kind in _ENTRY.findall(match.group(1)):
        if param_index.strip():
            continue
        index = tuple(int(i) for i in output.replace(" ", "").split(",") if i)
        out.append((index, int(parameter), kind))
    return tuple(out)


def buffer_aliases(
    traced: Any, lowered: Any, compiled: Any, plan: CallPlan
) -> tuple[BufferAlias, ...]:
    """The executable's input/output aliases, named by argument and output pytree paths."""
    import jax

    entries = parse_input_output_alias(jaxapi.compiled_module_header(compiled))
    if not entries:
        return ()
    inputs = _input_paths(traced, lowered, plan, jax)
    flat_out = jax.tree_util.tree_flatten_with_path(traced.out_info)[0]
    outputs = [jax.tree_util.keystr(path) for path, _ in flat_out]
    aliases = []
    for index, parameter, kind in entries:
        output = _output_path(index, outputs)
        argument = inputs[parameter] if parameter < len(inputs) else None
        aliases.append(BufferAlias(output, parameter, argument, kind))
    return tuple(aliases)


def _output_path(index: tuple[int, ...], outputs: list[str]) -> str:
    if not index:
        return "result" if len(outputs) == 1 else "result{}"
    if len(index) == 1 and index[0] < len(outputs):
        return f"result{outputs[index[0]]}" if len(outputs) > 1 else "result"
    return "result{" + ",".join(str(i) for i in index) + "}"


def _input_paths(traced: Any, lowered: Any, plan: CallPlan, jax: Any) -> list[str | None]:
    """Readable path of each HLO parameter, e.g. ``params['w']``; JAX drops unused arguments."""
    positional = [a.name for a in plan.dynamic if not a.keyword]
    paths: list[str] = []
    # Flatten (args, kwargs) whole: JAX orders the parameters that way, kwargs by sorted key.
    for path, _ in jax.tree_util.tree_flatten_with_path(traced.args_info)[0]:
        group, top, *rest = path
        name = positional[top.idx] if group.idx == 0 else str(top.key)
        paths.append(f"{name}{jax.tree_util.keystr(tuple(rest))}")
    kept = jaxapi.kept_argument_indices(lowered)
    return [paths[i] if i < len(paths) else None for i in kept]
