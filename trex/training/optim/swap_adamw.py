"""AdamW whose moment estimates live in host memory and visit the device chunk by chunk.

Device memory holds the parameters and gradients plus two chunk-sized state buffers (the double
buffer), instead of two full fp32 moment tensors per parameter. One step walks the chunks:

    copy-in stream :  load(i+1)                        (host -> slot (i+1) % 2)
    compute stream :            update(i)               (AdamW on slot i % 2, params in place)
    copy-out stream:                      store(i-1)    (slot (i-1) % 2 -> host)

with events so that a slot is refilled only after its previous contents were written back, and
the update of chunk i starts only when its load finished. On a device without streams (the CPU)
the same code runs in order and the "slots" are the host buffers themselves (no copies at all).

The arithmetic is torch.optim.AdamW's single-tensor path (decoupled weight decay, bias
correction), so parameters match torch's AdamW within fp32 rounding; amsgrad/maximize are not
supported. Parameters may be FSDP2 DTensors: the update runs on their local shards.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from .streams import DeviceStreams, pinned_empty

try:  # DTensor params (FSDP2) are updated through their local shard
    from torch.distributed.tensor import DTensor
except ImportError:  # pragma: no cover - torch without distributed
    DTensor = ()


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


@dataclass
class _Chunk:
    params: list[nn.Parameter] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    numel: int = 0
    host_exp_avg: torch.Tensor | None = None       # flat fp32 host buffers (pinned on accelerators)
    host_exp_avg_sq: torch.Tensor | None = None


class SwapAdamW(torch.optim.Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, chunk_bytes: int = 64 << 20):
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"SwapAdamW: lr={lr}, eps={eps}, weight_decay={weight_decay} must be >= 0")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"SwapAdamW: betas={tuple(betas)} must lie in [0, 1)")
        if chunk_bytes < 8:
            raise ValueError(f"SwapAdamW: chunk_bytes={chunk_bytes} is too small (one fp32 pair is 8 bytes)")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))
        self.chunk_bytes = int(chunk_bytes)
        self._chunks: list[_Chunk] | None = None
        self._device: torch.device | None = None
        self._streams: DeviceStreams | None = None
        self._slots: list[tuple[torch.Tensor, torch.Tensor]] = []

    # -- layout ------------------------------------------------------------------------------

    def _plan(self) -> None:
        """Group parameters into chunks of at most chunk_bytes of optimizer state (two fp32 moments)."""
        params = [(g, p) for g in self.param_groups for p in g["params"] if p.requires_grad]
        if not params:
            raise ValueError("SwapAdamW: no parameter requires grad")
        devices = {_local(p).device for _, p in params}
        if len(devices) != 1:
            raise ValueError(f"SwapAdamW: parameters live on several devices {sorted(map(str, devices))}; "
                             f"use one optimizer per device")
        self._device = devices.pop()
        per_elem = 8  # exp_avg + exp_avg_sq, fp32
        chunks, cur = [], _Chunk()
        for group, p in params:
            n = _local(p).numel()
            if cur.params and (cur.numel + n) * per_elem > self.chunk_bytes:
                chunks.append(cur)
                cur = _Chunk()
            cur.params.append(p)
            cur.groups.append(group)
            cur.offsets.append(cur.numel)
            cur.numel += n
        chunks.append(cur)
        for c in chunks:
            c.host_exp_avg = pinned_empty(c.numel, torch.float32, self._device).zero_()
            c.host_exp_avg_sq = pinned_empty(c.numel, torch.float32, self._device).zero_()
            for p, off in zip(c.params, c.offsets):
                shape, n = _local(p).shape, _local(p).numel()
                old = self.state.get(p, {})
                st = {"step": int(old.get("step", 0)),
                      "exp_avg": c.host_exp_avg[off:off + n].view(shape),
                      "exp_avg_sq": c.host_exp_avg_sq[off:off + n].view(shape)}
                for key in ("exp_avg", "exp_avg_sq"):  # state loaded before the plan existed
                    if key in old:
                        st[key].copy_(_local(old[key]).reshape(shape))
                self.state[p] = st
        self._chunks = chunks
        self._streams = DeviceStreams.for_device(self._device)
        if self._streams.asynchronous:
            biggest = max(c.numel for c in chunks)
            self._slots = [(torch.empty(biggest, dtype=torch.float32, device=self._device),
                            torch.empty(biggest, dtype=torch.float32, device=self._device)) for _ in range(2)]

    @property
    def num_chunks(self) -> int:
        if self._chunks is None:
            self._plan()
        return len(self._chunks)

    def host_state_bytes(self) -> int:
        if self._chunks is None:
            self._plan()
        return sum(c.numel * 8 for c in self._chunks)

    # -- the pipeline ------------------------------------------------------------------------

    def _buffers(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        c = self._chunks[i]
        if not self._streams.asynchronous:
            return c.host_exp_avg, c.host_exp_avg_sq
        m, v = self._slots[i % 2]
        return m[:c.numel], v[:c.numel]

    def _load(self, i: int, slot_free) -> object:
        s = self._streams
        if not s.asynchronous:
            return None
        c = self._chunks[i]
        with s.use(s.h2d):
            s.wait(s.h2d, slot_free)
            m, v = self._buffers(i)
            m.copy_(c.host_exp_avg, non_blocking=True)
            v.copy_(c.host_exp_avg_sq, non_blocking=True)
            return s.record(s.h2d)

    def _store(self, i: int, computed) -> object:
        s = self._streams
        if not s.asynchronous:
            return None
        c = self._chunks[i]
        with s.use(s.d2h):
            s.wait(s.d2h, computed)
            m, v = self._buffers(i)
            c.host_exp_avg.copy_(m, non_blocking=True)
            c.host_exp_avg_sq.copy_(v, non_blocking=True)
            return s.record(s.d2h)

    def _update(self, i: int) -> None:
        c = self._chunks[i]
        m_flat, v_flat = self._buffers(i)
        for p, group, off in zip(c.params, c.groups, c.offsets):
            if p.grad is None:
                continue
            param, grad = _local(p), _local(p.grad)
            if grad.is_sparse:
                raise RuntimeError("SwapAdamW does not support sparse gradients")
            st = self.state[p]
            st["step"] += 1
            n = param.numel()
            exp_avg = m_flat[off:off + n].view(param.shape)
            exp_avg_sq = v_flat[off:off + n].view(param.shape)
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            work = param if param.dtype == torch.float32 else param.float()
            grad = grad if grad.dtype == torch.float32 else grad.float()
            # torch.optim.AdamW, single-tensor path, in the same operation order
            if wd != 0:
                work.mul_(1 - lr * wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = float(st["step"])
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)
            work.addcdiv_(exp_avg, denom, value=-step_size)
            if work is not param:
                param.copy_(work)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self._chunks is None:
            self._plan()
        s = self._streams
        n = len(self._chunks)
        written = [None] * n     # event: chunk i's slot contents are back on the host
        if s.asynchronous:
            s.h2d.wait_stream(s.current())   # grads of this step are ready on the compute stream
        loaded = {0: self._load(0, None)}
        for i in range(n):
            if i + 1 < n:       # prefetch the next chunk into the other slot once chunk i-1 left it
                loaded[i + 1] = self._load(i + 1, written[i - 1] if i >= 1 else None)
            s.wait(s.current(), loaded.pop(i))
            self._update(i)
            written[i] = self._store(i, s.record(s.current()))
        if s.asynchronous:  # the next step / a state_dict reads the host buffers
            s.current().wait_stream(s.d2h)
        return loss

    @torch.no_grad()
    def phase_times(self) -> dict[str, float]:
        """Seconds for copy-in, update and copy-out of all chunks, each run alone and synchronised:
        what a step would cost without overlap (bench/swap_optimizer.py compares it with step()).
        Runs one extra update, so call it on a throw-away optimizer/model."""
        if self._chunks is None:
            self._plan()
        s = self._streams
        sync = (lambda: s.module.synchronize()) if s.asynchronous else (lambda: None)
        times = {}
        for name, phase in (("h2d", lambda i: self._load(i, None)), ("update", self._update),
                            ("d2h", lambda i: self._store(i, None))):
            sync()
            t0 = time.perf_counter()
            for i in range(len(self._chunks)):
                phase(i)
                sync()                       # one chunk at a time: nothing overlaps
            times[name] = time.perf_counter() - t0
        return times

    def synchronize(self) -> None:
        """Wait until every write-back reached host memory (before reading the host states)."""
        if self._streams is not None and self._streams.asynchronous:
            self._streams.d2h.synchronize()

    # -- checkpointing -----------------------------------------------------------------------

    def state_dict(self):
        self.synchronize()
        return super().state_dict()

    def load_state_dict(self, state_dict) -> None:
        """torch's loader moves states next to each parameter (onto the device); copy them back
        into this optimizer's host buffers instead."""
        self.synchronize()
        super().load_state_dict(state_dict)
        loaded = {p: dict(self.state[p]) for g in self.param_groups for p in g["params"] if p in self.state}
        if self._chunks is None:
            for p, st in loaded.items():  # kept until _plan copies them into the host buffers
                # clone: torch's loader may hand back the very tensors of the source state_dict
                self.state[p] = {k: (v.detach().cpu().clone() if torch.is_tensor(v) and k != "step" else v)
                                 for k, v in st.items()}
                self.state[p]["step"] = int(st.get("step", 0))
            return
        for c in self._chunks:
            for p, off in zip(c.params, c.offsets):
                st = loaded.get(p)
                if st is None:
                    continue
                n = _local(p).numel()
                c.host_exp_avg[off:off + n].copy_(_local(st["exp_avg"]).reshape(-1))
                c.host_exp_avg_sq[off:off + n].copy_(_local(st["exp_avg_sq"]).reshape(-1))
                self.state[p] = {"step": int(st["step"]),
                                 "exp_avg": c.host_exp_avg[off:off + n].view(_local(p).shape),
                                 "exp_avg_sq": c.host_exp_avg_sq[off:off + n].view(_local(p).shape)}
