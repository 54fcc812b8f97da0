"""The snapshot manifest: ``jaxinspect.yaml`` or ``[tool.jaxinspect]`` in ``pyproject.toml``.

Paths in a manifest are relative to the folder holding it. No jax import.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxinspect.errors import UsageError
from jaxinspect.inputs.limits import MAX_DEVICES
from jaxinspect.inputs.shardspec import MeshSpec, parse_mesh
from jaxinspect.inputs.yamlload import load_yaml
from jaxinspect.snapshot.store import safe_name
from jaxinspect.suggest import did_you_mean

YAML_NAME = "jaxinspect.yaml"
PYPROJECT_NAME = "pyproject.toml"
_TOP_KEYS = ("snapshot_dir", "fail_on", "targets")
_TARGET_KEYS = ("target", "name", "shapes", "args", "backend", "mesh", "devices", "topology")


@dataclass(frozen=True, slots=True)
class ManifestTarget:
    """One function to snapshot; ``shapes`` is an absolute path when given."""

    name: str
    target: str
    shapes: Path | None
    args: tuple[str, ...]
    backend: str | None
    #: Placement over the spec's own: a mesh, a number of devices, a TPU slice or GPU target.
    mesh: MeshSpec | None = None
    devices: int | None = None
    topology: str | None = None


@dataclass(frozen=True, slots=True)
class Manifest:
    """Targets, the folder their snapshots live in, and the default ``--fail-on`` rules."""

    source: Path
    snapshot_dir: Path
    targets: tuple[ManifestTarget, ...]
    fail_on: str | None


def find_manifest(start: Path) -> Path:
    """The nearest ``jaxinspect.yaml``, or ``pyproject.toml`` with ``[tool.jaxinspect]``.

    Searches ``start`` and then its parents; in one folder the YAML file wins.

    Raises:
        UsageError: No manifest is found.
    """
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / YAML_NAME).is_file():
            return folder / YAML_NAME
        pyproject = folder / PYPROJECT_NAME
        if pyproject.is_file() and "jaxinspect" in _read_toml(pyproject).get("tool", {}):
            return pyproject
    raise UsageError(
        f"no {YAML_NAME} or {PYPROJECT_NAME} with [tool.jaxinspect] in {start} or its parents",
        hint="Create one (see docs/snapshots.md) or pass --manifest PATH.",
    )


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest file.

    Raises:
        UsageError: The file is missing, malformed, or has unknown or invalid keys.
    """
    if not path.is_file():
        raise UsageError(f"manifest {path}: file not found")
    if path.suffix == ".toml":
        table = _read_toml(path).get("tool", {}).get("jaxinspect")
        if table is None:
            raise UsageError(f"manifest {path}: no [tool.jaxinspect] table")
        where = f"{path} [tool.jaxinspect]"
    else:
        table = _read_yaml(path)
        where = str(path)
    return _parse(table, path, where)


def _parse(table: Any, path: Path, where: str) -> Manifest:
    if not isinstance(table, Mapping):
        raise UsageError(f"manifest {where}: expected a table of settings")
    _check_keys(table, _TOP_KEYS, where)
    root = path.resolve().parent
    raw_targets = table.get("targets")
    if not isinstance(raw_targets, list) or not raw_targets:
        raise UsageError(f"manifest {where}: 'targets' must be a non-empty list of tables")
    targets = tuple(
        _parse_target(t, root, f"{where}: targets[{i}]") for i, t in enumerate(raw_targets)
    )
    seen: dict[str, str] = {}
    for t in targets:
        if t.name in seen:
            raise UsageError(
                f"manifest {where}: two targets share the snapshot name {t.name!r} "
                f"({seen[t.name]} and {t.target})",
                hint="Give one of them a distinct 'name'.",
            )
        seen[t.name] = t.target
    fail_on = table.get("fail_on")
    if fail_on is not None and not isinstance(fail_on, str):
        raise UsageError(f"manifest {where}: 'fail_on' must be a string like \"flops>+5%\"")
    snapshot_dir = _string(table.get("snapshot_dir", "snapshots"), f"{where}: snapshot_dir")
    return Manifest(path, root / snapshot_dir, targets, fail_on)


def _parse_target(raw: Any, root: Path, where: str) -> ManifestTarget:
    if isinstance(raw, str):
        raw = {"target": raw}
    if not isinstance(raw, Mapping):
        raise UsageError(f"manifest {where}: expected a table with 'target'")
    _check_keys(raw, _TARGET_KEYS, where)
    if "target" not in raw:
        raise UsageError(f"manifest {where}: missing 'target' (FILE.py:NAME)")
    target = _string(raw["target"], f"{where}.target")
    module, sep, attr = target.rpartition(":")
    if sep and (module.endswith(".py") or "/" in module):
        target = f"{root / module}:{attr}"
    if "name" in raw:
        name = _string(raw["name"], f"{where}.name")
        if safe_name(name) != name:
            raise UsageError(
                f"manifest {where}.name: {name!r} is not a safe file name",
                hint=f"Use letters, digits, '_', '-' and '.', e.g. {safe_name(name)!r}.",
            )
    else:  # derived from the target ("my model.py:f"): made safe, the user never wrote it
        name = safe_name(f"{Path(module).stem}_{attr}" if sep else target)
    shapes = raw.get("shapes")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"manifest {where}.args: expected a list of NAME=DTYPE[DIMS] strings")
    if shapes is not None and args:
        raise UsageError(f"manifest {where}: give either 'shapes' or 'args', not both")
    backend = raw.get("backend")
    devices = raw.get("devices")
    if devices is not None and (
        isinstance(devices, bool) or not isinstance(devices, int) or devices < 1
    ):
        raise UsageError(f"manifest {where}.devices: expected a positive number, not {devices!r}")
    if devices is not None and devices > MAX_DEVICES:
        raise UsageError(f"manifest {where}.devices: {devices} is more than {MAX_DEVICES:,}")
    topology = raw.get("topology")
    return ManifestTarget(
        name=name,
        target=target,
        shapes=None if shapes is None else root / _string(shapes, f"{where}.shapes"),
        args=tuple(args),
        backend=None if backend is None else _string(backend, f"{where}.backend"),
        mesh=None if "mesh" not in raw else parse_mesh(raw["mesh"], f"manifest {where}.mesh"),
        devices=devices,
        topology=None if topology is None else _string(topology, f"{where}.topology"),
    )


def _check_keys(table: Mapping[Any, Any], known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            raise UsageError(
                f"manifest {where}: unknown key {key!r}{did_you_mean(str(key), known)}",
                hint=f"known keys: {', '.join(known)}",
            )


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError(f"manifest {where}: expected a non-empty string, got {value!r}")
    return value


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"manifest {path}: {exc}") from None


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise UsageError(f"manifest {path}: {exc}") from None
    return load_yaml(text, source=f"manifest {path}")  # limits, duplicate keys: as specs
