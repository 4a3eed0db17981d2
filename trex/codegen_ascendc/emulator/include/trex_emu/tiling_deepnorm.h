// tiling_deepnorm.h: DeepNormTiling, the tiling struct of the DeepNorm advanced API (asc-devkit
// include/adv_api/normalization/deepnorm_tilingdata.h: 26 fields, in that order), global like SoftMaxTiling, with the
// optiling and AscendC::tiling aliases; shared by kernel code and host tiling code. The kernel API mutates it (the
// implementation sets bshCurLength / bsCurLength to the tail's lengths when it runs the tail round).
#pragma once
#include <cstdint>

#include "register/tilingdata_base.h"

BEGIN_TILING_DATA_DEF(DeepNormTiling)
  TILING_DATA_FIELD_DEF(uint32_t, bLength);
  TILING_DATA_FIELD_DEF(uint32_t, sLength);
  TILING_DATA_FIELD_DEF(uint32_t, hLength);          // H after alignment
  TILING_DATA_FIELD_DEF(uint32_t, originalHLength);  // H before alignment
  TILING_DATA_FIELD_DEF(uint32_t, inputXSize);       // B * S * H
  TILING_DATA_FIELD_DEF(uint32_t, meanVarSize);      // B * S
  TILING_DATA_FIELD_DEF(uint32_t, numberOfTmpBuf);   // B*S*H-sized float tmp tensors (2 or 3)
  TILING_DATA_FIELD_DEF(uint32_t, meanTmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, meanTmpTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBufSize);         // floats in the tmp buffer
  TILING_DATA_FIELD_DEF(uint32_t, oneTmpSize);         // floats in each tmp tensor A / B / C
  TILING_DATA_FIELD_DEF(uint32_t, firstTmpStartPos);   // float offsets of A, B, C in the tmp buffer
  TILING_DATA_FIELD_DEF(uint32_t, secondTmpStartPos);
  TILING_DATA_FIELD_DEF(uint32_t, thirdTmpStartPos);
  TILING_DATA_FIELD_DEF(uint32_t, loopRound);
  TILING_DATA_FIELD_DEF(uint32_t, inputRoundSize);
  TILING_DATA_FIELD_DEF(uint32_t, inputTailSize);
  TILING_DATA_FIELD_DEF(uint32_t, inputTailPos);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarRoundSize);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarTailSize);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarTailPos);
  TILING_DATA_FIELD_DEF(uint32_t, bshCurLength);
  TILING_DATA_FIELD_DEF(uint32_t, bsCurLength);
  TILING_DATA_FIELD_DEF(float, lastDimValueBack);  // 1 / originalHLength
END_TILING_DATA_DEF;

namespace optiling {
using ::DeepNormTiling;
}  // namespace optiling
namespace AscendC {
namespace tiling {
using ::DeepNormTiling;
}  // namespace tiling
}  // namespace AscendC
