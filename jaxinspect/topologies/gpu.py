"""NVIDIA GPUs compiled for from any host, through JAX's CUDA plugin (``jaxinspect[cuda]``).

The plugin describes GPUs it has never seen from a ``GpuTargetConfigProto`` (the device's
limits, in protobuf text) and a ``PxHxD`` topology (partitions × hosts × GPUs per host); XLA
then builds the real GPU executable (Triton fusions, cuBLAS/cuDNN calls, the partitioner's
collectives, memory per GPU) without a driver. Without a GPU XLA does not autotune: kernel
choices are its defaults, so structure and memory are real, kernel speed is not.

Names read like the TPU slices': ``h100:8`` (one host of 8), ``a100-80gb:2x8`` (2 hosts of 8);
the model may be a config file of the user's own (``my_gpu.txtpb:8``, or ``--gpu-config``).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from jaxinspect.errors import UsageError
from jaxinspect.process.nativelog import quiet_native_stderr
from jaxinspect.suggest import did_you_mean
from jaxinspect.topologies.report import GpuModelInfo

#: Shipped configs by model name, with the aliases people use (``a100`` is the 80 GB SXM).
MODELS = {
    "h100": "h100_sxm",
    "h100-sxm": "h100_sxm",
    "h100-pcie": "h100_pcie",
    "h200": "h200",
    "b200": "b200",
    "a100": "a100_sxm_80",
    "a100-80gb": "a100_sxm_80",
    "a100-40gb": "a100_sxm_40",
    "l4": "l4",
}
#: One name per shipped config, as ``jaxinspect topologies`` lists them.
LISTED = ("h100", "h100-pcie", "h200", "b200", "a100-80gb", "a100-40gb", "l4")

_NAME = re.compile(r"^(?P<model>.+):(?:(?P<hosts>\d+)x)?(?P<gpus>\d+)$")
#: Fields without which XLA divides by zero (SIGFPE) or refuses every kernel; checked first.
REQUIRED = (
    "threads_per_block_limit",
    "threads_per_warp",
    "shared_memory_per_block",
    "shared_memory_per_core",
    "threads_per_core_limit",
    "core_count",
    "block_dim_limit_x",
    "block_dim_limit_y",
    "block_dim_limit_z",
    "shared_memory_per_block_optin",
    "device_memory_size",
    "registers_per_core_limit",
    "registers_per_block_limit",
)
_EXTRA = 'pip install "jaxinspect[cuda]"'
CAVEAT = (
    "compiled without a GPU: XLA did not autotune, so Triton/cuBLAS kernel choices are its "
    "defaults; graph, fusion, collectives and memory are real, kernel speed is not"
)


@dataclass(frozen=True, slots=True)
class GpuConfig:
    """One GPU model's target config, with the figures the reports and listing show."""

    text: str  # the GpuTargetConfigProto as protobuf text, comments included
    description: str  # device_description_str: "NVIDIA H100 80GB HBM3"
    memory_bytes: int
    bandwidth_bytes_per_s: int | None
    compute_capability: str  # "9.0"
    source: str  # where the figures come from (the file's "# Source:" line, or its path)


@dataclass(frozen=True, slots=True)
class GpuTarget:
    """A parsed ``MODEL:[HOSTSx]GPUS`` name."""

    name: str
    hosts: int
    gpus_per_host: int
    config: GpuConfig

    @property
    def plugin_topology(self) -> str:
        """The CUDA plugin's ``PxHxD`` string: one partition of ``hosts`` × ``gpus``."""
        return f"1x{self.hosts}x{self.gpus_per_host}"


def looks_like_gpu(name: str) -> bool:
    """Whether ``name`` names a GPU target (a known model or a ``.txtpb`` file before ``:``)."""
    model = name.rpartition(":")[0].strip().lower()
    return model in MODELS or model.endswith(".txtpb")


def parse_target(name: str) -> GpuTarget:
    """The model, host and GPU counts and config of ``name``.

    Raises:
        UsageError: the name does not parse, the model is unknown, or its config is unusable.
    """
    match = _NAME.match(name.strip())
    if match is None:
        raise UsageError(
            f"--topology {name!r}: a GPU target is MODEL:GPUS or MODEL:HOSTSxGPUS, "
            "e.g. h100:8 or a100-80gb:2x8",
            hint="`jaxinspect topologies` lists the GPU models.",
        )
    model = match["model"].strip()
    hosts, gpus = int(match["hosts"] or 1), int(match["gpus"])
    if hosts < 1 or gpus < 1:
        raise UsageError(f"--topology {name}: hosts and GPUs per host must be at least 1")
    if model.lower().endswith(".txtpb"):
        config = load_config_file(Path(model))
    elif model.lower() in MODELS:
        config = shipped_config(MODELS[model.lower()])
    else:
        raise UsageError(
            f"--topology {name}: unknown GPU model {model!r}; known: {', '.join(LISTED)}"
            f"{did_you_mean(model.lower(), tuple(MODELS))}",
            hint="Give your own target config as FILE.txtpb:GPUS (or --gpu-config FILE.txtpb).",
        )
    return GpuTarget(name, hosts, gpus, config)


@functools.cache
def shipped_config(stem: str) -> GpuConfig:
    """The config shipped as package data (``jaxinspect/gpus/STEM.txtpb``)."""
    text = resources.files("jaxinspect").joinpath("gpus", f"{stem}.txtpb").read_text()
    return parse_config(text, f"jaxinspect/gpus/{stem}.txtpb")


def load_config_file(path: Path) -> GpuConfig:
    """A user's target config file, checked before the plugin ever sees it.

    Raises:
        UsageError: the file cannot be read or lacks a required field.
    """
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--gpu-config {path}: cannot read it ({exc})") from None
    return parse_config(text, str(path))


def parse_config(text: str, where: str) -> GpuConfig:
    """The figures of a ``GpuTargetConfigProto`` text, its required fields checked.

    XLA divides by ``threads_per_warp`` and ``block_dim_limit_x`` and sizes every kernel by
    the shared-memory limits: a missing or zero value kills the process with SIGFPE or fails
    each fusion, so a config is refused here first, naming the fields.

    Raises:
        UsageError: a required field is missing or zero, or the platform is not CUDA.
    """
    values = {k: int(v) for k, v in re.findall(r"^\s*(\w+)\s*:\s*(\d+)\s*$", text, re.M)}
    missing = [f for f in REQUIRED if not values.get(f)]
    capability = re.search(r"cuda_compute_capability\s*\{([^}]*)\}", text)
    major = re.search(r"major\s*:\s*(\d+)", capability[1]) if capability else None
    if major is None or not int(major[1]):
        missing.append("cuda_compute_capability.major")
    if missing:
        raise UsageError(
            f"GPU target config {where}: missing or zero: {', '.join(missing)}",
            hint="Start from one of jaxinspect/gpus/*.txtpb (XLA's spec files have them all).",
        )
    if not re.search(r'^platform_name\s*:\s*"CUDA"', text, re.M):
        raise UsageError(f'GPU target config {where}: platform_name must be "CUDA"')
    assert capability is not None and major is not None  # both checked above
    minor = re.search(r"minor\s*:\s*(\d+)", capability[1])
    description = re.search(r'^device_description_str\s*:\s*"([^"]*)"', text, re.M)
    source = re.search(r"^#\s*Source:\s*(.+)$", text, re.M)
    return GpuConfig(
        text=text,
        description=description[1] if description else where,
        memory_bytes=values["device_memory_size"],
        bandwidth_bytes_per_s=values.get("memory_bandwidth"),
        compute_capability=f"{major[1]}.{minor[1] if minor else 0}",
        source=source[1].strip() if source else where,
    )


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (its parent package missing too: ``False``)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def missing_pieces() -> str | None:
    """What to install before a GPU compile can work here, or ``None``."""
    if not installed("jax_plugins.xla_cuda12"):
        return f"compiling for a GPU needs JAX's CUDA plugin: {_EXTRA}"
    if not installed("nvidia.cuda_nvcc"):
        return (
            "compiling for a GPU needs ptxas and libdevice: pip install nvidia-cuda-nvcc-cu12 "
            f"(part of {_EXTRA})"
        )
    return None


def keep_cuda_uninitialized() -> None:
    """Leave CUDA out of the platforms JAX starts, before its backends start.

    With CUDA among them, the plugin calls ``cuInit`` at start-up; on a host without a
    driver that fails and the plugin is dropped, topology and all. Left out, the plugin is
    still registered and describes GPUs from a config. ``JAX_PLATFORMS`` unset becomes
    ``cpu``; a value the user set keeps its other platforms. Nothing is changed once the
    backends are up.
    """
    import jax

    from jaxinspect import jaxapi

    if jaxapi.backends_started():
        return
    current = [p.strip() for p in str(jax.config.jax_platforms or "").split(",") if p.strip()]
    if current and not {"cuda", "gpu"} & set(current):
        return
    # Unset: CPU alone. Naming tpu would make a host without one fail to start, and a TPU
    # slice is described through libtpu directly, whatever the platforms.
    kept = [p for p in current if p not in ("cuda", "gpu", "rocm")] or ["cpu"]
    jax.config.update("jax_platforms", ",".join(kept))


def gpu_devices(name: str) -> tuple[Any, ...]:
    """The compile-only devices of GPU target ``name``, described by the CUDA plugin.

    Raises:
        UsageError: a piece is missing (naming it), the name or config is wrong, or the
            plugin could not be registered in this process.
    """
    target = parse_target(name)
    missing = missing_pieces()
    if missing is not None:
        raise UsageError(f"--topology {name}: {missing}")
    return _describe(target.config.text, target.plugin_topology, name)


@functools.cache
def _describe(config: str, topology: str, name: str) -> tuple[Any, ...]:
    from jax.experimental import topologies

    from jaxinspect import jaxapi

    keep_cuda_uninitialized()
    with quiet_native_stderr():  # the plugin's "Could not find cuda drivers" lines
        jaxapi.discover_plugins()
        if not jaxapi.cuda_topology_registered():
            # JAX started CUDA before jaxinspect could keep it out, cuInit failed and the
            # plugin was dropped: its topology factory alone is all a compile needs.
            try:
                jaxapi.register_cuda_topology()
            except Exception as exc:
                raise UsageError(
                    f"--topology {name}: JAX's CUDA plugin could not be registered in this "
                    f"process: {exc}",
                    hint="Run with JAX_PLATFORMS=cpu.",
                ) from None
        try:
            description = topologies.get_topology_desc(
                platform="cuda", topology=topology, target_config=config
            )
        except Exception as exc:  # jaxlib's JaxRuntimeError: the plugin refused the config
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise UsageError(f"--topology {name}: the CUDA plugin refuses it: {first}") from None
    return tuple(description.devices)


def device_capacity(devices: tuple[Any, ...] | list[Any]) -> tuple[int | None, str] | None:
    """HBM of one GPU of a described target, and its source; ``None`` for other devices."""
    config = _BY_KIND.get(str(devices[0].device_kind))
    if devices[0].platform != "gpu" or config is None:
        return None
    return config.memory_bytes, f"{config.description}: {config.source}"


#: The config of each GPU kind described in this process (``device_kind`` is the config's
#: ``device_description_str``), for the memory fit.
_BY_KIND: dict[str, GpuConfig] = {}


def describe_target(name: str) -> tuple[Any, ...]:
    """``gpu_devices(name)``, remembering the config of the kind for the memory fit."""
    devices = gpu_devices(name)
    _BY_KIND[str(devices[0].device_kind)] = parse_target(name).config
    return devices


def target_phrase(name: str) -> str:
    """``the GPU target h100:8`` or ``the TPU slice v5e:2x2``, for messages about a topology."""
    return f"the {'GPU target' if looks_like_gpu(name) else 'TPU slice'} {name}"


def topology_caveat(topology: str | None) -> str | None:
    """The no-autotuning caveat for a GPU target; ``None`` for anything else."""
    return CAVEAT if topology is not None and looks_like_gpu(topology) else None


def model_infos() -> tuple[GpuModelInfo, ...]:
    """One row per shipped GPU model, for ``jaxinspect topologies`` (no plugin needed)."""
    rows = []
    for name in LISTED:
        config = shipped_config(MODELS[name])
        rows.append(
            GpuModelInfo(
                name=name,
                kind=config.description,
                hbm_bytes=config.memory_bytes,
                bandwidth_bytes_per_s=config.bandwidth_bytes_per_s,
                compute_capability=config.compute_capability,
                source=config.source,
            )
        )
    return tuple(rows)
