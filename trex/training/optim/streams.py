"""Side streams for overlapping host<->device copies with compute, per device type.

CUDA and Ascend NPU (torch_npu registers `torch.npu` with the same Stream/Event API) get real
streams; the CPU gets none, and code written against `DeviceStreams` then runs synchronously.
Detection only: importing this module never imports torch_npu.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

# device type -> does it have async copy streams? (the module comes from torch.get_device_module)
STREAM_DEVICES = ("cuda", "npu")


def device_module(device: torch.device):
    """torch.cuda / torch.npu for a stream-capable device, else None."""
    if device.type not in STREAM_DEVICES:
        return None
    try:
        mod = torch.get_device_module(device.type)
    except (RuntimeError, AttributeError):
        return None
    return mod if hasattr(mod, "Stream") and mod.is_available() else None


def pinned_empty(numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Host buffer, page-locked when `device` can DMA from it asynchronously."""
    return torch.empty(numel, dtype=dtype, pin_memory=device_module(device) is not None)


@dataclass
class DeviceStreams:
    """Copy-in and copy-out streams next to the current (compute) stream; all None on CPU."""

    module: object | None
    h2d: object | None
    d2h: object | None

    @classmethod
    def for_device(cls, device: torch.device) -> "DeviceStreams":
        mod = device_module(device)
        if mod is None:
            return cls(None, None, None)
        with mod.device(device):
            return cls(mod, mod.Stream(), mod.Stream())

    @property
    def asynchronous(self) -> bool:
        return self.module is not None

    def use(self, stream):
        return self.module.stream(stream) if stream is not None else contextlib.nullcontext()

    def current(self):
        return self.module.current_stream() if self.module is not None else None

    def record(self, stream):
        return stream.record_event() if stream is not None else None

    @staticmethod
    def wait(stream, event) -> None:
        if stream is not None and event is not None:
            stream.wait_event(event)
