// adv_norm.h: LayerNorm / LayerNormGrad / LayerNormGradBeta / LayerNorm (separate, NormalizeConfig) / DeepNorm advanced APIs (session 16)
#pragma once
