// adv_norm_tiling_host.h: host tiling helpers of the LayerNorm family and DeepNorm
#pragma once
