"""Pick the JAX platform to compile for, and report what is available when it is not."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import jax

from jaxinspect import jaxapi
from jaxinspect.errors import UsageError
from jaxinspect.inputs.limits import MAX_CPU_DEVICES
from jaxinspect.process.nativelog import libtpu_installed, quiet_native_stderr


def available_platforms() -> list[str]:
    """Platforms JAX can use in this process (initializes the backends)."""
    return jaxapi.backend_platforms()


def select_device(backend: str | None) -> Any:
    """The first device of ``backend`` (JAX's default backend when ``None``).

    Raises:
        UsageError: The backend is unknown or has no devices here, listing the available ones.
    """
    if backend is None:
        return _quiet_devices()[0]
    try:
        with quiet_native_stderr() if libtpu_installed() else nullcontext():
            return jax.devices(backend)[0]
    except RuntimeError:
        available = ", ".join(available_platforms())
        raise UsageError(
            f"--backend {backend}: not available in this process; available: {available}",
            hint="Install the matching jaxlib plugin (e.g. jax[cuda12]) or pick an available one.",
        ) from None


def _quiet_devices() -> list[Any]:
    """``jax.devices()``, with libtpu's start-up warnings kept off the terminal."""
    if not libtpu_installed():
        return list(jax.devices())
    with quiet_native_stderr():
        return list(jax.devices())


def select_devices(backend: str | None, count: int) -> tuple[Any, ...]:
    """The first ``count`` devices of ``backend`` (JAX's default backend when ``None``).

    Raises:
        UsageError: The backend is unavailable or has fewer than ``count`` devices.
    """
    first = select_device(backend)
    devices = tuple(jax.devices(first.platform))
    if len(devices) < count:
        raise UsageError(
            f"the run needs {count} {first.platform} devices; this process has {len(devices)}",
            hint="On CPU, --devices N sets them up; on GPU/TPU, use a machine with more.",
        )
    return devices[:count]


def reserve_cpu_devices(count: int) -> None:
    """Have JAX start its CPU backend with at least ``count`` devices.

    The number is fixed when the backend starts; asked for later, the devices already there
    must be enough (a test process set up with more serves any smaller count).

    Raises:
        UsageError: The CPU backend already started with fewer devices.
    """
    if count <= 1:
        return
    if count > MAX_CPU_DEVICES:
        raise UsageError(
            f"the run needs {count:,} CPU devices; jaxinspect sets up at most "
            f"{MAX_CPU_DEVICES:,} on CPU",
            hint="Use a smaller mesh or --devices, or --topology to compile for a TPU slice.",
        )
    try:
        current = jax.config.jax_num_cpu_devices
        if current is None or current < count:
            jax.config.update("jax_num_cpu_devices", count)
        return
    except RuntimeError:  # the backend already started: see what it has
        pass
    have = len(jax.devices("cpu"))
    if have < count:
        raise UsageError(
            f"--devices {count}: JAX's CPU backend already started in this process "
            f"with {have} device{'s' if have != 1 else ''}",
            hint="Set jax.config.update('jax_num_cpu_devices', N) before JAX first runs.",
        )


def describe_device(device: Any) -> str:
    """A one-line description such as ``cpu:0 (cpu)``."""
    return f"{device.platform}:{device.id} ({device.device_kind})"


def compiled_devices(compiled: Any | None, fallback: Any) -> list[Any]:
    """The devices the executable was actually compiled for, read back from XLA.

    Before compilation (or where the runtime does not say), the devices that were asked for
    (``fallback``: one device or a sequence of them).
    """
    devices = None if compiled is None else jaxapi.executable_devices(compiled)
    if devices:
        return list(devices)
    return list(fallback) if isinstance(fallback, tuple | list) else [fallback]
