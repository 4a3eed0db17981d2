// tiling/platform/platform_ascendc.h — platform_ascendc::PlatformAscendC: core counts and memory sizes
// of the emulated chip (the runner sets them: aiv cores, UB bytes, whether the SoC is 910B; Atlas A2 layout,
// 2 AIV per AIC).
#pragma once
#include <string>

#include "trex_host/ge_types.h"

namespace platform_ascendc {
enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };
enum class SocVersion { ASCEND910 = 0, ASCEND910B, ASCEND910_93, ASCEND310P, ASCEND310B, ASCEND910_95, RESERVED_VERSION = 99999 };
// ReserveLocalMemory's sizes (asc-devkit include/utils/tiling/platform/platform_ascendc.h, ReserveLocalMemory.md)
enum class ReservedSize { RESERVED_SIZE_8K, RESERVED_SIZE_16K, RESERVED_SIZE_32K };

class PlatformAscendC {
 public:
  PlatformAscendC() = default;
  explicit PlatformAscendC(const fe::PlatFormInfos* info) : info_(info ? *info : fe::PlatFormInfos{}) {}
  uint32_t GetCoreNum() const { return info_.aiv_num; }
  uint32_t GetCoreNumAic() const { return info_.aic_num; }
  uint32_t GetCoreNumAiv() const { return info_.aiv_num; }
  uint32_t GetCoreNumVector() const { return info_.aiv_num; }
  // As asc-devkit's impl/utils/tiling/platform/platform_ascendc.cpp computes it: on Ascend910B / 910_93 UB and L1
  // report 256 B less than the chip holds (LOCAL_RESERV_SIZE, "only ascend910B need UB/L1 local reserved buf for
  // kfc"), and UB also less what ReserveLocalMemory reserved. A host-side query only: the emulator's TPipe still hands
  // out the whole UB, so the reserve changes what tilings sized from this query ask for.
  void GetCoreMemSize(CoreMemType type, uint64_t& size) const {
    const uint64_t reserve910b = info_.soc_910b ? kLocalReserveBytes : 0;
    switch (type) {
      case CoreMemType::UB: size = info_.ub_size > reserve910b + reserved_ ? info_.ub_size - reserve910b - reserved_ : 0; break;
      case CoreMemType::L1: size = 512 * 1024 - reserve910b; break;
      case CoreMemType::L0_A: case CoreMemType::L0_B: size = 64 * 1024; break;
      case CoreMemType::L0_C: size = 128 * 1024; break;
      case CoreMemType::L2: size = 192ull * 1024 * 1024; break;
      default: size = 0;
    }
  }
  void GetCoreMemBw(CoreMemType, uint64_t& bw) const { bw = 0; }
  SocVersion GetSocVersion() const { return SocVersion::ASCEND910B; }
  // CANN's value is the library's system workspace (16 MB); the emulator's kernels need none, and
  // GetUserWorkspace in the kernel skips exactly this many bytes.
  uint32_t GetLibApiWorkSpaceSize() const { return 0; }
  uint32_t CalcTschBlockDim(uint32_t slice, uint32_t aic, uint32_t aiv) const {
    if (aic == 0 || aiv == 0) return slice;
    const uint32_t ratio = aiv / aic == 0 ? 1 : aiv / aic;
    return (slice + ratio - 1) / ratio;
  }
  int64_t GetResGroupBarrierWorkSpaceSize() const { return 0; }
  // Reserves 8/16/32 KB of UB: later GetCoreMemSize(UB) calls report that much less; the last call wins (the page).
  void ReserveLocalMemory(ReservedSize size) {
    switch (size) {
      case ReservedSize::RESERVED_SIZE_8K: reserved_ = 8 * 1024; break;
      case ReservedSize::RESERVED_SIZE_16K: reserved_ = 16 * 1024; break;
      case ReservedSize::RESERVED_SIZE_32K: reserved_ = 32 * 1024; break;
    }
  }
 private:
  static constexpr uint64_t kLocalReserveBytes = 256;
  fe::PlatFormInfos info_;
  uint32_t reserved_ = 0;
};

class PlatformAscendCManager {
 public:
  static PlatformAscendC* GetInstance() {
    static PlatformAscendC p;
    return &p;
  }
  // GetInstance(customSocVersion) (asc-devkit include/utils/tiling/platform/platform_ascendc.h): the platform of that
  // SoC. The emulated chip is an Atlas A2/A3 one, so Ascend910B* / Ascend910_93* give it; another SoC is not emulated
  // (nullptr, as CANN gives for a SoC it cannot initialise).
  static PlatformAscendC* GetInstance(const char* customSocVersion) {
    if (customSocVersion == nullptr) return GetInstance();
    const std::string soc(customSocVersion);
    if (soc.rfind("Ascend910B", 0) == 0 || soc.rfind("Ascend910_93", 0) == 0) return GetInstance();
    return nullptr;
  }
};
}  // namespace platform_ascendc
