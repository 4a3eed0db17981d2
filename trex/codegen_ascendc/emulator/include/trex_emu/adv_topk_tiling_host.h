// adv_topk_tiling_host.h: host tiling helpers of TopK
#pragma once
