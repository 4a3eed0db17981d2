// tiling_deepnorm.h: DeepNorm's tiling struct (DeepNormTiling), kernel and host halves
#pragma once
