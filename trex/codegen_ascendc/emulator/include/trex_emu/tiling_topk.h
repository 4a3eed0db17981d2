// tiling_topk.h: TopkTiling struct
#pragma once
