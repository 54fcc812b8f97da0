"""Whose Python frames count as the user's when costs are put on source lines (``--user-code``)."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from jaxinspect import jaxapi
from jaxinspect.errors import UsageError
from jaxinspect.jsonfields import js

# A package installed inside the user's folder (a project's .venv) is a library, not theirs.
_INSTALLED = re.compile(r"/(site|dist)-packages/")
# Packages whose frames are never the user's unless named with --user-code.
_HARNESS = ("jax", "jaxlib", "typer", "click", "rich", "_pytest", "pytest", "pluggy")


@dataclass(frozen=True, slots=True)
class UserCode:
    """The files and folders whose frames are the user's, and the libraries that never are.

    An instruction is put on its innermost frame under a root. Without one in its call
    chain, it falls back to its innermost frame outside ``libraries`` (and ``<frozen ...>``).
    """

    #: Resolved files, or folders ending in ``/``; empty means only the fallback applies.
    roots: tuple[str, ...]
    #: Folders (ending in ``/``) of JAX, jaxlib, jaxinspect and its harness.
    libraries: tuple[str, ...] = field(default=(), metadata=js(omit=True))
    #: The roots came from ``--user-code`` (not the target's folder by default).
    chosen: bool = False

    def owns(self, file: str) -> bool:
        """True when ``file`` is under a root and not a library installed below that root."""
        if file.startswith("<"):
            return False
        real = _real(file)
        for root in self.roots:
            if not root.endswith("/"):
                if real == root:
                    return True
                continue
            if not real.startswith(root) or _INSTALLED.search("/" + real[len(root) :]):
                continue
            nested = (lib for lib in self.libraries if lib != root and lib.startswith(root))
            if not any(real.startswith(lib) for lib in nested):
                return True
        return False

    def is_library(self, file: str) -> bool:
        """True for frames that are never the user's by default (JAX, jaxinspect, pytest...)."""
        return file.startswith("<") or _real(file).startswith(self.libraries)


@functools.lru_cache(maxsize=4096)
def _real(file: str) -> str:
    return os.path.realpath(file)


@contextmanager
def frames_recorded(user: UserCode) -> Iterator[None]:
    """While lowering, make JAX keep the frames of roots it would drop as its own.

    JAX writes only "user" frames into the HLO metadata and counts everything under its own
    folder as internal, so ``--user-code jax.example_libraries.stax`` would find no stax
    frame. JAX's inclusions take priority over its exclusions; they are added for the run
    and removed after it (``jaxapi.source_inclusions``).
    """
    import jax

    with jaxapi.source_inclusions(user.roots) as added:
        if added:  # a lowering cached in this process (tests, the pytest plugin) lacks the frames
            jax.clear_caches()
        yield


def library_prefixes() -> tuple[str, ...]:
    """Folders whose frames are never the user's by default: JAX, jaxlib, jaxinspect, harness."""
    out = [str(Path(__file__).resolve().parent.parent) + "/"]
    for name in _HARNESS:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            out.append(str(Path(spec.origin).resolve().parent) + "/")
    return tuple(out)


def default_user_code(target_file: str | None) -> UserCode:
    """The target's folder: its frames are the user's (no roots when the file is unknown)."""
    roots = () if target_file is None else (_folder(Path(target_file).resolve().parent),)
    return UserCode(roots, library_prefixes())


def resolve_user_code(values: Sequence[str], target_file: str | None) -> UserCode:
    """``--user-code`` values (paths, or importable packages and modules) as a ``UserCode``.

    No values means the default, the target's folder.

    Raises:
        UsageError: A value is neither an existing path nor an importable package or module.
    """
    if not values:
        return default_user_code(target_file)
    roots = tuple(dict.fromkeys(_root(v) for v in values))
    return UserCode(roots, library_prefixes(), chosen=True)


def _root(value: str) -> str:
    path = Path(value).expanduser()
    if path.exists():
        resolved = path.resolve()
        return _folder(resolved) if resolved.is_dir() else str(resolved)
    if not all(part.isidentifier() for part in value.split(".")):
        raise UsageError(f"--user-code {value!r}: no such file or folder")
    try:
        spec = importlib.util.find_spec(value)
    except (ImportError, ValueError):  # a parent package is missing or broken
        spec = None
    if spec is None:
        raise UsageError(
            f"--user-code {value!r}: no such file or folder, and no importable package "
            "or module of that name"
        )
    if spec.submodule_search_locations:  # a package: its folder
        return _folder(Path(next(iter(spec.submodule_search_locations))).resolve())
    if spec.origin is None:
        raise UsageError(f"--user-code {value!r}: the module has no source file")
    return str(Path(spec.origin).resolve())


def _folder(path: Path) -> str:
    return str(path).rstrip("/") + "/"
