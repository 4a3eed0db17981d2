// tiling_norm.h: the tiling structs of the LayerNorm family (asc-devkit include/adv_api/normalization/
// layernorm_tilingdata.h: LayerNormTiling 26 fields and LayerNormSeparateTiling 26 fields; layernorm_grad_tilingdata.h:
// LayerNormGradTiling 30 fields, lastDimValueBack / lastDimValueBackMulTwo holding float bits in uint32_t;
// layernorm_grad_beta_tilingdata.h: LayerNormGradBetaTiling 20 fields), global like SoftMaxTiling, with the optiling
// and AscendC::tiling aliases, so kernel code, host tiling code and a kernel-launch program's copy of the tiling bytes
// all see one layout. DeepNorm's struct lives in tiling_deepnorm.h.
#pragma once
#include <cstdint>

#include "register/tilingdata_base.h"

BEGIN_TILING_DATA_DEF(LayerNormTiling)
  TILING_DATA_FIELD_DEF(uint32_t, bLength);
  TILING_DATA_FIELD_DEF(uint32_t, sLength);
  TILING_DATA_FIELD_DEF(uint32_t, hLength);
  TILING_DATA_FIELD_DEF(uint32_t, originalHLength);
  TILING_DATA_FIELD_DEF(uint32_t, inputXSize);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarSize);
  TILING_DATA_FIELD_DEF(uint32_t, numberOfTmpBuf);
  TILING_DATA_FIELD_DEF(uint32_t, meanTmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, meanTmpTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBufSize);
  TILING_DATA_FIELD_DEF(uint32_t, oneTmpSize);
  TILING_DATA_FIELD_DEF(uint32_t, firstTmpStartPos);
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
  TILING_DATA_FIELD_DEF(float, lastDimValueBack);
END_TILING_DATA_DEF;

BEGIN_TILING_DATA_DEF(LayerNormSeparateTiling)
  TILING_DATA_FIELD_DEF(uint32_t, aLength);
  TILING_DATA_FIELD_DEF(uint32_t, rLength);
  TILING_DATA_FIELD_DEF(uint32_t, halfAddRepeatTimes);
  TILING_DATA_FIELD_DEF(uint32_t, rHeadLength);
  TILING_DATA_FIELD_DEF(float, k2Rec);
  TILING_DATA_FIELD_DEF(float, k2RRec);
  TILING_DATA_FIELD_DEF(uint32_t, inputXSize);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarSize);
  TILING_DATA_FIELD_DEF(uint32_t, numberOfTmpBuf);
  TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, varianceTmpTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBufSize);
  TILING_DATA_FIELD_DEF(uint32_t, oneTmpSize);
  TILING_DATA_FIELD_DEF(uint32_t, firstTmpStartPos);
  TILING_DATA_FIELD_DEF(uint32_t, secondTmpStartPos);
  TILING_DATA_FIELD_DEF(uint32_t, thirdTmpStartPos);
  TILING_DATA_FIELD_DEF(uint32_t, loopRound);
  TILING_DATA_FIELD_DEF(uint32_t, inputRoundSize);
  TILING_DATA_FIELD_DEF(uint32_t, inputTailSize);
  TILING_DATA_FIELD_DEF(uint32_t, inputTailPos);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarRoundSize);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarTailSize);
  TILING_DATA_FIELD_DEF(uint32_t, meanVarTailPos);
  TILING_DATA_FIELD_DEF(uint32_t, arCurLength);
  TILING_DATA_FIELD_DEF(uint32_t, aCurLength);
  TILING_DATA_FIELD_DEF(float, rValueBack);
END_TILING_DATA_DEF;

BEGIN_TILING_DATA_DEF(LayerNormGradTiling)
  TILING_DATA_FIELD_DEF(uint32_t, stackBufferSize);
  TILING_DATA_FIELD_DEF(uint32_t, bLength);
  TILING_DATA_FIELD_DEF(uint32_t, sLength);
  TILING_DATA_FIELD_DEF(uint32_t, hLength);
  TILING_DATA_FIELD_DEF(uint32_t, originalHLength);
  TILING_DATA_FIELD_DEF(uint32_t, oneCalSize);
  TILING_DATA_FIELD_DEF(uint32_t, nohCalSize);
  TILING_DATA_FIELD_DEF(uint32_t, loopNum);
  TILING_DATA_FIELD_DEF(uint32_t, tailSize);
  TILING_DATA_FIELD_DEF(uint32_t, nohTailSize);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensorBSHPos);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensorBSHSize);
  TILING_DATA_FIELD_DEF(uint32_t, pdVarTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, pdVarTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, pdMeanTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, pdMeanTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, x1TensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, x1TensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, x2TensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, x2TensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, x3TensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, x3TensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensorSize);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensor1Pos);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensor1Size);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensor2Pos);
  TILING_DATA_FIELD_DEF(uint32_t, tmpTensor2Size);
  TILING_DATA_FIELD_DEF(uint32_t, lastDimValueBack);
  TILING_DATA_FIELD_DEF(uint32_t, lastDimValueBackMulTwo);
END_TILING_DATA_DEF;

BEGIN_TILING_DATA_DEF(LayerNormGradBetaTiling)
  TILING_DATA_FIELD_DEF(uint32_t, stackBufferSize);
  TILING_DATA_FIELD_DEF(uint32_t, bLength);
  TILING_DATA_FIELD_DEF(uint32_t, sLength);
  TILING_DATA_FIELD_DEF(uint32_t, hLength);
  TILING_DATA_FIELD_DEF(uint32_t, originalHLength);
  TILING_DATA_FIELD_DEF(uint32_t, bshLength);
  TILING_DATA_FIELD_DEF(uint32_t, bsLength);
  TILING_DATA_FIELD_DEF(uint32_t, oneCalSize);
  TILING_DATA_FIELD_DEF(uint32_t, numberOfTmpBuf);
  TILING_DATA_FIELD_DEF(uint32_t, loopRound);
  TILING_DATA_FIELD_DEF(uint32_t, inputTailSize);
  TILING_DATA_FIELD_DEF(uint32_t, inputTailPos);
  TILING_DATA_FIELD_DEF(uint32_t, bsTailSize);
  TILING_DATA_FIELD_DEF(uint32_t, bshCurLength);
  TILING_DATA_FIELD_DEF(uint32_t, bsCurLength);
  TILING_DATA_FIELD_DEF(uint32_t, gammaTempTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, betaTempTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, inputDyTmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, resForGammaTmpTensorPos);
  TILING_DATA_FIELD_DEF(uint32_t, reserved);
END_TILING_DATA_DEF;

namespace optiling {
using ::LayerNormGradBetaTiling;
using ::LayerNormGradTiling;
using ::LayerNormSeparateTiling;
using ::LayerNormTiling;
}  // namespace optiling
namespace AscendC {
namespace tiling {
using ::LayerNormGradBetaTiling;
using ::LayerNormGradTiling;
using ::LayerNormSeparateTiling;
using ::LayerNormTiling;
}  // namespace tiling
}  // namespace AscendC
