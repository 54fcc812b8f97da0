"""Resolve ``file.py:name`` or ``package.module:name`` targets to a Python callable."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxinspect.errors import StageError, TargetError
from jaxinspect.process.nativelog import start_libtpu_quietly
from jaxinspect.process.usercode import user_code
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
    # The module may start JAX's backends at import; with libtpu installed that prints
    # libtpu's start-up warnings unless it was started quietly first.
    start_libtpu_quietly()
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
        raise _missing_file(ref, path)
    path = path.resolve()
    if not os.access(path, os.R_OK):
        raise TargetError(f"target {ref.spec!r}: cannot read {str(path)!r} (permission denied)")
    # The file's folder goes LAST on sys.path, as with pytest's --import-mode=append: the
    # target can import its neighbours, but a neighbour named like one of jaxinspect's own
    # dependencies (rich.py, yaml.py) cannot shadow it for the rest of the run.
    folder_str = str(path.parent)
    if folder_str not in sys.path:
        sys.path.append(folder_str)
    name = _module_name(path)
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__file__", None) == str(path):
        return existing
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"target {ref.spec!r}: cannot import {str(path)!r} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with user_code("import", ref.spec):
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _module_name(path: Path) -> str:
    """The name to import ``path`` under: its stem, unless that names another module.

    A file called ``json.py`` or ``rich.py`` registered as ``json`` or ``rich`` would replace
    that module for everything imported later, jaxinspect's own imports included.
    """
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None:
        if getattr(existing, "__file__", None) == str(path):
            return name
    elif name.isidentifier() and not _importable_elsewhere(name, path):
        return name
    return f"_jaxinspect_target_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}_{path.stem}"


def _importable_elsewhere(name: str, path: Path) -> bool:
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return found is not None and found.origin != str(path)


def _missing_file(ref: TargetRef, path: Path) -> TargetError:
    """Why ``path`` is not a Python file to import, with a near name only if one differs."""
    where = f"target {ref.spec!r}"
    if path.is_dir():
        return TargetError(f"{where}: {str(path)!r} is a folder, not a Python file")
    if path.is_symlink():
        return TargetError(
            f"{where}: {str(path)!r} is a symbolic link to {os.readlink(path)!r}, "
            "which does not exist"
        )
    if path.exists():
        return TargetError(f"{where}: {str(path)!r} is not a regular file")
    hint = ""
    folder = path.parent
    if folder.is_dir():
        with contextlib.suppress(OSError):
            names = [p.name for p in folder.glob("*.py") if p.is_file() and p.name != path.name]
            hint = did_you_mean(path.name, names)
    return TargetError(f"{where}: file {str(path)!r} not found{hint}")


def _import_module(ref: TargetRef) -> ModuleType:
    parts = ref.module.split(".")
    if not all(p.isidentifier() for p in parts):
        relative = ref.module.startswith(".")
        raise TargetError(
            f"target {ref.spec!r}: {ref.module!r} is "
            + ("a relative module name" if relative else "not a module name or a .py path"),
            hint="Write package.module:NAME with the full dotted name, or path/to/file.py:NAME.",
        )
    try:
        with user_code("import", ref.spec):
            return importlib.import_module(ref.module)
    except StageError as err:
        missing = err.__cause__
        if (
            isinstance(missing, ModuleNotFoundError)
            and missing.name is not None
            and ref.module.startswith(missing.name)
        ):
            raise TargetError(
                f"target {ref.spec!r}: module {missing.name!r} not found",
                hint="Use a path ending in .py for a file, or install the package.",
            ) from None
        raise


def function_target(function: Callable[..., Any]) -> LoadedTarget:
    """A ``LoadedTarget`` for a function given in Python (the pytest fixture, the hash-seed
    probe), named by its module and qualname."""
    module = getattr(function, "__module__", None) or "__main__"
    qualname = str(getattr(function, "__qualname__", None) or getattr(function, "__name__", "fn"))
    ref = TargetRef(
        spec=f"{module}:{qualname}",
        module=module,
        attribute=tuple(qualname.split(".")),
        is_file=False,
    )
    try:
        source = inspect.getsourcefile(function)
    except TypeError:
        source = None
    return LoadedTarget(ref=ref, function=function, source_file=source)
