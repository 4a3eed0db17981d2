// tiling_norm.h: tiling structs of the LayerNorm family and DeepNorm (kernel and host halves)
#pragma once
