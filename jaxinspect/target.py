"""Resolve ``file.py:name`` or ``package.module:name`` targets to a Python callable."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxinspect.errors import StageError, TargetError
from jaxinspect.suggest import did_you_mean


@dataclass(frozen=True, slots=True)
class TargetRef:
    """A parsed target: where the module comes from and the attribute path inside it."""

    spec: str
    module: str
    attribute: tuple[str, ...]
    is_file: bool

    @property
    def display_name(self) -> str:
        """The attribute path as written, e.g. ``model.apply``."""
        return ".".join(self.attribute)


@dataclass(frozen=True, slots=True)
class LoadedTarget:
    """A target resolved to its callable, and the file the user's code lives in (if known)."""

    ref: TargetRef
    function: Callable[..., Any]
    source_file: str | None


def parse_target(text: str) -> TargetRef:
    """Split ``path/to/file.py:attr.path`` or ``pkg.module:attr.path``.

    Raises:
        TargetError: The text has no ``:name`` part or an invalid attribute path.
    """
    module, sep, attr = text.rpartition(":")
    # A Windows drive letter ("C:\\x.py") has no attribute part after the last colon.
    if not sep or not module or not attr or "/" in attr or "\\" in attr:
        raise TargetError(
            f"target {text!r}: expected FILE.py:NAME or package.module:NAME, "
            "e.g. sample_programs/mlp.py:predict"
        )
    parts = tuple(attr.split("."))
    if not all(p.isidentifier() for p in parts):
        raise TargetError(f"target {text!r}: {attr!r} is not a dotted attribute path")
    is_file = module.endswith(".py") or "/" in module or "\\" in module
    return TargetRef(spec=text, module=module, attribute=parts, is_file=is_file)


def load_target(text: str) -> LoadedTarget:
    """Import the target's module and walk its attribute path to a callable.

    Raises:
        TargetError: The file, module or attribute does not exist or is not callable.
        StageError: Importing the user's module raised (stage ``import``).
    """
    ref = parse_target(text)
    module = _import_file(ref) if ref.is_file else _import_module(ref)
    obj: Any = module
    walked: list[str] = []
    for part in ref.attribute:
        if not hasattr(obj, part):
            owner = ".".join(walked) or f"module {ref.module}"
            names = [
                n
                for n in dir(obj)
                if not n.startswith("_") and not isinstance(getattr(obj, n, None), ModuleType)
            ]
            raise TargetError(
                f"target {text!r}: {owner} has no attribute {part!r}{did_you_mean(part, names)}"
            )
        obj = getattr(obj, part)
        walked.append(part)
    if not callable(obj):
        raise TargetError(
            f"target {text!r}: {ref.display_name} is a {type(obj).__name__}, not a callable"
        )
    return LoadedTarget(ref=ref, function=obj, source_file=getattr(module, "__file__", None))


def _import_file(ref: TargetRef) -> ModuleType:
    path = Path(ref.module)
    if not path.is_file():
        folder = path.parent if path.parent.is_dir() else None
        hint = ""
        if folder is not None:
            hint = did_you_mean(path.name, [p.name for p in folder.glob("*.py")])
        raise TargetError(f"target {ref.spec!r}: file {str(path)!r} not found{hint}")
    path = path.resolve()
    # The file's own folder goes first on sys.path so a sample can import its neighbours.
    folder_str = str(path.parent)
    if folder_str not in sys.path:
        sys.path.insert(0, folder_str)
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None:
        if getattr(existing, "__file__", None) == str(path):
            return existing
        # Another module owns this name (e.g. a file called json.py): load under a private name.
        name = f"_jaxinspect_target_{abs(hash(str(path)))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"target {ref.spec!r}: cannot import {str(path)!r} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise _import_failure(ref, exc) from exc
    return module


def _import_module(ref: TargetRef) -> ModuleType:
    try:
        return importlib.import_module(ref.module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and ref.module.startswith(exc.name):
            raise TargetError(
                f"target {ref.spec!r}: module {exc.name!r} not found",
                hint="Use a path ending in .py for a file, or install the package.",
            ) from None
        raise _import_failure(ref, exc) from exc
    except Exception as exc:
        raise _import_failure(ref, exc) from exc


def _import_failure(ref: TargetRef, exc: BaseException) -> StageError:
    from jaxinspect.errtrace import format_user_failure

    return StageError("import", format_user_failure("import", ref.spec, exc))
