"""Built-in device profiles for the roofline model: vendor peak FLOP/s, bandwidth and capacity."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.errors import UsageError
from jaxinspect.jsonfields import js
from jaxinspect.suggest import did_you_mean

#: A ceiling: above zero.
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """Peak dense FLOP/s per element type, memory bandwidth and capacity of one device.

    Figures are vendor datasheet peaks (dense, without sparsity), or derived from the
    datasheet as ``source`` explains; they are ceilings no program reaches.
    """

    name: str
    description: str
    #: HLO element type -> FLOP/s.
    peak_flops: tuple[tuple[str, float], ...] = field(
        metadata=js(mapping=True, schema={"additionalProperties": _POSITIVE})
    )
    bandwidth_bytes_s: float = field(metadata=js(schema=_POSITIVE))
    memory_bytes: int | None
    source: str
    #: JAX's ``device_kind`` strings of this device, so a compiled program finds its chip.
    device_kinds: tuple[str, ...] = field(default=(), metadata=js(omit=True))
    #: The public page the figures are read from, where there is one.
    url: str | None = field(default=None, metadata=js(omit=True))
    #: TensorCores per chip (two on TPU v3, v4, v5p): a device of one core holds half the HBM.
    tensorcores: int = field(default=1, metadata=js(omit=True))

    def peak_for(self, dtype: str | None) -> tuple[float, str]:
        """Peak FLOP/s for ``dtype`` and the element type it was read for (f32 as fallback)."""
        table = dict(self.peak_flops)
        if dtype in table:
            return table[dtype], dtype
        return table["f32"], "f32"


_GB = 10**9
_GIB = 1024**3
#: Google's page per Cloud TPU generation: each has a table of the chip's key figures.
_TPU_DOCS = "https://cloud.google.com/tpu/docs/"

PROFILES: tuple[DeviceProfile, ...] = (
    DeviceProfile(
        "h100",
        "NVIDIA H100 SXM5 80GB",
        (("bf16", 989e12), ("f16", 989e12), ("f32", 67e12), ("f64", 67e12), ("s8", 1979e12)),
        3.35e12,
        80 * _GB,
        "NVIDIA H100 Tensor Core GPU datasheet (dense Tensor Core FP16/BF16/FP64/INT8; FP32 "
        "is the non-tensor CUDA-core figure)",
        ("NVIDIA H100 80GB HBM3",),
    ),
    DeviceProfile(
        "h200",
        "NVIDIA H200 SXM 141GB",
        (("bf16", 989e12), ("f16", 989e12), ("f32", 67e12), ("f64", 67e12), ("s8", 1979e12)),
        4.8e12,
        141 * _GB,
        "NVIDIA H200 Tensor Core GPU datasheet (dense figures; same compute as H100 SXM)",
        ("NVIDIA H200",),
    ),
    DeviceProfile(
        "a100",
        "NVIDIA A100 SXM4 80GB",
        (("bf16", 312e12), ("f16", 312e12), ("f32", 19.5e12), ("f64", 19.5e12), ("s8", 624e12)),
        2.039e12,
        80 * _GB,
        "NVIDIA A100 Tensor Core GPU datasheet (dense; FP64 is the Tensor Core figure, FP32 "
        "the non-tensor figure)",
        ("NVIDIA A100-SXM4-80GB",),
    ),
    DeviceProfile(
        "tpu-v3",
        "Google Cloud TPU v3 (one chip, two cores)",
        (("bf16", 123e12), ("f32", 123e12 / 4)),
        900 * _GB,
        32 * _GIB,
        f"Google Cloud TPU v3 documentation ({_TPU_DOCS}v3): 123 TFLOP/s bf16, 900 GB/s HBM, "
        "32 GiB per chip; f32 assumed at 1/4 of bf16, an estimate",
        ("TPU v3",),
        f"{_TPU_DOCS}v3",
        tensorcores=2,
    ),
    DeviceProfile(
        "tpu-v4",
        "Google Cloud TPU v4 (one chip)",
        (("bf16", 275e12), ("f32", 275e12 / 4), ("s8", 275e12)),
        1.2e12,
        32 * _GIB,
        f"Google Cloud TPU v4 documentation ({_TPU_DOCS}v4): 275 TFLOP/s bf16 or int8, "
        "1200 GB/s HBM, 32 GiB per chip; f32 assumed at 1/4 of bf16 (multi-pass matmul), "
        "an estimate",
        ("TPU v4",),
        f"{_TPU_DOCS}v4",
        tensorcores=2,
    ),
    DeviceProfile(
        "tpu-v5e",
        "Google Cloud TPU v5e (one chip)",
        (("bf16", 197e12), ("f32", 197e12 / 4), ("s8", 393e12)),
        819 * _GB,
        16 * _GB,
        f"Google Cloud TPU v5e documentation ({_TPU_DOCS}v5e): 197 TFLOP/s bf16, 393 TOP/s "
        "int8, 819 GB/s HBM, 16 GB per chip; f32 assumed at 1/4 of bf16, an estimate",
        ("TPU v5 lite", "TPU v5e"),
        f"{_TPU_DOCS}v5e",
    ),
    DeviceProfile(
        "tpu-v5p",
        "Google Cloud TPU v5p (one chip)",
        (("bf16", 459e12), ("f32", 459e12 / 4), ("s8", 918e12)),
        2765 * _GB,
        95 * _GB,
        f"Google Cloud TPU v5p documentation ({_TPU_DOCS}v5p): 459 TFLOP/s bf16, 2765 GB/s "
        "HBM, 95 GB per chip (later revisions say 95 GiB; the smaller is kept); int8 at 2x bf16 "
        "(918 TOP/s, as widely reported; not on that page) and f32 at 1/4, estimates",
        ("TPU v5", "TPU v5p"),
        f"{_TPU_DOCS}v5p",
        tensorcores=2,
    ),
    DeviceProfile(
        "tpu-v6e",
        "Google Cloud TPU v6e Trillium (one chip)",
        (("bf16", 918e12), ("f32", 918e12 / 4), ("s8", 1836e12)),
        1640 * _GB,
        32 * _GB,
        f"Google Cloud TPU v6e documentation ({_TPU_DOCS}v6e): 918 TFLOP/s bf16, 1836 TOP/s "
        "int8, 1640 GB/s HBM, 32 GB per chip; f32 assumed at 1/4 of bf16, an estimate",
        ("TPU v6 lite", "TPU v6e"),
        f"{_TPU_DOCS}v6e",
    ),
    DeviceProfile(
        "epyc-9654",
        "AMD EPYC 9654 (96 Zen 4 cores, one socket)",
        (("f32", 96 * 2.4e9 * 32), ("f64", 96 * 2.4e9 * 16), ("bf16", 96 * 2.4e9 * 64)),
        460.8 * _GB,
        None,
        "AMD product page (96 cores, 2.4 GHz base, 12 channels DDR5-4800); FLOP/s derived as "
        "cores x base clock x 2 FMA pipes x 256-bit lanes x 2 (32 f32 FLOP/cycle)",
    ),
    DeviceProfile(
        "xeon-8480",
        "Intel Xeon Platinum 8480+ (56 Sapphire Rapids cores, one socket)",
        (("f32", 56 * 2.0e9 * 64), ("f64", 56 * 2.0e9 * 32)),
        307.2 * _GB,
        None,
        "Intel ARK (56 cores, 2.0 GHz base, 8 channels DDR5-4800); FLOP/s derived as cores x "
        "base clock x 2 AVX-512 FMA units x 16 f32 lanes x 2 (AMX bf16 not modelled)",
    ),
)


def find_profile(name: str) -> DeviceProfile:
    """The built-in profile called ``name`` (case-insensitive).

    Raises:
        UsageError: No profile has that name.
    """
    names = tuple(p.name for p in PROFILES)
    for profile in PROFILES:
        if profile.name == name.lower():
            return profile
    raise UsageError(
        f"--device: unknown device profile {name!r}{did_you_mean(name.lower(), names)}; "
        f"choose from {', '.join(names)}"
    )


def profile_for_kind(device_kind: str) -> DeviceProfile | None:
    """The built-in profile of a device JAX names ``device_kind``, if there is one.

    libtpu 0.0.42 names its chips "TPU v3", "TPU v4", "TPU v5 lite" (v5e), "TPU v5" (v5p) and
    "TPU v6 lite" (v6e), for described slices as on the hardware.
    """
    for profile in PROFILES:
        if device_kind in profile.device_kinds:
            return profile
    return None


def custom_profile(
    base: DeviceProfile | None, peak_flops: float | None, bandwidth: float | None
) -> DeviceProfile | None:
    """``base`` with ``--peak-flops`` / ``--peak-bandwidth`` applied (one peak for every dtype).

    Raises:
        UsageError: Only one of the two peaks was given and there is no base profile.
    """
    if peak_flops is None and bandwidth is None:
        return base
    if base is None and (peak_flops is None or bandwidth is None):
        raise UsageError("give both --peak-flops and --peak-bandwidth, or a --device profile")
    if peak_flops is None:
        assert base is not None  # checked above
        flops = base.peak_flops
    else:
        flops = (("f32", peak_flops),)
    if bandwidth is None:
        assert base is not None
        bandwidth = base.bandwidth_bytes_s
    return DeviceProfile(
        name=base.name if base else "custom",
        description=(base.description if base else "user-supplied peaks") + " (overridden)",
        peak_flops=flops,
        bandwidth_bytes_s=bandwidth,
        memory_bytes=base.memory_bytes if base else None,
        source="--peak-flops / --peak-bandwidth on the command line"
        + (f", over {base.source}" if base else ""),
    )
