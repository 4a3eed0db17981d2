"""Model FLOPs utilisation: peak dense BF16 FLOP/s per accelerator, and MFU helpers.

MFU = model FLOPs per token x tokens/s / (devices x peak dense BF16 FLOP/s), counting only
useful work (trex.training.model.flops.flops_per_token: no recompute, no masked or padded work), as in
PaLM App. B and NeMo's DeepSeek-V4 counter (reference/deepseek_v4.md §9).

Peak values: Huawei publishes no primary BF16 peak for 910B / 910C (reference/ascendc.md §3.2 and
§9), so those two are derived from cube count x MACs per cycle x clock of the platform ini files;
each entry says how it was obtained.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class PeakEntry:
    name: str
    flops: float          # dense BF16 FLOP/s of one device (one die for 910C)
    source: str


PEAK_BF16_DENSE: dict[str, PeakEntry] = {
    "ascend910b": PeakEntry(
        "Ascend 910B (910B2)", 24 * 4096 * 2 * 1.8e9,
        "derived, not an official figure: 24 AI cubes (platform ini ai_core_cnt=24) x 4096 fp16/bf16 MAC "
        "per cycle (16x16x16 cube) x 2 FLOP/MAC x 1.8 GHz (ini cube_freq=1800) = 353.9 TFLOP/s; "
        "reference/ascendc.md §3.2 (pto-kernels skills file, CANN ATC docs)"),
    "ascend910c_die": PeakEntry(
        "Ascend 910C, one die (Ascend910_9392)", 24 * 4096 * 2 * 1.85e9,
        "derived, not an official figure: 24 usable AI cubes per die x 4096 MAC/cycle x 2 FLOP/MAC x "
        "1.85 GHz (ini cube_freq=1850, npu-smi Aicore Freq) = 363.8 TFLOP/s; reference/ascendc.md §3.2 "
        "(third-party A3 note; secondary press ~752-800 TFLOP/s per two-die package agrees)"),
    "h200": PeakEntry(
        "NVIDIA H200 SXM", 989.5e12,
        "NVIDIA H200 product page / datasheet (https://www.nvidia.com/en-us/data-center/h200/): "
        "BFLOAT16 Tensor Core 1,979 TFLOPS quoted 'with sparsity'; dense is half, 989.5 TFLOP/s "
        "(same tensor-core throughput as H100 SXM). Measured bf16 matmul on the project's H200: "
        "~790 TFLOP/s (reference/or_posttraining.md §5)"),
    "h100_sxm": PeakEntry(
        "NVIDIA H100 SXM (80GB HBM3)", 989.4e12,
        "NVIDIA H100 datasheet (https://www.nvidia.com/en-us/data-center/h100/): SXM BF16 Tensor Core "
        "1,979 TFLOPS quoted 'with sparsity'; dense is half, 989.4 TFLOP/s (the PCIe card, HBM2e, is lower "
        "and not in this table)"),
}

# substrings of device names -> table key (checked in order); "H100 80GB HBM3" is how the SXM card names itself
_DEVICE_NAME_KEYS = (("H200", "h200"), ("H100 80GB HBM3", "h100_sxm"), ("H100 SXM", "h100_sxm"), ("910_93", "ascend910c_die"), ("910C", "ascend910c_die"),
                     ("910B", "ascend910b"))


def peak_flops(device: str) -> float:
    """Peak dense BF16 FLOP/s of one device, by table key (see PEAK_BF16_DENSE)."""
    try:
        return PEAK_BF16_DENSE[device].flops
    except KeyError:
        raise ValueError(f"no peak FLOP/s known for device {device!r}; known: {sorted(PEAK_BF16_DENSE)} "
                         "(pass peak_flops_per_device explicitly for other hardware)") from None


def device_key_from_name(device_name: str) -> str | None:
    """Map a device name (``torch.cuda.get_device_name()``, ``torch.npu.get_device_name()``) to a key."""
    for needle, key in _DEVICE_NAME_KEYS:
        if needle.lower() in device_name.lower():
            return key
    return None


def detect_device() -> str | None:
    """Table key of the current accelerator, or None (CPU, or hardware not in the table)."""
    if torch.cuda.is_available():
        return device_key_from_name(torch.cuda.get_device_name())
    npu = getattr(torch, "npu", None)            # present only once torch_npu is imported
    if npu is not None and npu.is_available():
        return device_key_from_name(npu.get_device_name())
    return None


def mfu(flops_per_token: float, tokens_per_second: float, n_devices: int = 1,
        device: str | None = None, peak_flops_per_device: float | None = None) -> float:
    """Model FLOPs utilisation in [0, 1] (can exceed 1 only if the FLOP count is wrong).

    Give either a table ``device`` key or ``peak_flops_per_device``."""
    if peak_flops_per_device is None:
        if device is None:
            raise ValueError("mfu needs device= (a key of PEAK_BF16_DENSE) or peak_flops_per_device=")
        peak_flops_per_device = peak_flops(device)
    if n_devices < 1:
        raise ValueError(f"n_devices={n_devices} must be >= 1")
    return flops_per_token * tokens_per_second / (n_devices * peak_flops_per_device)
