"""Strip what varies between runs (names, locations) from stage texts, keeping every real change.

Normalization keeps instruction order, ``.N`` suffixes, layouts, ``backend_config`` and
constants: stripping any of them can hide a real change (see docs/snapshots.md).
"""

from __future__ import annotations

import re

# Source tables printed ahead of the computations when metadata printing is on.
_TABLES = re.compile(
    r"^(?:FileNames|FunctionNames|FileLocations|StackFrames)\n(?:[^\n]+\n)*\n?", re.M
)
_METADATA = re.compile(r', metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
_HLO_MODULE = re.compile(r"^HloModule [^,\s]+", re.M)
_ENTRY = re.compile(r"^ENTRY .*?^\}", re.M | re.S)
_PARAMETER = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*? parameter\((\d+)\)", re.M)
_MLIR_MODULE = re.compile(r"^module @\S+", re.M)
_MLIR_LOC_DEF = re.compile(r"^#loc\d* = loc\(.*\)\n", re.M)
_MLIR_LOC = re.compile(r' loc\((?:[^()"]|"(?:[^"\\]|\\.)*"|\((?:[^()"]|"[^"]*")*\))*\)')

#: Module name every normalized text uses, whatever the function was called.
MODULE_NAME = "m"


def normalize_jaxpr(text: str) -> str:
    """A jaxpr printed by JAX names no files, functions or arguments; only the ending is fixed."""
    return _one_trailing_newline(text)


def normalize_stablehlo(text: str) -> str:
    """StableHLO without locations and with the module named ``@m`` instead of ``@jit_<fn>``."""
    text = _MLIR_LOC.sub("", _MLIR_LOC_DEF.sub("", text))
    return _one_trailing_newline(_MLIR_MODULE.sub(f"module @{MODULE_NAME}", text, count=1))


def normalize_hlo(text: str) -> str:
    """HLO without source tables and metadata, module ``m``, entry parameters ``argK``.

    Entry parameter names come from Python argument names (``%x.1``, ``%params_w1_.3``), so a
    renamed argument would otherwise change the text; they are renamed inside ENTRY only.
    """
    text = _METADATA.sub("", _TABLES.sub("", text))
    text = _HLO_MODULE.sub(f"HloModule {MODULE_NAME}", text, count=1)
    entry = _ENTRY.search(text)
    if entry is not None:
        block = _rename_parameters(entry.group(0))
        text = text[: entry.start()] + block + text[entry.end() :]
    return _one_trailing_newline(text)


def hlo_parameter_names(text: str) -> tuple[str, ...]:
    """Entry parameter names of an HLO text in parameter order (kept as provenance)."""
    entry = _ENTRY.search(text)
    if entry is None:
        return ()
    found = sorted((int(k), name) for name, k in _PARAMETER.findall(entry.group(0)))
    return tuple(name for _, name in found)


def _rename_parameters(block: str) -> str:
    mapping = {name: f"arg{k}" for name, k in _PARAMETER.findall(block)}
    if not mapping:
        return block
    names = "|".join(re.escape(n) for n in sorted(mapping, key=len, reverse=True))
    token = re.compile(rf"(?<![\w.\-])({names})(?![\w.\-])")
    return token.sub(lambda m: mapping[m.group(1)], block)


def _one_trailing_newline(text: str) -> str:
    return text.rstrip("\n") + "\n"
