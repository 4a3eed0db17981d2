// adv_deepnorm_tiling_host.h: DeepNorm's host tiling helpers (GetDeepNormMaxMinTmpSize, GetDeepNormTilingInfo)
#pragma once
