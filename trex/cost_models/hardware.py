"""Hardware descriptions used by the cost models; every number carries its source.

Sources are cited as in /work/shared/reference/ascendc.md (§3 "Hardware numbers", §7 "Cost /
performance models"); "ref §x" below points there. Numbers that the reference marks as secondary
or derived keep that qualifier in their source string, so a reader can tell them apart.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import numpy as np


@dataclass(frozen=True)
class Sourced:
    value: float
    source: str

    def __float__(self) -> float:
        return float(self.value)


def _s(v, src) -> Sourced:
    return Sourced(float(v), src)


# Per-core GM<->UB bandwidth curves (bytes per transfer -> bytes/s), msKPP measured on 910B1
# (ref §3.2 "Other measured constants": msKPP csrc/prof_data/resource910b.cpp GM_TO_UB_910b1 / UB_TO_GM_910b1).
_GM_TO_UB_CURVE = ((1024, 7.3e9), (4096, 23.6e9), (8192, 42.7e9), (16384, 68e9), (30720, 78e9))
_UB_TO_GM_CURVE = ((1024, 11.4e9), (8192, 57.8e9), (24576, 108e9))
_CURVE_SRC = "msKPP resource910b.cpp GM_TO_UB_910b1/UB_TO_GM_910b1 (ref §3.2), per-core, 910B1 measured"

# Vector cycles per 256-byte repeat by instruction (msKPP 910B1 tables, ref §7): binary/transcendental fp32
# ~2, scalar-operand/rsqrt/conv/brcb ~1, div ~4, in-repeat reduce (VCADD) ~3. APIs the table does not list
# take the value of their closest listed class (marked "assumed class").
_MSKPP = "msKPP resource910b.cpp (ref §7)"
VECTOR_CYCLES_PER_REPEAT = {
    "Add": _s(2, _MSKPP + " VADD"), "Sub": _s(2, _MSKPP + " VADD class (assumed class)"),
    "Mul": _s(2, _MSKPP + " VMUL"), "Max": _s(2, _MSKPP + " VADD class (assumed class)"),
    "Min": _s(2, _MSKPP + " VADD class (assumed class)"), "Exp": _s(2, _MSKPP + " VEXP"),
    "Ln": _s(2, _MSKPP + " VLN"), "Sqrt": _s(2, _MSKPP + " VSQRT"), "Abs": _s(2, _MSKPP + " VADD class (assumed class)"),
    "Relu": _s(2, _MSKPP + " VADD class (assumed class)"),
    "Adds": _s(1, _MSKPP + " VADDS"), "Muls": _s(1, _MSKPP + " VMULS"), "Maxs": _s(1, _MSKPP + " VMULS class (assumed class)"),
    "Mins": _s(1, _MSKPP + " VMULS class (assumed class)"), "Rsqrt": _s(1, _MSKPP + " VRSQRT"),
    "Cast": _s(1, _MSKPP + " VCONV fp32<->bf16"), "Brcb": _s(1, _MSKPP + " VBRCB"),
    "Duplicate": _s(1, _MSKPP + " VMULS class (assumed class)"), "Div": _s(4, _MSKPP + " VDIV"),
    "Reciprocal": _s(4, _MSKPP + " VDIV class (assumed class)"),
    "ReduceSum": _s(3, _MSKPP + " VCADD"), "ReduceMax": _s(3, _MSKPP + " VCADD class (assumed class)"),
    "Compare": _s(2, _MSKPP + " VADD class (assumed class)"), "CompareScalar": _s(1, _MSKPP + " VMULS class (assumed class)"),
    "Select": _s(2, _MSKPP + " VADD class (assumed class)"),
}


@dataclass(frozen=True)
class AscendHW:
    name: str
    aiv_cores: Sourced
    clock_hz: Sourced
    ub_bytes: Sourced
    ub_reserved_bytes: Sourced
    ub_margin_bytes: Sourced
    hbm_bw: Sourced                       # chip/die GM bandwidth (bytes/s), reads + writes
    launch_s: Sourced                     # host launch + start-up per kernel
    scalar_s_per_op: Sourced              # scalar-unit cost of one GetValue/SetValue
    vec_issue_cycles: Sourced             # per-instruction start-up cycles
    aic_cores: Sourced                    # cube cores (AIC), one per 2 AIV
    cube_macs_per_cycle: Sourced          # bf16/fp16 multiply-accumulates per AIC per cycle
    cube_fp32_fraction: Sourced           # fp32 cube throughput / bf16
    cube_launch_s: Sourced                # fixed overhead of one cube kernel
    l2_bytes: Sourced                     # L2 cache of the chip/die
    l2_read_bytes_per_cycle: Sourced      # L2 -> core read rate per core
    repeat_bytes: int = 256               # one vector repeat = 8 blocks x 32 B (ref §2.1)
    max_repeats: int = 255                # repeatTime <= 255 per instruction (ref §2.1)
    block_bytes: int = 32                 # UB alignment (ref §1.3, §2.1)
    max_block_count: int = 4095           # DataCopyPad blockCount (ref §1.3)
    max_block_len: int = 2_097_151        # DataCopyPad blockLen bytes (ref §1.3)
    cycles_per_repeat: dict = field(default_factory=lambda: dict(VECTOR_CYCLES_PER_REPEAT))

    def l2_read_bw(self, cores: int) -> float:
        """L2 read bandwidth of `cores` cores (bytes/s)."""
        return cores * self.l2_read_bytes_per_cycle.value * self.clock_hz.value

    def cube_flops(self, fp32: bool = False) -> float:
        """Cube peak FLOP/s of the chip/die: AIC x MAC/cycle x 2 x clock (x the fp32 fraction)."""
        peak = self.aic_cores.value * self.cube_macs_per_cycle.value * 2 * self.clock_hz.value
        return peak * (self.cube_fp32_fraction.value if fp32 else 1.0)

    @property
    def ub_capacity(self) -> int:
        """Usable UB bytes: 192 KiB - reserves - margin (ref §1.2; §8 item 7)."""
        return int(self.ub_bytes.value - self.ub_reserved_bytes.value - self.ub_margin_bytes.value)

    def mte2_bw(self, transfer_bytes, active_cores: int):
        """Per-core GM->UB bandwidth for transfers of this size, capped by the chip's share."""
        per_core = np.interp(np.maximum(transfer_bytes, 1), *zip(*_GM_TO_UB_CURVE))
        return np.minimum(per_core, self.hbm_bw.value / max(active_cores, 1))

    def mte3_bw(self, transfer_bytes, active_cores: int):
        per_core = np.interp(np.maximum(transfer_bytes, 1), *zip(*_UB_TO_GM_CURVE))
        return np.minimum(per_core, self.hbm_bw.value / max(active_cores, 1))

    def describe(self) -> dict:
        out = {"name": self.name}
        for k, v in self.__dict__.items():
            if isinstance(v, Sourced):
                out[k] = {"value": v.value, "source": v.source}
        out["per_core_gm_to_ub_curve"] = {"points": _GM_TO_UB_CURVE, "source": _CURVE_SRC}
        out["per_core_ub_to_gm_curve"] = {"points": _UB_TO_GM_CURVE, "source": _CURVE_SRC}
        out["vector_cycles_per_repeat"] = {k: {"value": v.value, "source": v.source} for k, v in self.cycles_per_repeat.items()}
        return out


_UB_SRC = "asc-devkit 架构规格/NPU架构版本2201.md: UB 192 KB per AIV (ref §3.1)"
_RES_SRC = "asc-devkit NPU架构版本2201.md: 256 B framework + 8 KB API reserve (ref §1.2, §8 item 7)"
_MARGIN_SRC = "ops-nn rms_norm_tiling.cpp uses ubSize - 1024 (ref §1.2)"
_LAUNCH_SRC = ("torch_npu small-tensor op ~0.006 ms end to end (Ascend/triton-ascend#8, ref §6.3); "
               "consistent with 'several us per launch' (ref §7)")
_SCALAR_SRC = ("derived from asc-devkit Add study case 0: scalar loop over 8192x8192 fp16 on 1 core = 1,239,689 us "
               "for 3 scalar accesses per element -> 6.2 ns/access (ref §7 table); GM accesses, so an upper bound for UB")
_ISSUE_SRC = "msKPP: ~1 cycle start-up per vector instruction (ref §7, 'VADD fp32 9 repeats = 18.0 cycles' +~1)"

_CUBE_SRC = ("16x16x16 fp16 per cube instruction = 4096 MAC per cycle: asc-devkit 基本架构.md (ref §3.1); "
             "peak derived, not official (ref §3.2: 24 x 4096 x 2 x 1.8 GHz = 354 TFLOPS on 910B2)")
_CUBE_LAUNCH_SRC = ("third-party A3 study: ~18 us for tiny cube kernels that a bandwidth model predicts at ~9 us "
                    "(ref §3.2, 'Fixed overhead'); secondary")

ASCEND_910B = AscendHW(
    name="Ascend910B",
    aiv_cores=_s(48, "910B1/910B2 platform ini vector_core_cnt=48 (ref §3.2)"),
    clock_hz=_s(1.8e9, "910B2 platform ini cube_freq=1800 (ref §3.2)"),
    ub_bytes=_s(196608, _UB_SRC),
    ub_reserved_bytes=_s(256 + 8192, _RES_SRC),
    ub_margin_bytes=_s(0, "no margin beyond the documented reserves (ops-nn tilings keep 1 KiB: "
                         "rms_norm_tiling.cpp ubSize - 1024, ref §1.2; set it here to be stricter)"),
    hbm_bw=_s(1.61e12, "measured 1.61 TB/s read+write, double-buffered Add 8192^2 fp16 on 48 AIV "
                       "(asc-devkit add_high_performance case 4, ref §7)"),
    launch_s=_s(6e-6, _LAUNCH_SRC),
    scalar_s_per_op=_s(6.2e-9, _SCALAR_SRC),
    vec_issue_cycles=_s(1, _ISSUE_SRC),
    aic_cores=_s(24, "910B1/910B2 platform ini ai_core_cnt=24 (ref §3.2)"),
    cube_macs_per_cycle=_s(4096, _CUBE_SRC),
    cube_fp32_fraction=_s(0.25, "fp32 cube throughput is 1/4 of half: asc-devkit 硬件约束/NPU架构版本2201.md (ref §3.1)"),
    cube_launch_s=_s(18e-6, _CUBE_LAUNCH_SRC),
    l2_bytes=_s(201326592, "platform ini l2_size=201326592 (192 MiB), ref §3.2"),
    l2_read_bytes_per_cycle=_s(110, "A3 ini [AICoreMemoryRates] l2_read_rate=110 B/cycle/core, third-party quote "
                                    "(ref §3.2); secondary"),
)

ASCEND_910C_DIE = replace(
    ASCEND_910B,
    name="Ascend910CDie",
    aiv_cores=_s(48, "Ascend910_9392 ini: 24 AIC / 48 AIV per die (ref §3.2)"),
    clock_hz=_s(1.85e9, "npu-smi Aicore Freq / ini cube_freq=1850, third-party A3 note (ref §3.2)"),
    hbm_bw=_s(1.6e12, "~1.6 TB/s per die, secondary (third-party A3 note; ref §3.2 marks it unconfirmed)"),
    aic_cores=_s(24, "Ascend910_9392 ini: 24 AIC / 48 AIV per die (ref §3.2)"),
)


@dataclass(frozen=True)
class GpuHW:
    name: str
    copy_bw: Sourced
    bf16_matmul_flops: Sourced

    def describe(self) -> dict:
        return {"name": self.name, "copy_bw": self.copy_bw.__dict__, "bf16_matmul_flops": self.bf16_matmul_flops.__dict__}


H200 = GpuHW(
    name="H200",
    copy_bw=_s(4247530858282.64, "measured device copy bandwidth, /work/shared/anchors/"
                                 "gpu_patterns_2026-11-29_h200_run3_devtime.json (copy_bw)"),
    bf16_matmul_flops=_s(790e12, "measured bf16 matmul, reference/or_posttraining.md §5"),
)


@dataclass(frozen=True)
class HostCPU:
    name: str
    cores: Sourced
    copy_bw: Sourced

    @classmethod
    def detect(cls, nbytes: int = 64 << 20) -> "HostCPU":
        """Measure this machine: os.cpu_count() and a numpy copy of `nbytes` (best of 3)."""
        a = np.ones(nbytes // 8)
        b = np.empty_like(a)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            np.copyto(b, a)
            best = min(best, time.perf_counter() - t0)
        return cls("HostCPU", _s(os.cpu_count() or 1, "os.cpu_count() on this machine"),
                   _s(2 * nbytes / best, f"measured here: numpy copy of {nbytes >> 20} MiB, read+write bytes / best of 3"))


ASCEND_TARGETS = {"ascend910b": ASCEND_910B, "ascend910c": ASCEND_910C_DIE}


def ascend_target(name: str) -> AscendHW:
    try:
        return ASCEND_TARGETS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown Ascend target {name!r}; choose one of {sorted(ASCEND_TARGETS)}") from None
