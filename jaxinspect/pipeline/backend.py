"""Pick the JAX platform to compile for, and report what is available when it is not."""

from __future__ import annotations

from typing import Any

import jax

from jaxinspect import jaxapi
from jaxinspect.errors import UsageError


def available_platforms() -> list[str]:
    """Platforms JAX can use in this process (initializes the backends)."""
    return jaxapi.backend_platforms()


def select_device(backend: str | None) -> Any:
    """The first device of ``backend`` (JAX's default backend when ``None``).

    Raises:
        UsageError: The backend is unknown or has no devices here, listing the available ones.
    """
    if backend is None:
        return jax.devices()[0]
    try:
        return jax.devices(backend)[0]
    except RuntimeError:
        available = ", ".join(available_platforms())
        raise UsageError(
            f"--backend {backend}: not available in this process; available: {available}",
            hint="Install the matching jaxlib plugin (e.g. jax[cuda12]) or pick an available one.",
        ) from None


def describe_device(device: Any) -> str:
    """A one-line description such as ``cpu:0 (cpu)``."""
    return f"{device.platform}:{device.id} ({device.device_kind})"


def compiled_devices(compiled: Any | None, fallback: Any) -> list[Any]:
    """The devices the executable was actually compiled for, read back from XLA.

    Before compilation (or where the runtime does not say), the device that was asked for.
    """
    devices = None if compiled is None else jaxapi.executable_devices(compiled)
    return devices or [fallback]
